/** End to end in a real VS Code (code-server) driven through Chromium: the packaged
 * extension starts the real server, shows the continuity report in the preview pane,
 * and shows a refusal in an error notification. */

import { strict as assert } from 'assert';
import * as path from 'path';
import { expect } from './expect';
import { readdirSync, readFileSync, rmSync } from 'fs';
import {
  extensionRoot,
  handoffCli,
  handoffLog,
  markdownPreview,
  pickRow,
  runFromPalette,
  screenshot,
  Session,
  startSession,
  stopSession,
  venvPython,
  waitForLog,
  writePiSession,
  writeWorkspaceSettings,
} from './harness';

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
    // The health check answered, and the log names the interpreter it came from.
    await waitForLog(session!.userData, 'Server ready: {"ok":true', 0);
    assert.match(handoffLog(session!.userData, Infinity), /interpreter from setting/);
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
    // A locked preview: it stays on the report when another Markdown editor becomes active.
    await expect(page.locator('.tab', { hasText: '[Preview] continuity.md' }), 'the locked preview tab').toBeVisible();
    await screenshot(page, 'vscode-continuity');
  });

  it('one preview per view: running the same report twice leaves one tab, in one group', async () => {
    const page = session!.page;
    const continuityTab = page.locator('.tab', { hasText: '[Preview] continuity.md' });
    await expect(continuityTab, 'the continuity preview tab').toHaveCount(1);
    const groups = await page.locator('.editor-group-container').count();
    await runFromPalette(page, 'Handoff: Show History');
    await expect(page.locator('.tab', { hasText: '[Preview] history.md' }), 'the history preview tab').toBeVisible(60_000);
    // Show Continuity twice more, from the status item (ready: its click runs Show
    // Continuity). Not from the palette: right after a reveal the preview's webview
    // reloads and can swallow the F1 that opens it.
    const item = page.locator('.statusbar-item', { hasText: `${SCOPE} · @1` });
    await item.click();
    await expect(page.locator('.tab.active', { hasText: '[Preview] continuity.md' }), 'the continuity tab, revealed').toBeVisible(30_000);
    await item.click();
    await expect(page.locator('.tab.active', { hasText: '[Preview] continuity.md' }), 'the continuity tab, revealed').toBeVisible(30_000);
    await expect(continuityTab, 'the continuity preview tab').toHaveCount(1);
    await expect(page.locator('.tab', { hasText: '[Preview] history.md' }), 'the history preview tab').toHaveCount(1);
    await expect(page.locator('.editor-group-container'), 'the editor groups').toHaveCount(groups);
    await expect(markdownPreview(page).locator('h1'), 'the revealed preview').toHaveText(`Work continuity: ${SCOPE}`, 30_000);
    // Let the revealed preview settle before the next test types into the palette.
    await page.waitForTimeout(1000);
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

  it('Generate from Agent Session opens an editable draft; Prepare from Draft and Commit make @2', async () => {
    const page = session!.page;
    writePiSession(session!.piSessions, session!.workspace);
    await runFromPalette(page, 'Handoff: Generate from Agent Session');
    await pickRow(page, /4 messages/);
    const focus = page.locator('.quick-input-widget .quick-input-box input');
    await expect(page.locator('.quick-input-widget'), 'the focus step').toContainText('Focus instructions');
    await focus.press('Enter');

    await expect(page.locator('.tab', { hasText: 'Untitled-1' }), 'the draft tab').toBeVisible(60_000);
    const editor = page.locator('.editor-instance .monaco-editor .view-lines').first();
    await expect(editor, 'the draft document').toContainText('## Goal', 30_000);
    await expect(page.locator('.notification-toast', { hasText: 'Handoff draft generated by extractive' }), 'the generated notification').toBeVisible();

    // The user edits the draft before preparing it.
    await editor.click();
    await page.keyboard.press('Control+End');
    await page.keyboard.type('\nEdited in VS Code before preparing.\n');

    const groups = await page.locator('.editor-group-container').count();
    await runFromPalette(page, 'Handoff: Prepare from Draft');
    const prepared = page.locator('.notification-toast', { hasText: 'is prepared, not committed' });
    await expect(prepared, 'the prepared notification').toBeVisible(60_000);
    await expect(markdownPreview(page).locator('body'), 'the prepared preview').toContainText('Edited in VS Code before preparing.', 30_000);
    // Titled by scope and a short digest, in the previews' group (no new group).
    await expect(page.locator('.tab', { hasText: `[Preview] ${SCOPE} · prepared ` }), 'the prepared preview tab').toBeVisible();
    await expect(page.locator('.editor-group-container'), 'the editor groups').toHaveCount(groups);
    await prepared.locator('.monaco-button', { hasText: 'Commit' }).click();

    await expect(page.locator('.notification-toast', { hasText: 'Committed handoff/' }), 'the commit notification').toContainText('@2 in openapi-client', 60_000);
    await expect(page.locator('.statusbar-item', { hasText: SCOPE }), 'the status bar').toContainText(`${SCOPE} · @2`, 60_000);
    assert.match(continuity(session!.workspace).head, /@2$/);
    await screenshot(page, 'vscode-generated-draft');
  });

  it('Start Session from Draft (the draft editor\'s title button) starts a pi session from the edited text, in a terminal', async () => {
    const page = session!.page;
    const edit = `Started from VS Code ${process.pid}-${Date.now()}.`;
    const sessionFiles = () => readdirSync(session!.piSessions, { recursive: true }).map(String).filter((f) => f.endsWith('.jsonl'));
    const before = sessionFiles();
    await runFromPalette(page, 'Handoff: Generate from Agent Session');
    await pickRow(page, /4 messages/);
    await expect(page.locator('.quick-input-widget'), 'the focus step').toContainText('Focus instructions');
    await page.locator('.quick-input-widget .quick-input-box input').press('Enter');

    await expect(page.locator('.tab', { hasText: 'Untitled-2' }), 'the second draft tab').toBeVisible(60_000);
    const toast = page.locator('.notification-toast', { hasText: 'Edit it, then Start Session from Draft or Prepare from Draft' });
    await expect(toast, 'the generated notification').toBeVisible(30_000);
    await expect(toast.locator('.monaco-button', { hasText: 'Start Session' }), 'its Start Session button').toBeVisible();
    const group = page.locator('.editor-group-container.active');
    const editor = group.locator('.monaco-editor .view-lines').first();
    await expect(editor, 'the draft document').toContainText('## Goal', 30_000);
    await editor.click();
    await page.keyboard.press('Control+End');
    await page.keyboard.type(`\n${edit}\n`);

    // The button the draft context key shows in the draft's editor title.
    const button = group.locator('.editor-actions .action-label[aria-label*="Start Session from Draft"]');
    await expect(button, 'the Start Session from Draft button').toBeVisible(30_000);
    await screenshot(page, 'vscode-draft-start-button');
    await button.click();
    await expect(page.locator('.quick-input-widget'), 'the agent pick').toContainText('default · the agent of the source session');
    await pickRow(page, /^pi/);

    const started = page.locator('.notification-toast', { hasText: 'from the draft in the terminal "Handoff: pi"' });
    await expect(started, 'the started notification').toBeVisible(60_000);
    await expect(page.locator('.part.panel'), 'the terminal panel').toContainText('Handoff: pi', 30_000);
    await screenshot(page, 'vscode-started-session');

    // The new pi session holds the text as edited in the editor.
    const created = sessionFiles().filter((f) => !before.includes(f));
    assert.equal(created.length, 1, `one new pi session file: ${created.join(', ')}`);
    const text = readFileSync(path.join(session!.piSessions, created[0]), 'utf8');
    assert.ok(text.includes(edit), 'the new session holds the edit');
    assert.equal(JSON.parse(text.split('\n')[0]).type, 'session');

    // Show Session Lineage: the start, from the edited draft, with its new session.
    await runFromPalette(page, 'Handoff: Show Session Lineage');
    const preview = markdownPreview(page);
    await expect(preview.locator('h1'), 'the lineage heading').toHaveText(`Session lineage: ${SCOPE}`, 60_000);
    await expect(preview.locator('table').first(), 'the starts table').toContainText('edited draft of generation', 30_000);
    await expect(preview.locator('table').first(), 'the starts table').toContainText(path.basename(created[0]));
  });

  it('Generate shows a progress notification whose Cancel stops a slow provider and writes nothing', async () => {
    const page = session!.page;
    const marker = `handoff-e2e-slow-${process.pid}-${Date.now()}`;
    const pushed = await waitForLog(session!.userData, 'Settings pushed to the server.', -1, 0).catch(() => 0);
    writeWorkspaceSettings(session!.workspace, SCOPE, {
      'handoff.generation.provider': 'command',
      'handoff.generation.command.argv': [venvPython(), '-c', `import sys, time; sys.stdin.read(); time.sleep(120)  # ${marker}`],
    });
    await waitForLog(session!.userData, 'Settings pushed to the server.', pushed);
    const sessionFiles = () => readdirSync(session!.piSessions, { recursive: true }).map(String).sort();
    const filesBefore = sessionFiles();
    const headBefore = continuity(session!.workspace).head;
    // Is the provider subprocess (its command line carries the marker) alive?
    const running = () =>
      readdirSync('/proc')
        .filter((pid) => /^\d+$/.test(pid) && Number(pid) !== process.pid)
        .some((pid) => {
          try {
            return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(marker);
          } catch {
            return false; // exited meanwhile
          }
        });

    await runFromPalette(page, 'Handoff: Generate from Agent Session');
    await pickRow(page, /4 messages/);
    await expect(page.locator('.quick-input-widget'), 'the focus step').toContainText('Focus instructions');
    await page.locator('.quick-input-widget .quick-input-box input').press('Enter');

    const progress = page.locator('.notification-toast', { hasText: /Generating (a )?handoff/ });
    await expect(progress, 'the progress notification').toBeVisible(30_000);
    for (let i = 0; !running(); i++) {
      assert.ok(i < 120, 'the slow provider never started');
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    await screenshot(page, 'vscode-generate-progress');
    const cancelledAt = Date.now();
    await progress.locator('.monaco-button', { hasText: 'Cancel' }).click();

    const cancelled = page.locator('.notification-toast', { hasText: 'cancelled' });
    await expect(cancelled, 'the cancellation notification').toBeVisible(20_000);
    await expect(cancelled.locator('.codicon-info'), 'an information icon, not an error').toBeVisible();
    for (let i = 0; running(); i++) {
      assert.ok(i < 40, 'the provider subprocess outlived the cancel by 10 s');
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    assert.ok(Date.now() - cancelledAt < 20_000);
    assert.deepEqual(sessionFiles(), filesBefore, 'a cancelled generation writes no session file');
    assert.equal(continuity(session!.workspace).head, headBefore);
  });
});
