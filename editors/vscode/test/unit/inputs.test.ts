import { strict as assert } from 'assert';
import { execFileSync } from 'child_process';
import * as path from 'path';
import {
  collectAcknowledgement,
  collectContract,
  collectList,
  collectOutcome,
  collectWorkState,
  parseCheckSpec,
  parseFactSpec,
  pickTarget,
  targetParams,
  validateCitations,
} from '../../src/inputs';
import { preparedFixture, REVISION, ScriptedUi } from './fakes';

describe('input collection', () => {
  describe('citations and facts', () => {
    it('splits evidence into source and artifact citations', () => {
      assert.deepEqual(parseFactSpec('run contract tests :: source/6ea103d664ad4374bf75, ./client/pets_client.py'), {
        text: 'run contract tests',
        citations: [
          { kind: 'source', ref: 'source/6ea103d664ad4374bf75' },
          { kind: 'artifact', path: 'client/pets_client.py' },
        ],
      });
    });

    it('refuses evidence a server would refuse, with a reason', () => {
      assert.match(validateCitations('') ?? '', /at least one/);
      assert.match(validateCitations('/etc/passwd') ?? '', /absolute/);
      assert.match(validateCitations('../other/repo.py') ?? '', /leaves the workspace/);
      assert.match(validateCitations('source/not a ref') ?? '', /not a source reference/);
      assert.equal(validateCitations('src/a.ts, source/abc'), undefined);
    });

    it('reads a TEXT :: CITE line as the server parses it (lsp_server.model.params.parse_fact)', function () {
      this.timeout(120000);
      const lines = [
        'run contract tests :: source/6ea103d664ad4374bf75, ./client/pets_client.py',
        'state :: openapi.yaml:12',
        'state :: openapi.yaml:12-20, src/a.ts',
        '  spaced text   ::  src/a.ts ,  , source/abc ',
        'a :: b :: c.py',
        'urls like http://x :: notes.md',
        'run the tests',
        ':: src/a.ts',
        'no evidence ::',
        'no evidence :: , ,',
      ];
      const repo = path.resolve(__dirname, '..', '..', '..', '..', '..');
      const script =
        'import json, sys\n' +
        'from lsp_server.model.errors import HandoffError\n' +
        'from lsp_server.model.params import converter, parse_fact\n' +
        'def one(line):\n' +
        '    try:\n' +
        '        return converter.unstructure(parse_fact(line))\n' +
        '    except HandoffError:\n' +
        '        return None\n' +
        'print(json.dumps([one(line) for line in json.load(sys.stdin)]))\n';
      const out = execFileSync('uv', ['run', '--frozen', 'python', '-c', script], {
        cwd: repo,
        input: JSON.stringify(lines),
        encoding: 'utf8',
      });
      const server: unknown[] = JSON.parse(out);
      assert.ok(server.some((f) => f === null) && server.some((f) => f !== null));
      lines.forEach((line, i) => {
        assert.deepEqual(parseFactSpec(line) ?? null, server[i], line);
      });
    });

    it('needs the :: separator in a next action', () => {
      assert.equal(parseFactSpec('run the tests'), undefined);
      assert.equal(parseFactSpec(':: src/a.ts'), undefined);
    });

    it('parses outcome checks and refuses unknown statuses', () => {
      assert.deepEqual(parseCheckSpec('contract tests = passed'), { name: 'contract tests', status: 'passed' });
      assert.deepEqual(parseCheckSpec('lint: timed_out'), { name: 'lint', status: 'timed_out' });
      assert.equal(parseCheckSpec('lint = green'), undefined);
    });
  });

  describe('lists', () => {
    it('keeps asking until an empty entry, and enforces the minimum', async () => {
      const ui = new ScriptedUi([{ type: '' }, { type: 'generate the client' }, { type: 'update docs' }, { type: '' }]);
      const items = await collectList(ui, { title: 'In scope', prompt: 'Something.', min: 1 });
      assert.deepEqual(items, ['generate the client', 'update docs']);
      assert.deepEqual(ui.validationErrors, ['Enter at least 1 item.']);
      assert.equal(ui.remaining, 0);
    });

    it('returns undefined when dismissed midway', async () => {
      const ui = new ScriptedUi([{ type: 'one' }, { dismiss: true }]);
      assert.equal(await collectList(ui, { title: 'x', prompt: 'y', min: 0 }), undefined);
    });
  });

  it('collects a Work Contract in the command contract shape', async () => {
    const ui = new ScriptedUi([
      { type: ' complete the OpenAPI client update ' },
      { type: 'regenerate the client' },
      { type: '' },
      { type: '' },
      { type: 'contract tests pass' },
      { type: '' },
    ]);
    assert.deepEqual(await collectContract(ui), {
      objective: 'complete the OpenAPI client update',
      inScope: ['regenerate the client'],
      outOfScope: [],
      acceptance: ['contract tests pass'],
    });
  });

  it('collects a work state: fact, disposition, next actions', async () => {
    const ui = new ScriptedUi([
      { type: 'client generation completed' },
      { type: '/abs/path' },
      { type: 'client/pets_client.py' },
      { pick: 'blocked' },
      { type: 'run the tests' },
      { type: 'run the tests :: source/abc123' },
      { type: '' },
    ]);
    const state = await collectWorkState(ui);
    assert.deepEqual(state, {
      state: { text: 'client generation completed', citations: [{ kind: 'artifact', path: 'client/pets_client.py' }] },
      disposition: 'blocked',
      nextActions: [{ text: 'run the tests', citations: [{ kind: 'source', ref: 'source/abc123' }] }],
    });
    assert.equal(ui.validationErrors.length, 2, ui.validationErrors.join('\n'));
  });

  describe('acknowledgement', () => {
    it('turns the multi-select into the four check booleans', async () => {
      const ui = new ScriptedUi([{ pick: 'needs clarification' }, { pickMany: ['Evidence available', 'Authorization confirmed'] }, { type: 'looks good' }]);
      const input = await collectAcknowledgement(ui, { kind: 'revision', revision: REVISION });
      assert.deepEqual(input, {
        status: 'needs_clarification',
        checks: { evidenceAvailable: true, liveStateConfirmed: false, capabilityConfirmed: false, authorizationConfirmed: true },
        note: 'looks good',
      });
      // The statuses in words, not their wire spelling.
      assert.deepEqual(ui.steps[0].items, ['accepted', 'needs clarification', 'declined']);
      const checks = ui.steps.find((s) => s.kind === 'pickMany');
      assert.deepEqual(checks?.items, ['Evidence available', 'Live state confirmed', 'Capability confirmed', 'Authorization confirmed']);
      assert.match(checks?.title ?? '', new RegExp(REVISION.replace(/[/@]/g, '.')));
    });

    it('accepted with a check left unticked asks again, naming the missing ones, with the ticks kept', async () => {
      const ui = new ScriptedUi([
        { pick: 'accepted' },
        { pickMany: ['Evidence available', 'Live state confirmed', 'Authorization confirmed'] },
        { pick: 'Tick the checks again' },
        { pickMany: ['Evidence available', 'Live state confirmed', 'Capability confirmed', 'Authorization confirmed'] },
        { type: '' },
      ]);
      const input = await collectAcknowledgement(ui, { kind: 'revision', revision: REVISION });
      assert.deepEqual(input, {
        status: 'accepted',
        checks: { evidenceAvailable: true, liveStateConfirmed: true, capabilityConfirmed: true, authorizationConfirmed: true },
      });
      const again = ui.steps.find((s) => s.kind === 'pick' && s.title.endsWith('accepting needs all four checks'));
      assert.equal(again?.placeholder, 'Not confirmed: capability confirmed.');
      const ticks = ui.steps.filter((s) => s.kind === 'pickMany');
      assert.equal(ticks.length, 2);
      assert.deepEqual(ticks[1].picked, ['Evidence available', 'Live state confirmed', 'Authorization confirmed']);
    });

    it('leaves the note out when skipped and stops when dismissed', async () => {
      const ui = new ScriptedUi([{ pick: 'declined' }, { pickMany: [] }, { type: '' }]);
      assert.deepEqual(await collectAcknowledgement(ui, { kind: 'revision', revision: REVISION }), {
        status: 'declined',
        checks: { evidenceAvailable: false, liveStateConfirmed: false, capabilityConfirmed: false, authorizationConfirmed: false },
      });
      const dismissed = new ScriptedUi([{ pick: 'accepted' }, { dismiss: true }]);
      assert.equal(await collectAcknowledgement(dismissed, { kind: 'revision', revision: REVISION }), undefined);
    });
  });

  describe('targets', () => {
    it('offers the continued target first, then head, revisions and prepared handoffs', async () => {
      const prepared = preparedFixture();
      const ui = new ScriptedUi([{ pick: 'Prepared 5b370b11276f' }]);
      const target = await pickTarget(ui, 'Acknowledge…', {
        head: REVISION,
        lastContinued: { kind: 'revision', revision: 'handoff/old@3' },
        revisions: [{ revision: REVISION }, { revision: 'handoff/old@3' }],
        prepared: [prepared],
      });
      assert.deepEqual(target, { kind: 'prepared', prepared });
      assert.deepEqual(ui.steps[0].items, [
        '$(debug-continue) handoff/old@3',
        `$(git-commit) ${REVISION}`,
        '$(file-text) Prepared 5b370b11276f',
        '$(edit) Another revision…',
      ]);
    });

    it('validates a typed revision', async () => {
      const ui = new ScriptedUi([{ pick: 'Another revision' }, { type: 'latest' }, { type: 'handoff/abc@2' }]);
      assert.deepEqual(await pickTarget(ui, 'Continue', {}), { kind: 'revision', revision: 'handoff/abc@2' });
      assert.deepEqual(ui.validationErrors, ['A revision looks like handoff/<id>@<n>.']);
    });

    it('maps targets onto the contract modes', () => {
      assert.deepEqual(targetParams({ kind: 'latest' }), { mode: 'latest' });
      assert.deepEqual(targetParams({ kind: 'revision', revision: REVISION }), { mode: 'exact', revision: REVISION });
      const prepared = preparedFixture();
      assert.deepEqual(targetParams({ kind: 'prepared', prepared }), { mode: 'prepared', prepared });
    });
  });

  it('collects an outcome with checks and the receipt it follows', async () => {
    const ui = new ScriptedUi([
      { pick: 'succeeded' },
      { type: 'contract tests pass against the regenerated client' },
      { type: 'contract tests = green' },
      { type: 'contract tests = passed' },
      { type: '' },
      { pick: 'source/ack1' },
    ]);
    const input = await collectOutcome(ui, [{ receipt: 'source/ack1', description: 'accepted of x' }]);
    assert.deepEqual(input, {
      status: 'succeeded',
      summary: 'contract tests pass against the regenerated client',
      checks: [{ name: 'contract tests', status: 'passed' }],
      receipt: 'source/ack1',
    });
    assert.equal(ui.validationErrors.length, 1);
  });
});
