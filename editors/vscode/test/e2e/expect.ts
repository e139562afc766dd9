/** Polling assertions over Playwright locators (playwright-core has no `expect`). */

import type { Locator } from 'playwright-core';

const POLL_MS = 250;
const DEFAULT_TIMEOUT = 30_000;

async function poll(what: string, timeout: number, check: () => Promise<{ ok: boolean; seen: string }>): Promise<void> {
  const deadline = Date.now() + timeout;
  let seen = '(nothing)';
  for (;;) {
    try {
      const result = await check();
      seen = result.seen;
      if (result.ok) {
        return;
      }
    } catch (error) {
      seen = `(error: ${(error as Error).message.split('\n')[0]})`;
    }
    if (Date.now() > deadline) {
      throw new Error(`${what}: not as expected after ${timeout} ms; last seen: ${seen}`);
    }
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

async function texts(locator: Locator): Promise<string> {
  const all = await locator.allInnerTexts();
  return all.length ? all.join(' | ') : '(no element)';
}

export function expect(locator: Locator, what: string) {
  return {
    toContainText: (text: string, timeout = DEFAULT_TIMEOUT) =>
      poll(`${what} should contain ${JSON.stringify(text)}`, timeout, async () => {
        const seen = await texts(locator);
        return { ok: seen.replace(/\s+/g, ' ').includes(text), seen };
      }),
    notToContainText: (text: string, timeout = DEFAULT_TIMEOUT) =>
      poll(`${what} should not contain ${JSON.stringify(text)}`, timeout, async () => {
        const seen = await texts(locator);
        return { ok: !seen.replace(/\s+/g, ' ').includes(text), seen };
      }),
    toHaveText: (text: string, timeout = DEFAULT_TIMEOUT) =>
      poll(`${what} should read ${JSON.stringify(text)}`, timeout, async () => {
        const seen = await texts(locator);
        return { ok: seen.trim() === text, seen };
      }),
    toHaveCount: (count: number, timeout = DEFAULT_TIMEOUT) =>
      poll(`${what} should match ${count} element(s)`, timeout, async () => {
        const seen = await locator.count();
        return { ok: seen === count, seen: `${seen} matching` };
      }),
    toBeVisible: (timeout = DEFAULT_TIMEOUT) =>
      poll(`${what} should be visible`, timeout, async () => {
        const visible = await locator.first().isVisible();
        return { ok: visible, seen: visible ? 'visible' : `hidden (${await locator.count()} matching)` };
      }),
  };
}
