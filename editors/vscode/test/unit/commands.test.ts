import { strict as assert } from 'assert';
import { promises as fs } from 'fs';
import * as os from 'os';
import * as path from 'path';
import { ResponseError } from 'vscode-jsonrpc';
import { HandoffCommands } from '../../src/commands';
import { flush, historyReport, preparedFixture, RecordingServer, RecordingViews, refusal, REVISION, ScriptedUi } from './fakes';

describe('palette commands', () => {
  describe('Acknowledge', () => {
    it('sends the exact head revision, the status and the ticked checks; a refusal shows the server message', async () => {
      const message = `${REVISION} is no longer the head of openapi-client: acknowledge the head instead.`;
      const server = new RecordingServer({
        'handoff.report': () => historyReport(),
        'handoff.acknowledge': () => {
          throw refusal('stale_target', message, {});
        },
      });
      const ui = new ScriptedUi([
        { pick: REVISION },
        { pick: 'needs clarification' },
        { pickMany: ['Evidence available', 'Authorization confirmed'] },
        { type: '' },
      ]);
      const commands = new HandoffCommands(ui, server, new RecordingViews());
      const result = await commands.acknowledge();
      assert.equal(result, undefined);
      assert.deepEqual(server.paramsOf('handoff.acknowledge'), {
        mode: 'exact',
        revision: REVISION,
        status: 'needs_clarification',
        checks: { evidenceAvailable: true, liveStateConfirmed: false, capabilityConfirmed: false, authorizationConfirmed: true },
      });
      assert.deepEqual(ui.errors(), [message]);
      assert.deepEqual(commands.receipts, []);
    });

    it('accepted with checks missing is caught before the server: needs_clarification instead, the missing checks in the note', async () => {
      const server = new RecordingServer({
        'handoff.report': () => historyReport(),
        'handoff.acknowledge': (p) => ({ scope: 'openapi-client', receipt: 'source/r2', status: p.status, target: p.revision }),
      });
      const ui = new ScriptedUi([
        { pick: REVISION },
        { pick: 'accepted' },
        { pickMany: ['Evidence available', 'Authorization confirmed'] },
        { pick: 'Record as needs clarification instead' },
        { enter: true },
      ]);
      const commands = new HandoffCommands(ui, server, new RecordingViews());
      const result = await commands.acknowledge();
      assert.equal(result?.status, 'needs_clarification');
      assert.deepEqual(server.calls.filter((c) => c.command === 'handoff.acknowledge').length, 1);
      assert.deepEqual(server.paramsOf('handoff.acknowledge'), {
        mode: 'exact',
        revision: REVISION,
        status: 'needs_clarification',
        checks: { evidenceAvailable: true, liveStateConfirmed: false, capabilityConfirmed: false, authorizationConfirmed: true },
        note: 'Not confirmed yet: live state confirmed, capability confirmed.',
      });
      const caught = ui.steps.find((s) => s.title.endsWith('accepting needs all four checks'));
      assert.equal(caught?.placeholder, 'Not confirmed: live state confirmed, capability confirmed.');
      assert.deepEqual(ui.errors(), []);
    });

    it('records the receipt and offers it to Record Outcome', async () => {
      const server = new RecordingServer({
        'handoff.report': () => historyReport(),
        'handoff.acknowledge': (p) => ({ scope: 'openapi-client', receipt: 'source/r1', status: p.status, target: p.revision }),
        'handoff.recordOutcome': () => ({ scope: 'openapi-client', source: 'source/o1' }),
      });
      const ui = new ScriptedUi([
        { pick: REVISION },
        { pick: 'needs clarification' },
        { pickMany: [] },
        { type: 'which API version?' },
      ]);
      const commands = new HandoffCommands(ui, server, new RecordingViews());
      const ack = await commands.acknowledge();
      assert.equal(ack?.receipt, 'source/r1');
      assert.equal(server.paramsOf('handoff.acknowledge').note, 'which API version?');
      assert.deepEqual(commands.receipts[0], { receipt: 'source/r1', description: `needs clarification acknowledgement of ${REVISION}` });

      ui.answer({ pick: 'blocked' }, { type: 'waiting for the API owner' }, { type: '' }, { pick: 'source/r1' });
      await commands.recordOutcome();
      assert.deepEqual(server.paramsOf('handoff.recordOutcome'), {
        status: 'blocked',
        summary: 'waiting for the API owner',
        checks: [],
        receipt: 'source/r1',
      });
      const receiptStep = ui.steps[ui.steps.length - 1];
      assert.deepEqual(receiptStep.items, ['source/r1', 'source/ack1', 'No receipt']);
    });

    it('sends nothing when the user dismisses a step', async () => {
      const server = new RecordingServer({ 'handoff.report': () => historyReport() });
      const ui = new ScriptedUi([{ pick: REVISION }, { dismiss: true }]);
      await new HandoffCommands(ui, server, new RecordingViews()).acknowledge();
      assert.deepEqual(server.calls.map((c) => c.command), ['handoff.report']);
      assert.deepEqual(ui.shown, []);
    });
  });

  describe('Record Work State', () => {
    const inWorkspace = new Set(['client/pets_client.py']);
    const checkEvidence = async (c: { kind: string; path?: string; lines?: [number, number] }) =>
      c.kind === 'artifact' && !inWorkspace.has(c.path ?? '') ? `${c.path} is not in the workspace.` : undefined;

    it('a cited file that is not in the workspace is refused as it is typed, not at the end', async () => {
      const server = new RecordingServer({ 'handoff.recordWork': () => ({ scope: 'openapi-client', source: 'source/w1' }) });
      const ui = new ScriptedUi([
        { type: 'client regenerated' },
        { type: 'client/missing.py' },
        { type: 'client/pets_client.py:4-5' },
        { pick: 'continuable' },
        { type: 'run the tests :: client/gone.py' },
        { type: 'run the tests :: client/pets_client.py' },
        { type: '' },
      ]);
      const commands = new HandoffCommands(ui, server, new RecordingViews(), { checkEvidence });
      assert.equal((await commands.recordWork())?.source, 'source/w1');
      assert.deepEqual(ui.validationErrors, ['client/missing.py is not in the workspace.', 'client/gone.py is not in the workspace.']);
      assert.deepEqual(server.paramsOf('handoff.recordWork'), {
        state: { text: 'client regenerated', citations: [{ kind: 'artifact', path: 'client/pets_client.py', lines: [4, 5] }] },
        disposition: 'continuable',
        nextActions: [{ text: 'run the tests', citations: [{ kind: 'artifact', path: 'client/pets_client.py' }] }],
      });
    });

    it('a source that is not a record of the scope is refused as it is typed', async () => {
      const server = new RecordingServer({
        'handoff.report': () => ({
          scope: 'openapi-client',
          kind: 'continuity',
          markdown: '',
          data: { events: [{ refs: { source: 'source/contract1' } }], truncated: false },
        }),
        'handoff.recordWork': () => ({ scope: 'openapi-client', source: 'source/w3' }),
      });
      const ui = new ScriptedUi([
        { type: 'client regenerated' },
        { type: 'source/nosuch' },
        { type: 'source/contract1, client/pets_client.py' },
        { pick: 'done' },
        { type: '' },
      ]);
      const commands = new HandoffCommands(ui, server, new RecordingViews(), { checkEvidence });
      assert.equal((await commands.recordWork())?.source, 'source/w3');
      assert.deepEqual(ui.validationErrors, ['source/nosuch is not a record of openapi-client: cite a source/<id> from its continuity report.']);
      // The scope's records were read once for both checks.
      assert.equal(server.calls.filter((c) => c.command === 'handoff.report').length, 1);
    });

    it('a refusal offers Edit and Retry, in the words of the steps, and every value comes back filled in', async () => {
      let calls = 0;
      const server = new RecordingServer({
        'handoff.recordWork': () => {
          calls += 1;
          if (calls === 1) {
            throw refusal('invalid_params', 'nextActions[0].citations[1]: source/abc is not a Source of this scope.', {});
          }
          return { scope: 'openapi-client', source: 'source/w2' };
        },
      });
      const ui = new ScriptedUi([
        { type: 'client regenerated' },
        { type: 'client/pets_client.py:4' },
        { pick: 'blocked' },
        { type: 'ask the user :: client/pets_client.py, source/abc' },
        { type: '' },
      ]);
      ui.clickAction = 'Edit and Retry';
      ui.answer(
        { enter: true }, // the state, as typed
        { enter: true }, // its evidence, as typed
        { pick: 'blocked' },
        { type: 'ask the user :: client/pets_client.py' }, // the one fix
        { type: '' },
      );
      const commands = new HandoffCommands(ui, server, new RecordingViews());
      assert.equal((await commands.recordWork())?.source, 'source/w2');
      assert.deepEqual(ui.errors(), ['next action 1, evidence 2: source/abc is not a Source of this scope. Nothing was recorded.']);
      const retried = ui.steps.slice(5);
      assert.deepEqual(
        retried.map((s) => s.value),
        ['client regenerated', 'client/pets_client.py:4', undefined, 'ask the user :: client/pets_client.py, source/abc', undefined],
      );
      assert.equal(retried[2].items?.[0], 'blocked', 'the disposition chosen before comes first');
      assert.deepEqual(server.paramsOf('handoff.recordWork'), {
        state: { text: 'client regenerated', citations: [{ kind: 'artifact', path: 'client/pets_client.py', lines: [4, 4] }] },
        disposition: 'blocked',
        nextActions: [{ text: 'ask the user', citations: [{ kind: 'artifact', path: 'client/pets_client.py' }] }],
      });
    });
  });

  describe('Record Work Contract and Record Outcome keep their values on a refusal', () => {
    it('a refused Work Contract: Edit and Retry fills every step in again', async () => {
      let calls = 0;
      const server = new RecordingServer({
        'handoff.contract': () => {
          calls += 1;
          if (calls === 1) {
            throw refusal('invalid_params', 'objective is longer than 4,000 characters.', {});
          }
          return { scope: 'openapi-client', source: 'source/c2' };
        },
      });
      const ui = new ScriptedUi([{ type: 'update the client' }, { type: 'client' }, { type: '' }, { type: '' }, { type: 'tests pass' }, { type: '' }]);
      ui.clickAction = 'Edit and Retry';
      ui.answer({ enter: true }, { enter: true }, { type: '' }, { type: '' }, { enter: true }, { type: '' });
      const commands = new HandoffCommands(ui, server, new RecordingViews());
      assert.equal((await commands.recordContract())?.source, 'source/c2');
      assert.deepEqual(
        ui.steps.slice(6).map((s) => s.value),
        ['update the client', 'client', undefined, undefined, 'tests pass', undefined],
      );
      assert.deepEqual(server.paramsOf('handoff.contract'), { objective: 'update the client', inScope: ['client'], outOfScope: [], acceptance: ['tests pass'] });
    });

    it('a refused Task Outcome: Edit and Retry offers the status first and fills the summary and checks in', async () => {
      let calls = 0;
      const server = new RecordingServer({
        'handoff.report': () => historyReport(),
        'handoff.recordOutcome': () => {
          calls += 1;
          if (calls === 1) {
            throw refusal('invalid_params', 'receipt source/x is not an acknowledgement of this scope.', {});
          }
          return { scope: 'openapi-client', source: 'source/o2' };
        },
      });
      const ui = new ScriptedUi([{ pick: 'partial' }, { type: 'half done' }, { type: 'unit = passed' }, { type: '' }, { pick: 'No receipt' }]);
      ui.clickAction = 'Edit and Retry';
      ui.answer({ pick: 'partial' }, { enter: true }, { enter: true }, { type: '' }, { pick: 'No receipt' });
      const commands = new HandoffCommands(ui, server, new RecordingViews());
      const steps = () => ui.steps.filter((s) => s.title.startsWith('Record Outcome'));
      assert.equal((await commands.recordOutcome())?.source, 'source/o2');
      const retried = steps().slice(-5);
      assert.equal(retried[0].items?.[0], 'partial', 'the status chosen before comes first');
      assert.deepEqual(retried.slice(1, 4).map((s) => s.value), ['half done', 'unit = passed', undefined]);
    });
  });

  describe('Continue', () => {
    it('continues from latest in a pane titled latest (it follows the head), remembering the selected revision for Acknowledge', async () => {
      const server = new RecordingServer({
        'handoff.report': () => historyReport(),
        'handoff.continue': () => ({
          scope: 'openapi-client',
          trust: 'untrusted_history',
          mode: 'latest',
          found: true,
          selected: REVISION,
          current: REVISION,
          content: { objective: 'x' },
          citations: [],
          unreadableEvidence: [{ citation: { kind: 'artifact', path: 'client/pets_client.py' }, reason: 'changed' }],
          requiredChecks: [],
        }),
      });
      const ui = new ScriptedUi([{ pick: 'Latest revision' }]);
      const views = new RecordingViews();
      const commands = new HandoffCommands(ui, server, views);
      await commands.continue();
      assert.deepEqual(server.paramsOf('handoff.continue'), { mode: 'latest' });
      assert.deepEqual(views.reports, [{ kind: 'continue', latest: 'openapi-client' }]);
      assert.deepEqual(commands.lastContinued, { kind: 'revision', revision: REVISION });
      assert.equal(ui.shown[0].kind, 'warn');
      assert.match(ui.shown[0].message, /untrusted history/);
      assert.match(ui.shown[0].message, /1 cited item is unreadable/);
      assert.deepEqual(ui.shown[0].actions, ['Acknowledge…']);
    });

    it('continues from a revision of another scope (the Handoff view) in a pane pinned to it, asking in that scope', async () => {
      const server = new RecordingServer({
        'handoff.continue': () => ({ scope: 'other', trust: 'untrusted_history', mode: 'exact', found: true, selected: REVISION, current: REVISION, unreadableEvidence: [] }),
      });
      const views = new RecordingViews();
      const commands = new HandoffCommands(new ScriptedUi([]), server, views);
      await commands.continue({ kind: 'revision', revision: REVISION, scope: 'other' });
      assert.deepEqual(server.paramsOf('handoff.continue'), { mode: 'exact', revision: REVISION, scope: 'other' });
      assert.deepEqual(views.reports, [{ kind: 'continue', revision: REVISION, scope: 'other' }]);
      assert.deepEqual(commands.lastContinued, { kind: 'revision', revision: REVISION, scope: 'other' });
    });

    it('says so when nothing is committed yet', async () => {
      const server = new RecordingServer({
        'handoff.report': () => historyReport([]),
        'handoff.continue': () => ({ scope: 'default', found: false, selected: null, current: null, unreadableEvidence: [] }),
      });
      const ui = new ScriptedUi([{ pick: 'Latest revision' }]);
      const views = new RecordingViews();
      await new HandoffCommands(ui, server, views).continue();
      assert.deepEqual(views.reports, []);
      assert.match(ui.shown[0].message, /No committed revision in default yet/);
    });
  });

  describe('drafts, prepare and commit', () => {
    it('prepares the edited text of a generated draft, keeps it, and commits it with its scope', async () => {
      const prepared = preparedFixture();
      const server = new RecordingServer({
        'handoff.prepare': () => ({ scope: 'openapi-client', prepared }),
        'handoff.commit': () => ({ scope: 'openapi-client', revision: REVISION, handoffId: 'ec6bd8c4c24e', number: 1, idempotent: false }),
      });
      const ui = new ScriptedUi();
      const views = new RecordingViews();
      const draft = preparedFixture().content;
      views.active = { name: 'Untitled-1', text: '## Goal\nedited by the user', draft };
      const commands = new HandoffCommands(ui, server, views);

      await commands.prepareFromDraft();
      assert.deepEqual(server.paramsOf('handoff.prepare'), { draft: { ...draft, document: '## Goal\nedited by the user' } });
      assert.deepEqual(commands.shelf.list(), [prepared]);
      assert.deepEqual(views.reports, [{ kind: 'handoff', prepared }]);
      assert.deepEqual(ui.shown[0].actions, ['Commit', 'Save…']);

      ui.answer({ pick: 'Prepared 5b370b11276f' });
      const commit = await commands.commit();
      assert.equal(commit?.revision, REVISION);
      assert.deepEqual(server.paramsOf('handoff.commit'), { scope: 'openapi-client', prepared });
      assert.equal(commands.shelf.size, 0, 'a committed handoff is no longer offered');
      assert.equal(commands.shelf.get(prepared.digest), prepared, 'its preview can still be rendered');
      assert.equal(commands.shelf.committedAs(prepared.digest), REVISION);
    });

    it('the commit pick marks a handoff prepared on another head stale; the refusal offers Prepare Again on the new head', async () => {
      const old = preparedFixture({ base: null });
      const fresh = preparedFixture({ base: REVISION, digest: 'sha256:' + 'c0ffee'.padEnd(64, '1') });
      const conflict = `The prepared handoff was based on no revision, but the head of 'openapi-client' is now ${REVISION}. Read the new head, review what changed, and prepare again.`;
      const server = new RecordingServer({
        'handoff.report': () => historyReport(),
        'handoff.commit': () => {
          throw refusal('revision_conflict', conflict, { expected: null, current: REVISION });
        },
        'handoff.prepare': () => ({ scope: 'openapi-client', prepared: fresh }),
      });
      const ui = new ScriptedUi([{ pick: 'Prepared 5b370b11276f' }]);
      const commands = new HandoffCommands(ui, server, new RecordingViews());
      commands.shelf.add(old);
      ui.clickAction = 'Prepare Again';
      assert.equal(await commands.commit(), undefined);
      const pick = ui.steps.find((s) => s.title === 'Commit');
      assert.deepEqual(pick?.items?.slice(0, 1), ['$(warning) Prepared 5b370b11276f · stale']);
      await new Promise((resolve) => setTimeout(resolve, 10));
      assert.deepEqual(ui.shown[0], { kind: 'error', message: conflict, actions: ['Prepare Again', 'Show Head'] });
      assert.deepEqual(server.paramsOf('handoff.prepare'), { scope: 'openapi-client', draft: old.content });
      assert.ok(commands.shelf.list().some((p) => p.digest === fresh.digest), 'the new prepared handoff is kept');
    });

    it('a refused draft typed in for a plain document: Edit and Retry brings every value back', async () => {
      const prepared = preparedFixture();
      let calls = 0;
      const server = new RecordingServer({
        'handoff.prepare': () => {
          calls += 1;
          if (calls === 1) {
            throw refusal('invalid_evidence', 'draft.nextActions[0].citations[0]: openapi.yaml changed while it was read.', {});
          }
          return { scope: 'openapi-client', prepared };
        },
      });
      const ui = new ScriptedUi([
        { type: 'ship v2' },
        { type: 'v2 schema merged' },
        { type: 'openapi.yaml:1-3' },
        { pick: 'done' },
        { type: 'tag the release :: openapi.yaml' },
        { type: '' },
      ]);
      ui.clickAction = 'Edit and Retry';
      ui.answer({ enter: true }, { enter: true }, { enter: true }, { pick: 'done' }, { enter: true }, { type: '' });
      const views = new RecordingViews();
      views.active = { name: 'notes.md', text: '# Notes' };
      const result = await new HandoffCommands(ui, server, views).prepareFromDraft();
      assert.equal(result?.prepared, prepared);
      assert.deepEqual(ui.errors(), ['next action 1, evidence 1: openapi.yaml changed while it was read. Nothing was recorded.']);
      assert.deepEqual(
        ui.steps.slice(6).map((s) => s.value),
        ['ship v2', 'v2 schema merged', 'openapi.yaml:1-3', undefined, 'tag the release :: openapi.yaml', undefined],
      );
      assert.equal(calls, 2);
      assert.deepEqual(server.paramsOf('handoff.prepare'), {
        draft: {
          objective: 'ship v2',
          state: { text: 'v2 schema merged', citations: [{ kind: 'artifact', path: 'openapi.yaml', lines: [1, 3] }] },
          disposition: 'done',
          nextActions: [{ text: 'tag the release', citations: [{ kind: 'artifact', path: 'openapi.yaml' }] }],
          document: '# Notes',
        },
      });
    });

    it('asks for the whole draft when the Markdown document did not come from Generate', async () => {
      const prepared = preparedFixture();
      const server = new RecordingServer({ 'handoff.prepare': () => ({ scope: 'openapi-client', prepared }) });
      const ui = new ScriptedUi([
        { type: 'ship v2' },
        { type: 'v2 schema merged' },
        { type: 'openapi.yaml' },
        { pick: 'continuable' },
        { type: '' },
      ]);
      const views = new RecordingViews();
      views.active = { name: 'notes.md', text: '# Notes' };
      await new HandoffCommands(ui, server, views).prepareFromDraft();
      assert.deepEqual(server.paramsOf('handoff.prepare'), {
        draft: {
          objective: 'ship v2',
          state: { text: 'v2 schema merged', citations: [{ kind: 'artifact', path: 'openapi.yaml' }] },
          disposition: 'continuable',
          nextActions: [],
          document: '# Notes',
        },
      });
    });

    it('commits straight from the notification action', async () => {
      const prepared = preparedFixture();
      const server = new RecordingServer({
        'handoff.handoffCurrentWork': () => ({ scope: 'openapi-client', prepared, boundary: 'source/b1' }),
        'handoff.commit': () => ({ scope: 'openapi-client', revision: REVISION, handoffId: 'x', number: 1, idempotent: false }),
      });
      const ui = new ScriptedUi();
      ui.clickAction = 'Commit';
      const views = new RecordingViews();
      await new HandoffCommands(ui, server, views).handoffCurrentWork();
      await flush();
      assert.deepEqual(server.paramsOf('handoff.handoffCurrentWork'), {});
      assert.deepEqual(server.paramsOf('handoff.commit'), { scope: 'openapi-client', prepared });
      assert.match(ui.shown[1].message, /Committed handoff\/ec6bd8c4c24e@1 in openapi-client/);
      // The prepared preview's tab becomes the revision's.
      assert.deepEqual(views.replaced, [{ from: { kind: 'handoff', prepared }, to: { kind: 'handoff', revision: REVISION } }]);
    });

    it('saves a prepared handoff unchanged and loads it back for Commit', async () => {
      const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'handoff-vscode-'));
      const prepared = preparedFixture();
      const server = new RecordingServer({
        'handoff.report': () => ({ markdown: '', data: {} }),
        'handoff.commit': () => ({ scope: 'openapi-client', revision: REVISION, handoffId: 'x', number: 1, idempotent: true }),
      });
      const ui = new ScriptedUi();
      const first = new HandoffCommands(ui, server, new RecordingViews());
      first.shelf.add(prepared);
      ui.saveTo = path.join(dir, 'p.json');
      await first.savePrepared(prepared);
      assert.deepEqual(JSON.parse(await fs.readFile(ui.saveTo, 'utf8')), prepared);

      const second = new HandoffCommands(ui, server, new RecordingViews());
      ui.openFrom = ui.saveTo;
      ui.answer({ pick: 'Load prepared handoff from file' });
      const commit = await second.commit();
      assert.equal(commit?.idempotent, true);
      assert.deepEqual(server.paramsOf('handoff.commit').prepared, prepared);
      assert.match(ui.shown[ui.shown.length - 1].message, /Already committed as/);
    });

    it('shows a clear error for a file that is not a prepared handoff', async () => {
      const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'handoff-vscode-'));
      await fs.writeFile(path.join(dir, 'bad.json'), '{"scope": "x"}');
      const ui = new ScriptedUi();
      ui.openFrom = path.join(dir, 'bad.json');
      const server = new RecordingServer({});
      await new HandoffCommands(ui, server, new RecordingViews()).loadPrepared();
      assert.equal(server.calls.length, 0);
      assert.match(ui.errors()[0], /does not hold a prepared handoff/);
    });
  });
});

describe('prepared handoffs across a reload', () => {
  it('are kept in the workspace state: a new window offers them and knows which were committed', async () => {
    const { PreparedShelf } = await import('../../src/prepared');
    const kept = new Map<string, unknown>();
    const store = { get: <T>(key: string) => kept.get(key) as T | undefined, update: async (key: string, value: unknown) => void kept.set(key, value) };
    const first = new PreparedShelf(store);
    const a = preparedFixture();
    const b = { ...preparedFixture(), digest: `sha256:${'b'.repeat(64)}` };
    first.add(a);
    first.add(b);
    first.markCommitted(a.digest, 'handoff/abc@1');
    const reloaded = new PreparedShelf(store);
    assert.deepEqual(reloaded.list().map((p) => p.digest), [b.digest]);
    assert.equal(reloaded.get(a.digest)?.digest, a.digest); // its preview still renders
    assert.equal(reloaded.committedAs(a.digest), 'handoff/abc@1');
    // Junk in the state is ignored, not a crash.
    kept.set('handoff.preparedShelf', [{ prepared: { nope: 1 } }, null, 'x']);
    assert.equal(new PreparedShelf(store).size, 0);
  });
});

describe('Repair Store…', () => {
  const broken = {
    ok: false,
    action: 'check',
    actions: [],
    check: { ok: false, problems: [{ problem: 'state_missing', message: 'the state file is missing; its marker names store abc' }] },
  };

  it('says a sound store is sound, and changes nothing', async () => {
    const server = new RecordingServer({
      'handoff.repairStore': () => ({ ok: true, action: 'check', actions: [], check: { ok: true, counts: { sources: 3, revisions: 1, segments: 0 } } }),
    });
    const ui = new ScriptedUi([]);
    await new HandoffCommands(ui, server, new RecordingViews()).repairStore();
    assert.deepEqual(server.calls.map((c) => c.params), [{ action: 'check' }]);
    assert.equal(ui.shown[0].message, 'The store is sound: 3 Sources, 1 revisions, 0 sealed segments.');
  });

  it('a lost state file: restore a copy chosen in the open dialog (no "Repair" offered: it cannot help)', async () => {
    const server = new RecordingServer({
      'handoff.repairStore': (p) =>
        p.action === 'check' ? broken : { ok: true, action: 'restore', actions: ['restored the state file from /b/state.json'], check: { ok: true } },
    });
    const ui = new ScriptedUi([{ pick: 'Restore a State File…' }]);
    ui.openFrom = '/b/state.json';
    await new HandoffCommands(ui, server, new RecordingViews()).repairStore();
    assert.deepEqual(ui.steps[0].items, ['Restore a State File…', 'Start Over']);
    assert.deepEqual(server.paramsOf('handoff.repairStore'), { action: 'restore', file: '/b/state.json' });
    assert.equal(ui.shown[ui.shown.length - 1].message, 'Store repaired: restored the state file from /b/state.json.');
  });

  it('starting over asks first, and a no sends nothing', async () => {
    const server = new RecordingServer({ 'handoff.repairStore': () => broken });
    const ui = new ScriptedUi([{ pick: 'Start Over' }]);
    await new HandoffCommands(ui, server, new RecordingViews()).repairStore();
    assert.deepEqual(server.calls.map((c) => c.params), [{ action: 'check' }]);
    assert.match(ui.shown[ui.shown.length - 1].message, /^Start over with an empty store\?/);
  });

  it('a store_corrupt refusal offers Repair Store…', async () => {
    const { showCommandError } = await import('../../src/errors');
    const ui = new ScriptedUi([]);
    ui.clickAction = 'Repair Store…';
    await showCommandError(ui, new ResponseError(-32603, 'The state file is missing.', { code: 'store_corrupt' }));
    await new Promise((resolve) => setTimeout(resolve, 0));
    assert.deepEqual(ui.shown[0].actions, ['Repair Store…']);
    assert.deepEqual(ui.commandsRun, [{ id: 'handoffUi.repairStore', args: [] }]);
  });
});

describe('Load Prepared Handoff…', () => {
  it('warns when the loaded handoff is stale (prepared on another head), else says it is loaded', async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'handoff-vscode-'));
    const prepared = { ...preparedFixture(), base: null };
    const file = path.join(dir, 'p.json');
    await fs.writeFile(file, JSON.stringify(prepared));
    const moved = new RecordingServer({ 'handoff.report': () => historyReport() });
    const ui = new ScriptedUi([]);
    ui.openFrom = file;
    await new HandoffCommands(ui, moved, new RecordingViews()).loadPrepared();
    const [said] = ui.shown;
    assert.equal(said.kind, 'warn');
    assert.match(said.message, new RegExp(`stale \\(prepared on no revision; the head is now ${REVISION}\\)`));
    const fresh = new RecordingServer({ 'handoff.report': () => ({ markdown: '', data: { head: null, revisions: [] } }) });
    const ui2 = new ScriptedUi([]);
    ui2.openFrom = file;
    await new HandoffCommands(ui2, fresh, new RecordingViews()).loadPrepared();
    assert.deepEqual([ui2.shown[0].kind, ui2.shown[0].message], ['info', `Loaded prepared handoff ${prepared.digest.slice(7, 19)} for openapi-client.`]);
  });
});
