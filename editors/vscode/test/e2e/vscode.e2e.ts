/** End to end in a real VS Code (code-server) driven through Chromium: the packaged
 * extension starts the real server, shows the continuity report in the preview pane,
 * and shows a refusal in an error notification. */

import { strict as assert } from 'assert';
import { rmSync } from 'fs';
import * as path from 'path';
import { expect } from './expect';
import { extensionRoot, handoffCli, handoffLog, markdownPreview, pickRow, runFromPalette, screenshot, Session, startSession, stopSession } from './harness';

const SCOPE = 'openapi-client';

function continuity(workspace: string): { totalEvents: number; transfer: string; head: string } {
  const out = handoffCli(['--workspace', workspace, '--scope', SCOPE, 'call', 'handoff.report', '{"kind":"continuity"}']);
  return JSON.parse(out).data;
}

describe('VS Code extension end to end', function () {
  this.timeout(15 * 60_000);
  let session: Session | undefined;
  let head = '';

  before(async function () {
    session = await startSession({ vsix: path.join(extensionRoot, 'handoff-vscode.vsix'), scope: SCOPE });
    head = continuity(session.workspace).head;
    assert.match(head, /^handoff\/[A-Za-z0-9_-]+@1$/);
  });

  afterEach(async function () {
    if (this.currentTest?.state === 'failed' && session) {
      const file = await screenshot(session.page, `failed-${this.currentTest.title.replace(/\W+/g, '-')}`).catch(() => '(no screenshot)');
      console.error(`\nscreenshot: ${file}\ncode-server output:\n${session.output.join('').slice(-4000)}\n${handoffLog(session.userData)}`);
    }
  });

  after(async function () {
    const failed = this.test?.parent?.tests.some((t) => t.state === 'failed');
    await stopSession(session);
    if (session && !failed) {
      rmSync(session.root, { recursive: true, force: true });
    }
  });

  it('starts the server and shows scope, head and transfer in the status bar', async () => {
    const page = session!.page;
    const item = page.locator('.statusbar-item', { hasText: `${SCOPE} · @1` });
    await expect(item, 'the Handoff status bar item').toContainText('accepted', 120_000);
  });

  it('"Handoff: Show Continuity" opens the continuity report in the preview pane', async () => {
    const page = session!.page;
    await runFromPalette(page, 'Handoff: Show Continuity');
    const preview = markdownPreview(page);
    await expect(preview.locator('h1'), 'the preview heading').toHaveText(`Work continuity: ${SCOPE}`, 60_000);
    // The report's own words, rendered as Markdown tables.
    await expect(preview.locator('table').nth(1), 'the events table').toContainText('Work Contract: complete the OpenAPI client update');
    await expect(preview.locator('table').nth(1), 'the events table').toContainText('Task Outcome succeeded: contract tests pass against the regenerated client');
    await expect(preview.locator('table').first(), 'the summary table').toContainText(head);
    await expect(page.locator('.tab', { hasText: 'continuity.md' }), 'the preview tab').toBeVisible();
    await screenshot(page, 'vscode-continuity');
  });

  it('a refused acknowledgement shows the server message in an error notification and writes nothing', async () => {
    const page = session!.page;
    const before = continuity(session!.workspace);
    await runFromPalette(page, 'Handoff: Acknowledge');
    await pickRow(page, 'head revision');
    await pickRow(page, /^accepted/);
    // The four checks as a multi-select: tick two of them, then OK.
    await pickRow(page, 'Evidence available');
    await pickRow(page, 'Authorization confirmed');
    await page.locator('.quick-input-widget .monaco-button', { hasText: 'OK' }).click();
    const note = page.locator('.quick-input-widget .quick-input-box input');
    await note.waitFor({ state: 'visible' });
    await expect(page.locator('.quick-input-widget'), 'the note step').toContainText('note');
    await note.press('Enter');

    const toast = page.locator('.notifications-toasts .notification-toast', { hasText: "Cannot record 'accepted'" });
    await expect(toast, 'the error notification').toContainText(
      `Cannot record 'accepted' for ${head}: not confirmed: live_state_confirmed, capability_confirmed.`,
      60_000,
    );
    await expect(toast.locator('.codicon-error'), 'the error icon').toBeVisible();
    await toast.hover();
    await toast.locator('.codicon-notifications-expand').click({ timeout: 5000 }).catch(() => undefined);
    await screenshot(page, 'vscode-refusal');
    const after = continuity(session!.workspace);
    assert.equal(after.totalEvents, before.totalEvents, 'a refusal writes nothing');
  });

  it('a recorded acknowledgement refreshes the open preview and the status bar', async () => {
    const page = session!.page;
    await runFromPalette(page, 'Handoff: Acknowledge');
    await pickRow(page, 'head revision');
    await pickRow(page, /^needs_clarification/);
    await page.locator('.quick-input-widget .monaco-button', { hasText: 'OK' }).click();
    const note = page.locator('.quick-input-widget .quick-input-box input');
    await note.waitFor({ state: 'visible' });
    await note.fill('which API version is current?');
    await note.press('Enter');

    await expect(page.locator('.notifications-toasts .notification-toast', { hasText: 'Recorded needs_clarification' }), 'the receipt notification').toBeVisible(60_000);
    await expect(page.locator('.statusbar-item', { hasText: `${SCOPE} · @1` }), 'the status bar').toContainText('needs clarification', 60_000);
    const preview = markdownPreview(page);
    await expect(preview.locator('table').nth(1), 'the refreshed events table').toContainText('Acknowledgement needs_clarification', 60_000);
    assert.equal(continuity(session!.workspace).transfer, 'needs_clarification');
    await screenshot(page, 'vscode-refreshed');
  });
});
