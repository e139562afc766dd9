import { strict as assert } from 'assert';
import { ResponseError } from 'vscode-jsonrpc';
import { HandoffCommandError, inUserWords, showCommandError, toCommandError } from '../../src/errors';
import { ScriptedUi } from './fakes';

const flush = () => new Promise((resolve) => setImmediate(resolve));

describe('error display', () => {
  it('shows a domain refusal with the server message verbatim in an error notification', async () => {
    const ui = new ScriptedUi();
    const message =
      "An acknowledgement binds an exact target: continue from latest, then acknowledge the exact revision it selected (mode 'exact').";
    const failure = await showCommandError(ui, new ResponseError(-32803, message, { code: 'exact_target_required' }));
    assert.equal(failure.code, 'exact_target_required');
    assert.deepEqual(ui.shown, [{ kind: 'error', message, actions: [] }]);
  });

  it('keeps the refusal data (failed checks) for the caller', () => {
    const failure = toCommandError(
      new ResponseError(-32803, "Cannot record 'accepted'", { code: 'acceptance_checks_failed', failed: ['live_state_confirmed'] }),
    );
    assert.equal(failure.code, 'acceptance_checks_failed');
    assert.deepEqual(failure.data.failed, ['live_state_confirmed']);
    assert.equal(failure.rpcCode, -32803);
  });

  it('shows invalid params under their own code', async () => {
    const ui = new ScriptedUi();
    await showCommandError(ui, new ResponseError(-32602, 'handoff.report needs the keys kind.', { code: 'invalid_params', missing: ['kind'] }));
    assert.deepEqual(ui.errors(), ['handoff.report needs the keys kind.']);
  });

  it('shows a cancellation as information, not as an error', async () => {
    const ui = new ScriptedUi();
    const failure = await showCommandError(ui, new ResponseError(-32800, 'The command was cancelled; nothing was written.', { code: 'cancelled' }));
    assert.ok(failure.cancelled);
    assert.deepEqual(ui.errors(), []);
    assert.deepEqual(ui.shown, [{ kind: 'info', message: 'The command was cancelled; nothing was written.', actions: [] }]);
  });

  it('treats a bare RequestCancelled without data as a cancellation', () => {
    const failure = toCommandError(new ResponseError(-32800, 'Request cancelled'));
    assert.equal(failure.code, 'cancelled');
  });

  it('offers the log when the server connection is gone', async () => {
    const ui = new ScriptedUi();
    ui.clickAction = 'Show Log';
    await showCommandError(ui, new ResponseError(-32096, 'Client is not running'));
    await flush();
    assert.equal(ui.shown[0].kind, 'error');
    assert.match(ui.shown[0].message, /language server is not running/);
    assert.deepEqual(ui.commandsRun, [{ id: 'handoffUi.showLog', args: [] }]);
  });

  it('offers the settings when no interpreter can run the server', async () => {
    const ui = new ScriptedUi();
    ui.clickAction = 'Open Settings';
    await showCommandError(ui, new HandoffCommandError('server_not_found', 'Handoff cannot start its language server: python3 cannot import lsp_server.'));
    await flush();
    assert.deepEqual(ui.shown[0].actions, ['Open Settings', 'Show Log']);
    assert.deepEqual(ui.commandsRun, [{ id: 'workbench.action.openSettings', args: ['handoff.server'] }]);
  });

  it('names an unknown method as an outdated server', () => {
    const failure = toCommandError(new ResponseError(-32601, 'Unhandled method workspace/executeCommand'));
    assert.equal(failure.code, 'server_outdated');
  });

  it('wraps client-side exceptions', () => {
    const failure = toCommandError(new Error('ENOENT: no such file'));
    assert.equal(failure.code, 'client_error');
    assert.equal(failure.message, 'ENOENT: no such file');
  });
});

describe('refusals in the words of the input steps', () => {
  it('names fields as the steps do: next action N, evidence M, the state\'s evidence', () => {
    assert.equal(inUserWords('draft.nextActions[1].citations[0]: client/x.py is not a file.'), 'next action 2, evidence 1: client/x.py is not a file.');
    assert.equal(inUserWords('state.citations[2]: source/abc is unknown.'), "the state's evidence 3: source/abc is unknown.");
    assert.equal(inUserWords('content.nextActions[0] has no text.'), 'next action 1 has no text.');
    assert.equal(inUserWords('Nothing to rename here.'), 'Nothing to rename here.');
  });
});
