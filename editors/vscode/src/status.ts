/** The status bar item's states, free of `vscode`: starting, ready (scope · head ·
 * transfer), failed (click → the log) and busy while a palette command runs; hidden until
 * a folder has a state folder or agent sessions. The extension draws each `StatusView`
 * on the real item; unit tests read them from a sink. */

import type { ExecuteOptions, HandoffServer } from './commands';
import { PaletteCommand } from './commands';
import { toCommandError } from './errors';
import type { FolderRef } from './folders';
import { ContinuityData, ReportResult, ServerCommand, ServerCommandId, SessionsResult } from './protocol';
import { statusText } from './preview';

export type StatusState =
  | { kind: 'noFolder' }
  | { kind: 'starting' }
  | { kind: 'ready'; scope: string; data: Pick<ContinuityData, 'head' | 'transfer' | 'outcome'> }
  | { kind: 'failed'; message: string; code: string };

/** What the item shows: its text, tooltip, the command it runs on click, and whether it
 * has the warning background. */
export interface StatusView {
  text: string;
  tooltip: string;
  command: string;
  warning: boolean;
}

export interface StatusSink {
  show(view: StatusView): void;
  /** Takes the item off the status bar (nothing of Handoff in the window yet). */
  hide?(): void;
}

/** Why Handoff is shown in a window: a folder has its state folder, else agent sessions
 * recorded in it (the server's session listing, a read that creates no store). */
export async function handoffPresence(
  server: HandoffServer,
  folders: readonly FolderRef[],
  hasStore: (folder: FolderRef) => Promise<boolean>,
): Promise<{ folder: FolderRef; why: 'store' | 'sessions' } | undefined> {
  for (const folder of folders) {
    if (await hasStore(folder)) {
      return { folder, why: 'store' };
    }
  }
  for (const folder of folders) {
    const params = folders.length > 1 ? { workspace: folder.uri } : {};
    const listed = await server.execute<SessionsResult>(ServerCommand.sessions, params);
    if (listed.sessions.length > 0) {
      return { folder, why: 'sessions' };
    }
  }
  return undefined;
}

/** Refusals that mean the server cannot serve this window (not a refusal of one input). */
const FATAL_CODES = new Set(['no_workspace', 'server_not_found', 'server_unavailable']);

export function statusView(state: StatusState, busy?: string): StatusView {
  if (busy !== undefined && state.kind !== 'failed' && state.kind !== 'noFolder') {
    return {
      text: '$(sync~spin) Handoff',
      tooltip: `Handoff: ${busy}…`,
      command: PaletteCommand.showLog,
      warning: false,
    };
  }
  switch (state.kind) {
    case 'noFolder':
      return {
        text: '$(arrow-swap) Handoff',
        tooltip: 'Handoff works on a workspace folder: open a folder to start the Handoff language server.\n\nClick to show the log.',
        command: PaletteCommand.showLog,
        warning: false,
      };
    case 'starting':
      return {
        text: '$(sync~spin) Handoff',
        tooltip: 'Starting the Handoff language server…\n\nClick to show the log.',
        command: PaletteCommand.showLog,
        warning: false,
      };
    case 'ready': {
      const { text, tooltip } = statusText(state.scope, state.data);
      return { text, tooltip, command: PaletteCommand.showContinuity, warning: false };
    }
    case 'failed':
      return {
        text: '$(error) Handoff',
        tooltip: `${state.message}\n\nClick to show the log; then fix the setting "handoff.server.python" or run "Handoff: Restart Server".`,
        command: PaletteCommand.showLog,
        warning: true,
      };
  }
}

/** The status item's state machine. ``server`` is the raw connection (the status's own
 * continuity report does not count as busy). */
export class HandoffStatus {
  private state: StatusState = { kind: 'starting' };
  private readonly running: string[] = [];
  private shown = true;

  constructor(
    private readonly sink: StatusSink,
    private readonly server: HandoffServer,
    /** In a multi-root window, the folder the item is of (its name starts the text). */
    private readonly folder: () => FolderRef | undefined = () => undefined,
  ) {}

  /** Whether the item is on the status bar. */
  get visible(): boolean {
    return this.shown || this.running.length > 0;
  }

  /** Off the status bar until `reveal` (or while a command runs). */
  conceal(): void {
    this.shown = false;
    this.draw();
  }

  reveal(): void {
    if (!this.shown) {
      this.shown = true;
      this.draw();
    }
  }

  get current(): StatusState {
    return this.state;
  }

  get busy(): boolean {
    return this.running.length > 0;
  }

  private set(state: StatusState): void {
    this.state = state;
    this.draw();
  }

  private draw(): void {
    if (!this.visible && this.sink.hide) {
      this.sink.hide();
      return;
    }
    const view = statusView(this.state, this.running[this.running.length - 1]);
    const folder = this.state.kind === 'ready' ? this.folder() : undefined;
    this.sink.show(folder ? { ...view, text: view.text.replace(/^(\$\([^)]+\) )/, `$1${folder.name}: `), tooltip: `Workspace folder: ${folder.name}\n${view.tooltip}` } : view);
  }

  noFolder(): void {
    this.set({ kind: 'noFolder' });
  }

  starting(): void {
    this.set({ kind: 'starting' });
  }

  failed(error: unknown): void {
    const failure = toCommandError(error);
    this.set({ kind: 'failed', message: failure.message, code: failure.code });
  }

  ready(scope: string, data: Pick<ContinuityData, 'head' | 'transfer' | 'outcome'>): void {
    this.set({ kind: 'ready', scope, data });
  }

  /** Reads the continuity report and shows ready, or failed when the server refuses. */
  async refresh(): Promise<void> {
    try {
      const folder = this.folder();
      const params = folder ? { kind: 'continuity', workspace: folder.uri } : { kind: 'continuity' };
      const report = await this.server.execute<ReportResult<ContinuityData>>(ServerCommand.report, params);
      this.ready(report.scope, report.data);
    } catch (error) {
      this.failed(error);
    }
  }

  /** Shows busy while ``run`` runs; a failure that means the server cannot serve this
   * window (no folder, no server) leaves the failed state, any other ends busy only. */
  async track<R>(label: string, run: () => Promise<R>): Promise<R> {
    this.running.push(label);
    this.draw();
    try {
      return await run();
    } catch (error) {
      const failure = toCommandError(error);
      if (FATAL_CODES.has(failure.code)) {
        this.state = { kind: 'failed', message: failure.message, code: failure.code };
      }
      throw error;
    } finally {
      this.running.splice(this.running.lastIndexOf(label), 1);
      // A command run from the palette shows Handoff is in use here: the item stays.
      this.shown = true;
      this.draw();
    }
  }

  /** ``server`` with each command shown as busy while it runs. */
  busyServer(server: HandoffServer, label: (command: ServerCommandId) => string = describeCommand): HandoffServer {
    return {
      execute: <R>(command: ServerCommandId, params: object, options?: ExecuteOptions) =>
        this.track(label(command), () => server.execute<R>(command, params, options)),
    };
  }
}

/** "handoff.prepare" → "running prepare". */
export function describeCommand(command: ServerCommandId): string {
  return `running ${command.replace(/^handoff\./, '')}`;
}
