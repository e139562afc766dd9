/** End to end in a real VS Code (code-server) driven through Chromium, as a new user
 * meets the extension: the packaged .vsix installed into a profile with no Handoff
 * setting, a folder without .handoff/, and the whole lifecycle from the palette —
 * Generate → edit → Prepare → Commit → Continue → Acknowledge → Outcome → Continuity —
 * with the status item's text asserted at each state, cited lines opened selected from
 * a preview, a cited record shown, one preview per report, and the screenshots for
 * docs/vscode.md. */

import { strict as assert } from 'assert';
import { existsSync, readdirSync, readFileSync, rmSync } from 'fs';
import * as path from 'path';
import { expect } from './expect';
import {
  commitByCli,
  docsShot,
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

/** The scope with no setting in a folder that is not a git repository. */
const SCOPE = 'default';

function continuity(workspace: string): { totalEvents: number; transfer: string; head: string | null; outcome: string } {
  const out = handoffCli(['--workspace', workspace, '--scope', SCOPE, 'call', 'handoff.report', '{"kind":"continuity"}']);
  return JSON.parse(out).data;
}

/** What the ready status item reads for the workspace's continuity right now. */
function readyText(workspace: string): string {
  const data = continuity(workspace);
  const head = data.head ? data.head.replace(/^handoff\/[^@]*/, '') : 'no revision';
  return `${SCOPE} · ${head}${data.transfer === 'none' ? '' : ` · ${data.transfer.replace(/_/g, ' ')}`}`;
}

/** The tab of a draft file the server saved: `<time>-<generation>.md`. */
const DRAFT_FILE = /\d{8}T\d{6}Z-[0-9a-f]+\.md/;

describe('VS Code extension end to end', function () {
  this.timeout(15 * 60_000);
  let session: Session | undefined;
  let revision = '';

  before(async function () {
    session = await startSession({ vsix: path.join(extensionRoot, 'handoff-vscode.vsix') });
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

  const status = () => session!.page.locator('.statusbar-item', { hasText: `${SCOPE} · ` });

  it('installs with no setting into a folder without .handoff/: the status item appears once the folder has an agent session (no store made), and the bundled server runs', async () => {
    const page = session!.page;
    assert.equal(existsSync(path.join(session!.workspace, '.handoff')), false);
    assert.equal(existsSync(path.join(session!.workspace, '.vscode')), false);
    const userSettings = readFileSync(path.join(session!.userData, 'User', 'settings.json'), 'utf8');
    assert.doesNotMatch(userSettings, /handoff\./, 'the profile has no Handoff setting');
    // No .handoff/ and no agent session of the folder: the server looked, and no item.
    await waitForLog(session!.userData, 'no agent session in this window', 0, 90_000);
    await expect(status(), 'the status item with nothing of Handoff in the folder').toHaveCount(0);

    // An agent session recorded in the folder: the item appears with no command run, and
    // asking the server about the folder's sessions made no store.
    writePiSession(session!.piSessions, session!.workspace);
    await expect(status(), 'the status item once the folder has an agent session').toHaveText('default · no revision', 60_000);
    assert.equal(existsSync(path.join(session!.workspace, '.handoff')), false, 'no store made by looking for sessions');
    await runFromPalette(page, 'Handoff: Generate from Agent Session');
    // The session pick: agent · messages · time as the description, the prompt as detail.
    const row = page.locator('.quick-input-widget .monaco-list-row', { hasText: /4 messages/ }).first();
    await expect(row, 'the session row').toContainText('pi · 4 messages', 120_000);
    // Ready: scope · head (none yet).
    await expect(status(), 'the ready status item').toHaveText('default · no revision', 60_000);
    await waitForLog(session!.userData, 'Server ready: {"ok":true', 0);
    assert.match(handoffLog(session!.userData, Infinity), /interpreter from path, lsp_server [\d.]+ from the bundle/);
    await docsShot(page, 'vscode-session-pick');
    await row.click();
    await expect(page.locator('.quick-input-widget'), 'the focus step').toContainText('Focus instructions');
    await page.locator('.quick-input-widget .quick-input-box input').press('Enter');
    // The draft the server saved, opened as the file it is (checked as it is edited).
    await expect(page.locator('.tab.active', { hasText: DRAFT_FILE }), 'the draft tab').toBeVisible(60_000);
    await expect(page.locator('.notification-toast', { hasText: 'Handoff draft generated by extractive' }), 'the generated notification').toBeVisible(30_000);
  });

  it('edit → Prepare from Draft → Commit: the prepared preview, then @1 in the status item and the heading', async () => {
    const page = session!.page;
    const editor = page.locator('.editor-instance .monaco-editor .view-lines').first();
    await expect(editor, 'the draft document').toContainText('## Goal', 30_000);
    await editor.click();
    await page.keyboard.press('Control+End');
    await page.keyboard.type('\nEdited in VS Code before preparing.\n');
    await docsShot(page, 'vscode-generated-draft');

    const groups = await page.locator('.editor-group-container').count();
    await runFromPalette(page, 'Handoff: Prepare from Draft');
    const prepared = page.locator('.notification-toast', { hasText: 'is prepared, not committed' });
    await expect(prepared, 'the prepared notification').toBeVisible(60_000);
    const preview = markdownPreview(page);
    await expect(preview.locator('h1'), 'the prepared heading').toHaveText('Handoff (prepared, not committed)', 30_000);
    await expect(preview.locator('body'), 'the prepared preview').toContainText('Edited in VS Code before preparing.', 30_000);
    await expect(page.locator('.tab', { hasText: `[Preview] ${SCOPE} · prepared ` }), 'the prepared preview tab').toBeVisible();
    await expect(page.locator('.editor-group-container'), 'the editor groups').toHaveCount(groups + 1);
    await docsShot(page, 'vscode-prepared');
    await prepared.locator('.monaco-button', { hasText: 'Commit' }).click();

    const committed = page.locator('.notification-toast', { hasText: 'Committed handoff/' });
    await expect(committed, 'the commit notification').toContainText(`@1 in ${SCOPE}`, 60_000);
    revision = continuity(session!.workspace).head ?? '';
    assert.match(revision, /^handoff\/[A-Za-z0-9_-]+@1$/);
    await expect(status(), 'the status item after the commit').toHaveText(readyText(session!.workspace), 60_000);
    assert.match(readyText(session!.workspace), /^default · @1/);
    // The open prepared preview becomes the revision's: its tab is titled by the
    // revision, not by the prepared digest, and says no "not committed" any more.
    const id = revision.replace(/^handoff\//, '');
    await expect(page.locator('.tab', { hasText: `[Preview] ${id}.md` }), 'the revision\'s tab').toBeVisible(60_000);
    await expect(page.locator('.tab', { hasText: `[Preview] ${SCOPE} · prepared ` }), 'the prepared tab, gone').toHaveCount(0, 30_000);
    await expect(markdownPreview(page).locator('h1'), 'the heading after the commit').toHaveText(`Handoff ${revision}`, 60_000);
  });

  it('Continue from the latest revision: a pane titled latest, cited files as links, the status item', async () => {
    const page = session!.page;
    await runFromPalette(page, 'Handoff: Continue');
    await pickRow(page, 'Latest revision');
    const preview = markdownPreview(page);
    // The server's continue view: its title, then the handoff report as a section. The
    // pane is the scope's latest (titled so; it follows the head when a revision is
    // committed), not pinned to the revision it shows now.
    await expect(preview.locator('h1'), 'the continued revision').toHaveText(`Continue (latest) → ${revision}`, 60_000);
    await expect(page.locator('.tab', { hasText: `[Preview] ${SCOPE} · continue latest.md` }), 'the latest tab').toHaveCount(1);
    await expect(preview.locator('h2').first(), 'the handoff itself').toHaveText(`Handoff ${revision}`, 30_000);
    await expect(page.locator('.notification-toast', { hasText: 'Continuing from' }), 'the continue notification').toBeVisible(30_000);
    // Cited lines are anchors the extension follows (relative to the preview, to a
    // stand-in path of its own that names the file and the lines), not raw
    // [path](file://...) text.
    const link = preview.locator('a', { hasText: '.handoff/generated/' }).first();
    await expect(link, 'a cited file link').toBeVisible(30_000);
    const target = (await link.getAttribute('data-href')) ?? '';
    assert.match(target, /^(\.\.\/)+open\/[A-Za-z0-9_-]+\/[^/]+\.md%20%C2%B7%20lines?%20[0-9]+/);
    assert.equal(await link.getAttribute('href'), target);
    await expect(preview.locator('body'), 'the preview text').toContainText('.handoff/generated/');
    assert.doesNotMatch(await preview.locator('body').innerText(), /\]\(file:/);
    await expect(status(), 'the status item after Continue').toHaveText(readyText(session!.workspace), 30_000);
    await docsShot(page, 'vscode-continue');
  });

  it('Acknowledge accepted: missing checks are named before the note; ticking them records accepted', async () => {
    const page = session!.page;
    await runFromPalette(page, 'Handoff: Acknowledge');
    await pickRow(page, 'the handoff you continued from');
    await pickRow(page, /^accepted/);
    await pickRow(page, 'Evidence available');
    await pickRow(page, 'Authorization confirmed');
    await page.locator('.quick-input-widget .monaco-button', { hasText: 'OK' }).click();
    const widget = page.locator('.quick-input-widget');
    await expect(widget, 'the missing checks step').toContainText('accepting needs all four checks', 30_000);
    await expect(widget, 'the missing checks step').toContainText('missing: live state confirmed, capability confirmed', 30_000);
    await docsShot(page, 'vscode-ack-missing-checks');
    await pickRow(page, 'Tick the checks again');
    await pickRow(page, 'Live state confirmed');
    await pickRow(page, 'Capability confirmed');
    await page.locator('.quick-input-widget .monaco-button', { hasText: 'OK' }).click();
    const note = page.locator('.quick-input-widget .quick-input-box input');
    await expect(widget, 'the note step').toContainText('note', 30_000);
    await note.fill('evidence read, workspace checked');
    await note.press('Enter');
    await expect(page.locator('.notification-toast', { hasText: 'Acknowledged handoff/' }), 'the receipt notification').toBeVisible(60_000);
    assert.equal(continuity(session!.workspace).transfer, 'accepted');
    await expect(status(), 'the status item after the acknowledgement').toHaveText(`${SCOPE} · @1 · accepted`, 60_000);
  });

  it('Record Outcome with a check and the receipt, then Continuity: the events, one preview per report', async () => {
    const page = session!.page;
    await runFromPalette(page, 'Handoff: Record Outcome');
    await pickRow(page, /^succeeded/);
    const input = page.locator('.quick-input-widget .quick-input-box input');
    await expect(page.locator('.quick-input-widget'), 'the summary step').toContainText('summary', 30_000);
    await input.fill('contract tests pass against the regenerated client');
    await input.press('Enter');
    await expect(page.locator('.quick-input-widget'), 'the checks step').toContainText('checks (none yet)', 30_000);
    await input.fill('contract tests = passed');
    await input.press('Enter');
    await expect(page.locator('.quick-input-widget'), 'the checks step, with the item shown').toContainText('checks (1: contract tests = passed)', 30_000);
    await input.press('Enter');
    await pickRow(page, 'accepted acknowledgement of handoff/');
    await expect(page.locator('.notification-toast', { hasText: 'Task Outcome (succeeded) recorded' }), 'the outcome notification').toBeVisible(60_000);
    await expect(status(), 'the status item after the outcome').toHaveText(readyText(session!.workspace), 60_000);

    await runFromPalette(page, 'Handoff: Show Continuity');
    const preview = markdownPreview(page);
    await expect(preview.locator('h1'), 'the continuity heading').toHaveText(`Work continuity: ${SCOPE}`, 60_000);
    const events = preview.locator('table').nth(1);
    await expect(events, 'the events table').toContainText('Acknowledgement accepted');
    await expect(events, 'the events table').toContainText('Task Outcome succeeded: contract tests pass against the regenerated client');
    // The events table fits the pane (the extension's preview style wraps long cells).
    // (The page's own globals: the test is compiled without the DOM types.)
    const edges = await events.evaluate((table: { getBoundingClientRect(): { right: number }; ownerDocument: { documentElement: { clientWidth: number } } }) => ({
      right: table.getBoundingClientRect().right,
      pane: table.ownerDocument.documentElement.clientWidth,
    }));
    assert.ok(edges.right <= edges.pane + 1, `the events table runs past the preview's edge: ${JSON.stringify(edges)}`);
    const continuityTab = page.locator('.tab', { hasText: '[Preview] continuity.md' });
    await expect(continuityTab, 'the continuity tab').toHaveCount(1);
    await docsShot(page, 'vscode-continuity');

    // The same report twice more (from the status item: its click runs Show Continuity)
    // leaves one tab, in the same groups.
    const groups = await page.locator('.editor-group-container').count();
    await runFromPalette(page, 'Handoff: Show History');
    await expect(page.locator('.tab', { hasText: '[Preview] history.md' }), 'the history tab').toBeVisible(60_000);
    await status().click();
    await expect(page.locator('.tab.active', { hasText: '[Preview] continuity.md' }), 'the continuity tab, revealed').toBeVisible(30_000);
    await status().click();
    await expect(page.locator('.tab.active', { hasText: '[Preview] continuity.md' }), 'the continuity tab, revealed').toBeVisible(30_000);
    await expect(continuityTab, 'the continuity tab').toHaveCount(1);
    await expect(page.locator('.tab', { hasText: '[Preview] history.md' }), 'the history tab').toHaveCount(1);
    await expect(page.locator('.editor-group-container'), 'the editor groups').toHaveCount(groups);
    await page.waitForTimeout(1000);
  });

  it('the Handoff view: the scope with its revision, acknowledged and covered; the draft; the session; Show Handoff from a revision', async () => {
    const page = session!.page;
    await page.locator('.activitybar .action-label[aria-label^="Handoff"]').first().click();
    const view = page.locator('.pane', { hasText: 'Scopes' }).first();
    const rows = view.locator('.monaco-list-row');
    await expect(rows.filter({ hasText: `${SCOPE}` }).first(), 'the current scope').toContainText('current · head @1', 60_000);
    const revision = rows.filter({ hasText: '@1 (head)' }).first();
    await expect(revision, 'the revision, with its acknowledgement and outcome').toContainText('accepted · outcome recorded', 60_000);
    await expect(rows.filter({ hasText: DRAFT_FILE }).first(), 'the draft Generate saved').toBeVisible(30_000);
    await expect(rows.filter({ hasText: 'pi · 4 messages' }).first(), 'the agent session').toBeVisible(30_000);
    // A click on the revision shows its handoff.
    await revision.click();
    const preview = markdownPreview(page);
    await expect(preview.locator('h1'), 'the handoff of the revision clicked').toContainText('Handoff handoff/', 60_000);
    await page.locator('.activitybar .action-label[aria-label^="Explorer"]').first().click();
  });

  it('a latest pane follows the head, an exact one stays on its revision; every scope opens to its revisions in the view, and a record its handoff cites opens from its preview', async () => {
    const page = session!.page;
    const id = revision.replace(/^handoff\//, '');
    // The exact pane of @1, from the palette (one tab per view and revision).
    await runFromPalette(page, 'Handoff: Continue');
    await pickRow(page, 'head revision');
    await expect(markdownPreview(page).locator('h1'), 'the exact pane').toHaveText(`Continue (exact) → ${revision}`, 60_000);
    const exactTab = page.locator('.tab', { hasText: `[Preview] ${id} · continue.md` });
    await expect(exactTab, 'the exact tab').toHaveCount(1);
    // @2 committed by another process (the CLI): the server announces it.
    const second = commitByCli(session!.workspace, SCOPE, 'contract tests written');
    assert.equal(second, revision.replace(/@1$/, '@2'));
    const latestTab = page.locator('.tab', { hasText: `[Preview] ${SCOPE} · continue latest.md` });
    await expect(latestTab, 'one latest tab').toHaveCount(1);
    await latestTab.click();
    await expect(markdownPreview(page).locator('h1'), 'the latest pane, on the new head').toHaveText(`Continue (latest) → ${second}`, 60_000);
    await exactTab.click();
    await expect(markdownPreview(page).locator('h1'), 'the exact pane, still on its revision').toHaveText(`Continue (exact) → ${revision}`, 60_000);
    await expect(markdownPreview(page).locator('body'), 'the exact pane says the head moved').toContainText(`it is now ${second}`, 30_000);
    // Continue → Latest again reuses the latest tab.
    await runFromPalette(page, 'Handoff: Continue');
    await pickRow(page, 'Latest revision');
    await expect(page.locator('.notification-toast', { hasText: `Continuing from ${second}` }).first(), 'the continue notification').toBeVisible(30_000);
    await expect(latestTab, 'still one latest tab').toHaveCount(1);

    // A second scope with a revision of its own: the view opens it when expanded.
    const other = commitByCli(session!.workspace, 'docs', 'the API docs half written');
    await page.locator('.activitybar .action-label[aria-label^="Handoff"]').first().click();
    const view = page.locator('.pane', { hasText: 'Scopes' }).first();
    const rows = view.locator('.monaco-list-row');
    await expect(rows.filter({ hasText: `${SCOPE}` }).first(), 'the current scope').toContainText('current · head @2', 60_000);
    await expect(rows.filter({ hasText: '@2 (head)' }).first(), 'the new head, not acknowledged').toContainText('not acknowledged', 60_000);
    const docs = rows.filter({ hasText: 'head @1' }).first();
    await expect(docs, 'the other scope, closed').toContainText('head @1', 60_000);
    await docs.click();
    const docsRevision = rows.filter({ hasText: 'the API docs half written' }).first();
    await expect(docsRevision, 'the other scope\'s revision').toContainText('@1 (head)', 60_000);
    await expect(docsRevision, 'its acknowledgement state').toContainText('not acknowledged', 30_000);
    await runFromPalette(page, 'Notifications: Clear All Notifications', { keepFocus: true });
    // The pointer off the tree: no hover over the rows (the screenshot, the click).
    await page.mouse.move(900, 700);
    await page.waitForTimeout(500);
    await docsShot(page, 'vscode-handoff-view');
    // A click shows that scope's handoff (asked in its scope).
    await docsRevision.click();
    await expect(markdownPreview(page).locator('h1'), 'the other scope\'s handoff').toHaveText(`Handoff ${other}`, 60_000);
    await page.locator('.activitybar .action-label[aria-label^="Explorer"]').first().click();

    // Its evidence cites the scope's Work Contract: a click shows that record, in that
    // scope, in a preview of its own (the handoff's stays open).
    const record = markdownPreview(page).locator('li', { hasText: 'evidence:' }).locator('a:has(code)', { hasText: /^source\// }).first();
    await expect(record, 'the cited record, a link').toBeVisible(30_000);
    const ref = await record.innerText();
    await record.click();
    const shown = markdownPreview(page);
    await expect(shown.locator('h1'), 'the record\'s view').toHaveText(`Source ${ref}`, 60_000);
    await expect(shown.locator('table').first(), 'the record\'s facts').toContainText('Work Contract', 30_000);
    await expect(shown.locator('table').first(), 'the record\'s scope').toContainText('docs');
    await expect(shown.locator('body'), 'what the record says').toContainText('Work Contract: the API docs half written', 30_000);
    await expect(page.locator('.tab.active', { hasText: `[Preview] ${ref.replace('/', '-')}.md` }), 'the record\'s tab').toBeVisible(30_000);
    await expect(page.locator('.tab', { hasText: `[Preview] ${other.replace(/^handoff\//, '')}.md` }), 'the handoff\'s tab, still open').toHaveCount(1);
    await expect(page.locator('.tab', { hasText: ref.replace('/', ' ') }), 'no stand-in tab left').toHaveCount(0);
    await docsShot(page, 'vscode-source-record');
  });

  it('evidence is checked as it is typed, and cited lines open from the preview selected', async () => {
    const page = session!.page;
    // A hand-written note (not from Generate): Prepare from Draft asks for the draft.
    await page.keyboard.press('Escape');
    await page.keyboard.press('F1');
    const quick = page.locator('.quick-input-widget .quick-input-box input');
    await quick.waitFor({ state: 'visible', timeout: 30_000 });
    await quick.fill('notes.md');
    await pickRow(page, 'notes.md');
    await expect(page.locator('.tab.active', { hasText: 'notes.md' }), 'the note').toBeVisible(30_000);
    // (No click into the workbench first: that would focus the draft's editor.)
    await runFromPalette(page, 'Handoff: Prepare from Draft', { keepFocus: true });
    const widget = page.locator('.quick-input-widget');
    await expect(widget, 'the objective step').toContainText('objective', 30_000);
    await quick.fill('Regenerate the pets client and keep the contract tests green');
    await quick.press('Enter');
    await expect(widget, 'the state step').toContainText('state', 30_000);
    await quick.fill('list_pets regenerated from openapi.yaml');
    await quick.press('Enter');
    await expect(widget, 'the evidence step').toContainText('evidence', 30_000);
    await quick.fill('client/missing.py');
    await expect(widget.locator('.quick-input-message'), 'the evidence check').toContainText('client/missing.py is not in the workspace folder', 30_000);
    await docsShot(page, 'vscode-evidence-check');
    await quick.fill('client/pets_client.py:4-6');
    await quick.press('Enter');
    await pickRow(page, /^continuable/);
    await expect(widget, 'the next actions step').toContainText('next actions', 30_000);
    await quick.fill('run the contract tests :: client/pets_client.py');
    await quick.press('Enter');
    await expect(widget, 'the next actions step').toContainText('(1: run the contract tests', 30_000);
    await quick.press('Enter');

    await expect(page.locator('.notification-toast', { hasText: 'is prepared, not committed' }).first(), 'the prepared notification').toBeVisible(60_000);
    const preview = markdownPreview(page);
    // The state's evidence, lines 4–6 (the next action cites the whole file).
    const link = preview.locator('a', { hasText: 'client/pets_client.py' }).first();
    await expect(link, 'the cited file link').toBeVisible(60_000);
    await expect(preview.locator('li', { has: link }).first(), 'the cited lines').toContainText('(lines 4–6)');
    await link.click();
    await expect(page.locator('.tab.active', { hasText: 'pets_client.py' }), 'the cited file, opened').toBeVisible(30_000);
    // Lines 4–6 selected (24 + 1 + 19 + 1 + 13 characters), the cursor on line 4.
    await expect(page.locator('.statusbar-item', { hasText: /Ln 4, Col 1 \(58 selected\)/ }), 'the cited lines, selected').toBeVisible(30_000);
    await expect(page.locator('.tab', { hasText: 'lines 4–6' }), 'no stand-in tab left').toHaveCount(0);
    await docsShot(page, 'vscode-evidence-link');
  });

  it('a HANDOFF.md is checked as it is opened: a stale claim is a warning on its line, with its verdict on hover', async () => {
    const page = session!.page;
    // The workspace has a hand-written HANDOFF.md from the start (harness.prepareWorkspace).
    await page.keyboard.press('Escape');
    await page.keyboard.press('F1');
    const quick = page.locator('.quick-input-widget .quick-input-box input');
    await quick.waitFor({ state: 'visible', timeout: 30_000 });
    await quick.fill('HANDOFF.md');
    await pickRow(page, 'HANDOFF.md');
    await expect(page.locator('.tab.active', { hasText: 'HANDOFF.md' }), 'the handoff document').toBeVisible(30_000);
    const squiggle = page.locator('.monaco-editor .squiggly-warning').first();
    await expect(squiggle, 'the stale claim, underlined').toBeVisible(60_000);
    // The cursor on the claim, then the editor's own hover (as Ctrl+K Ctrl+I shows it).
    await page.locator('.monaco-editor .view-lines span', { hasText: 'client/gone.py' }).first().click();
    await runFromPalette(page, 'Show or Focus Hover', { keepFocus: true });
    const hover = page.locator('.monaco-hover:visible').first();
    await expect(hover, 'the finding on hover').toContainText('client/gone.py is not in the workspace now', 30_000);
    await expect(hover, 'the verdict on hover').toContainText('stale (file client/gone.py)', 30_000);
    await docsShot(page, 'vscode-claim-check');
    await page.keyboard.press('Escape');
    // The lenses at the top: the count, then Start in each agent and Prepare.
    await expect(page.locator('.codelens-decoration:visible', { hasText: '1 stale' }), 'the count lens').toBeVisible(30_000);
    await expect(page.locator('.codelens-decoration:visible', { hasText: 'Start in Claude Code' }), 'a start lens').toBeVisible();
    // The quick fix on the stale line (the cursor is still on it) drops it; the warning
    // goes with it.
    await runFromPalette(page, 'Quick Fix...', { keepFocus: true });
    const fix = page.locator('.action-widget .monaco-list-row, .context-view .action-label').filter({ hasText: 'Drop line 3' }).first();
    await expect(fix, 'the quick fix').toBeVisible(30_000);
    await docsShot(page, 'vscode-claim-fix');
    await page.keyboard.press('Enter'); // the preferred fix is the focused row
    const editor = page.locator('.editor-instance .monaco-editor .view-lines').first();
    await expect(editor, 'the document after the fix').notToContainText('client/gone.py', 30_000);
    await expect(page.locator('.monaco-editor .squiggly-warning'), 'no warning left').toHaveCount(0, 60_000);
    await page.keyboard.press('Control+z');
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

    await expect(page.locator('.tab', { hasText: DRAFT_FILE }), 'the second draft tab').toHaveCount(2, 60_000);
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
    writeWorkspaceSettings(session!.workspace, {
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
    // Busy only while a command runs: the spinner now, ready again after the cancel.
    await expect(page.locator('.statusbar-item', { has: page.locator('.codicon-sync') }).filter({ hasText: 'Handoff' }), 'the busy status item').toBeVisible(30_000);
    await docsShot(page, 'vscode-generate-progress');
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
    await expect(status(), 'the status item after the cancel').toHaveText(readyText(session!.workspace), 30_000);
  });
  it('a server that cannot start shows a failed item whose click opens the log; fixing the setting makes it ready again', async () => {
    const page = session!.page;
    // A quieter window for the screenshot (cosmetic: never fails the test).
    await runFromPalette(page, 'Notifications: Clear All Notifications').catch(() => undefined);
    await runFromPalette(page, 'View: Hide Panel').catch(() => undefined);
    await page.keyboard.press('Escape');
    const missing = path.join(session!.root, 'no-such-python');
    writeWorkspaceSettings(session!.workspace, { 'handoff.server.python': missing });
    const failed = page.locator('.statusbar-item', { has: page.locator('.codicon-error') }).filter({ hasText: 'Handoff' });
    await expect(failed, 'the failed status item').toBeVisible(90_000);
    await expect(page.locator('.notification-toast', { hasText: 'cannot start its language server' }), 'the failure notification').toContainText(`${missing} was not found`, 30_000);
    await docsShot(page, 'vscode-server-failed');
    await failed.click();
    await expect(page.locator('.part.panel'), 'the Handoff log').toContainText('cannot start its language server', 30_000);
    rmSync(path.join(session!.workspace, '.vscode'), { recursive: true, force: true });
    await expect(status(), 'the status item, ready again').toHaveText(readyText(session!.workspace), 90_000);
  });
});
