import { strict as assert } from 'assert';
import { ResponseError } from 'vscode-jsonrpc';
import { HandoffCommands, PaletteCommand } from '../../src/commands';
import { HandoffCommandError } from '../../src/errors';
import { handoffPresence, HandoffStatus, StatusSink, StatusView } from '../../src/status';
import { RecordingServer, RecordingViews, ScriptedUi } from './fakes';

class RecordingSink implements StatusSink {
  readonly views: StatusView[] = [];
  hidden = false;
  show(view: StatusView): void {
    this.hidden = false;
    this.views.push(view);
  }
  hide(): void {
    this.hidden = true;
  }
  get last(): StatusView {
    const view = this.views[this.views.length - 1];
    assert.ok(view, 'the item was never shown');
    return view;
  }
}

const SPIN = '$(sync~spin)';

function continuity(head: string | null, transfer = 'accepted') {
  return { kind: 'continuity', scope: 'main', markdown: '# Continuity', data: { head, transfer, outcome: 'none', totalEvents: 1, events: [] } };
}

describe('status item', () => {
  it('starting spins; ready shows scope · head · transfer and opens the continuity view', async () => {
    const sink = new RecordingSink();
    const status = new HandoffStatus(sink, new RecordingServer({ 'handoff.report': () => continuity('handoff/main@3', 'needs_clarification') }));
    status.starting();
    assert.ok(sink.last.text.startsWith(SPIN));
    assert.equal(sink.last.command, PaletteCommand.showLog);
    await status.refresh();
    assert.equal(sink.last.text, '$(arrow-swap) main · @3 · needs clarification');
    assert.equal(sink.last.command, PaletteCommand.showContinuity);
    assert.equal(sink.last.warning, false);
    assert.equal(status.current.kind, 'ready');
  });

  it('a server that fails to start stops the spinner: failed, click → the log', () => {
    const sink = new RecordingSink();
    const status = new HandoffStatus(sink, new RecordingServer({}));
    status.starting();
    status.failed(new HandoffCommandError('server_not_found', 'No Python with lsp_server was found.'));
    assert.equal(sink.last.text, '$(error) Handoff');
    assert.ok(!sink.last.text.includes(SPIN));
    assert.equal(sink.last.command, PaletteCommand.showLog);
    assert.equal(sink.last.warning, true);
    assert.match(sink.last.tooltip, /No Python with lsp_server was found\./);
    assert.match(sink.last.tooltip, /Restart Server/);
  });

  it('busy only while a command runs, then back to ready (a refusal of the input included)', async () => {
    const sink = new RecordingSink();
    let during: StatusView | undefined;
    const server = new RecordingServer({
      'handoff.report': () => continuity('handoff/main@1'),
      'handoff.commit': () => {
        during = sink.last;
        throw new ResponseError(-32602, 'stale prepared handoff', { code: 'stale_prepared' });
      },
    });
    const status = new HandoffStatus(sink, server);
    await status.refresh();
    const busy = status.busyServer(server);
    await assert.rejects(busy.execute('handoff.commit', {}));
    assert.ok(during?.text.startsWith(SPIN), 'busy while the command runs');
    assert.match(during?.tooltip ?? '', /commit/);
    assert.equal(status.busy, false);
    assert.equal(sink.last.text, '$(arrow-swap) main · @1 · accepted');
  });

  it('a command that fails in a window with no folder leaves a failed item, not a spinner', async () => {
    const sink = new RecordingSink();
    const noFolder = () => {
      throw new HandoffCommandError('no_workspace', 'Handoff works on a workspace folder: open a folder first.');
    };
    const server = new RecordingServer({ 'handoff.report': noFolder });
    const status = new HandoffStatus(sink, server);
    status.noFolder();
    assert.ok(!sink.last.text.includes(SPIN));
    const ui = new ScriptedUi();
    const commands = new HandoffCommands(ui, status.busyServer(server), new RecordingViews());
    await commands.showHandoff();
    assert.deepEqual(ui.errors(), ["Handoff works on a workspace folder: open a folder first."]);
    assert.ok(sink.views.length >= 2);
    assert.ok(!sink.last.text.includes(SPIN), `still spinning: ${sink.last.text}`);
    assert.equal(sink.last.text, '$(error) Handoff');
    assert.equal(sink.last.command, PaletteCommand.showLog);
    assert.match(sink.last.tooltip, /open a folder/);
  });

  it('concurrent commands: busy until the last one ends', async () => {
    const sink = new RecordingSink();
    const releases: (() => void)[] = [];
    const server = new RecordingServer({
      'handoff.report': () => continuity('handoff/main@1'),
      'handoff.prepare': () => new Promise<void>((resolve) => releases.push(resolve)),
    });
    const status = new HandoffStatus(sink, server);
    await status.refresh();
    const busy = status.busyServer(server);
    const a = busy.execute('handoff.prepare', {});
    const b = busy.execute('handoff.prepare', {});
    await new Promise((resolve) => setImmediate(resolve));
    releases[0]();
    await a;
    assert.ok(sink.last.text.startsWith(SPIN));
    releases[1]();
    await b;
    assert.ok(sink.last.text.startsWith('$(arrow-swap) main'));
  });

  it('is hidden until revealed (sessions found) or a command runs, then stays', async () => {
    const sink = new RecordingSink();
    const server = new RecordingServer({ 'handoff.report': () => continuity(null, 'none'), 'handoff.sessions': () => ({ sessions: [] }) });
    const status = new HandoffStatus(sink, server);
    status.conceal();
    status.starting();
    await status.refresh();
    assert.equal(sink.hidden, true);
    assert.equal(status.visible, false);
    await status.busyServer(server).execute('handoff.sessions', {});
    assert.equal(sink.hidden, false);
    assert.equal(sink.last.text, '$(arrow-swap) main · no revision');
    status.conceal();
    status.reveal();
    assert.equal(sink.hidden, false);
  });

  it('shows Handoff for a folder with its state folder, else one with agent sessions (never asking the server to make a store)', async () => {
    const a = { uri: 'file:///w/a', name: 'a', path: '/w/a' };
    const b = { uri: 'file:///w/b', name: 'b', path: '/w/b' };
    const sessions = (params: Record<string, unknown>) => ({ sessions: params.workspace === b.uri ? [{ path: '/h/s.jsonl', format: 'pi', messageCount: 2 }] : [] });
    let server = new RecordingServer({ 'handoff.sessions': sessions });
    assert.deepEqual(await handoffPresence(server, [a, b], async (f) => f === a), { folder: a, why: 'store' });
    assert.equal(server.calls.length, 0, 'a state folder is enough: the server is not asked');
    server = new RecordingServer({ 'handoff.sessions': sessions });
    assert.deepEqual(await handoffPresence(server, [a, b], async () => false), { folder: b, why: 'sessions' });
    assert.deepEqual(server.calls.map((c) => c.params), [{ workspace: a.uri }, { workspace: b.uri }]);
    server = new RecordingServer({ 'handoff.sessions': () => ({ sessions: [] }) });
    assert.equal(await handoffPresence(server, [a], async () => false), undefined);
    assert.deepEqual(server.calls.map((c) => c.params), [{}], 'one folder: no workspace key');
  });

  it('names the folder it is of in a multi-root window', async () => {
    const sink = new RecordingSink();
    const server = new RecordingServer({ 'handoff.report': () => continuity('handoff/main@2') });
    const status = new HandoffStatus(sink, server, () => ({ uri: 'file:///w/b', name: 'b', path: '/w/b' }));
    await status.refresh();
    assert.equal(sink.last.text, '$(arrow-swap) b: main · @2 · accepted');
    assert.equal(server.paramsOf('handoff.report').workspace, 'file:///w/b');
    assert.match(sink.last.tooltip, /^Workspace folder: b\n/);
  });
});
