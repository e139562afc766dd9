/** End to end in a multi-root window of a real VS Code (code-server): one server for both
 * folders, the status item of the active editor's folder, a folder asked for when no
 * editor says which, previews titled by their folder, and the Handoff view grouped by
 * folder. The first folder has nothing of Handoff; the second has a committed revision. */

import { strict as assert } from 'assert';
import { existsSync, rmSync } from 'fs';
import * as path from 'path';
import { expect } from './expect';
import {
  commitByCli,
  docsShot,
  extensionRoot,
  handoffLog,
  markdownPreview,
  pickRow,
  runFromPalette,
  screenshot,
  Session,
  startSession,
  stopSession,
} from './harness';

describe('VS Code extension end to end, multi-root', function () {
  this.timeout(10 * 60_000);
  let session: Session | undefined;
  let revision = '';

  before(async function () {
    session = await startSession({
      vsix: path.join(extensionRoot, 'handoff-vscode.vsix'),
      secondFolder: 'site',
      before: (folders) => {
        revision = commitByCli(folders[1], 'default', 'the site pages drafted');
      },
    });
  });

  afterEach(async function () {
    if (this.currentTest?.state === 'failed' && session) {
      const file = await screenshot(session.page, `failed-multiroot-${this.currentTest.title.replace(/\W+/g, '-')}`).catch(() => '(no screenshot)');
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

  const item = () => session!.page.locator('.statusbar-item', { hasText: 'default · ' });

  async function open(name: string, folder: string): Promise<void> {
    const page = session!.page;
    await page.keyboard.press('Escape');
    await page.keyboard.press('Control+P');
    const quick = page.locator('.quick-input-widget .quick-input-box input');
    await quick.waitFor({ state: 'visible', timeout: 30_000 });
    await quick.fill(name);
    await pickRow(page, folder);
    await expect(page.locator('.tab.active', { hasText: name }), `${name} of ${folder}`).toBeVisible(30_000);
  }

  it('the status item is of the active editor\'s folder, named by it', async () => {
    const [first, second] = session!.folders;
    assert.equal(existsSync(path.join(first, '.handoff')), false);
    await open('notes.md', 'site');
    await expect(item(), 'the item in the second folder').toHaveText('site: default · @1 · pending', 90_000);
    await open('openapi.yaml', 'workspace');
    await expect(item(), 'the item in the first folder').toHaveText('workspace: default · no revision', 60_000);
    assert.equal(existsSync(path.join(first, '.handoff')), false, 'reading the first folder made no store');
    assert.ok(existsSync(path.join(second, '.handoff')));
    // One server for the window.
    assert.equal((handoffLog(session!.userData, Infinity).match(/Server ready: /g) ?? []).length, 1);
  });

  it('with no editor open a command asks for the folder, and its preview is titled by it', async () => {
    const page = session!.page;
    await runFromPalette(page, 'View: Close All Editors');
    await runFromPalette(page, 'Handoff: Show Continuity');
    const question = page.locator('.quick-input-widget .quick-input-box input[placeholder*="act on which workspace folder"]');
    await expect(question, 'the folder question').toBeVisible(30_000);
    await expect(page.locator('.quick-input-widget .monaco-list-row'), 'the two folders offered').toHaveCount(2, 30_000);
    await pickRow(page, 'site');
    await expect(page.locator('.tab', { hasText: '[Preview] site · continuity.md' }), 'the preview tab, titled by its folder').toBeVisible(60_000);
    const preview = markdownPreview(page);
    await expect(preview.locator('h1'), 'the continuity of the folder chosen').toHaveText('Work continuity: default', 60_000);
    await expect(preview.locator('body'), 'the second folder\'s revision').toContainText(revision, 30_000);
    await expect(item(), 'the item follows the folder acted on').toHaveText('site: default · @1 · pending', 30_000);
    // The answer is kept: the next command asks no more.
    await runFromPalette(page, 'Handoff: Show History');
    await expect(page.locator('.tab', { hasText: '[Preview] site · history.md' }), 'the history of the same folder').toBeVisible(60_000);
    await expect(markdownPreview(page).locator('body'), 'the history, of the second folder').toContainText(revision, 60_000);
  });

  it('the Handoff view has one tree per folder, each with its own scopes and revisions', async () => {
    const page = session!.page;
    await page.locator('.activitybar .action-label[aria-label^="Handoff"]').first().click();
    const rows = page.locator('.pane', { hasText: 'Scopes' }).first().locator('.monaco-list-row');
    await expect(rows.filter({ hasText: 'site' }).first(), 'the second folder').toBeVisible(60_000);
    await expect(rows.filter({ hasText: '@1 (head)' }).first(), 'the second folder\'s revision').toContainText('the site pages drafted', 60_000);
    await expect(rows.filter({ hasText: 'no revision' }).first(), 'the first folder\'s scope').toBeVisible(30_000);
    await docsShot(page, 'vscode-multi-root');
    // A click on the revision shows its handoff, asked of its folder.
    await rows.filter({ hasText: '@1 (head)' }).first().click();
    await expect(markdownPreview(page).locator('h1'), 'the handoff of the revision clicked').toHaveText(`Handoff ${revision}`, 60_000);
    await expect(page.locator('.tab', { hasText: `[Preview] site · ${revision.replace(/^handoff\//, '')}.md` }), 'its tab').toBeVisible(30_000);
  });
});
