/** The connection to the language server: finds its Python, starts/stops/restarts it, and
 * runs `workspace/executeCommand` with cancellation and work-done progress. */

import { randomUUID } from 'crypto';
import * as vscode from 'vscode';
import {
  DidChangeConfigurationNotification,
  ExecuteCommandParams,
  ExecuteCommandRequest,
  LanguageClient,
  LanguageClientOptions,
  RevealOutputChannelOn,
  ServerOptions,
  State,
  TransportKind,
  WorkDoneProgress,
  WorkDoneProgressBegin,
  WorkDoneProgressReport,
} from 'vscode-languageclient/node';
import type { ExecuteOptions, HandoffServer } from './commands';
import { HandoffCommandError, toCommandError } from './errors';
import { failureLevel, LevelledLog, LevelRouter } from './log';
import { DID_CHANGE_NOTIFICATION, DidChangeParams, ServerCommand, ServerCommandId } from './protocol';
import { expandPythonSetting, findBundle, findCheckout, resolveServerLaunch, ServerLaunch, ServerNotFoundError } from './python';
import { DEFAULT_CHECK_DOCUMENTS, SETTINGS_SECTION, serverSettings } from './settings';

/** The Python extension's active interpreter for ``resource``, when that extension is installed. */
async function pythonExtensionInterpreter(resource: vscode.Uri | undefined): Promise<string | undefined> {
  const extension = vscode.extensions.getExtension('ms-python.python');
  if (!extension) {
    return undefined;
  }
  const api = extension.isActive ? extension.exports : await extension.activate();
  const environments = api?.environments;
  const envPath = environments?.getActiveEnvironmentPath?.(resource);
  if (!envPath) {
    return undefined;
  }
  const resolved = await environments.resolveEnvironment?.(envPath);
  return resolved?.executable?.uri?.fsPath ?? envPath.path;
}

/** The connection's state changes; ``failed`` carries why it did not start. */
export type ClientState = { state: 'starting' } | { state: 'running' } | { state: 'stopped' } | { state: 'failed'; error: HandoffCommandError };

function levelled(log: vscode.LogOutputChannel): LevelledLog {
  return {
    trace: (m) => log.trace(m),
    debug: (m) => log.debug(m),
    info: (m) => log.info(m),
    warn: (m) => log.warn(m),
    error: (m) => log.error(m),
  };
}

export class HandoffClient implements HandoffServer, vscode.Disposable {
  private client: LanguageClient | undefined;
  private starting: Promise<LanguageClient> | undefined;
  private restarting: Promise<void> | undefined;
  private readonly didChangeEmitter = new vscode.EventEmitter<DidChangeParams>();
  private readonly stateEmitter = new vscode.EventEmitter<ClientState>();
  /** Fired on the server's `handoff/didChange` notification. */
  readonly onDidChange = this.didChangeEmitter.event;
  readonly onDidChangeState = this.stateEmitter.event;
  launch: ServerLaunch | undefined;

  constructor(
    private readonly extensionPath: string,
    private readonly log: vscode.LogOutputChannel,
  ) {}

  private folder(): vscode.WorkspaceFolder {
    const folder = vscode.workspace.workspaceFolders?.[0];
    if (!folder) {
      throw new HandoffCommandError('no_workspace', 'Handoff works on a workspace folder: open a folder first.');
    }
    return folder;
  }

  private settings() {
    const config = vscode.workspace.getConfiguration(SETTINGS_SECTION, this.folder().uri);
    return serverSettings((key) => config.get(key));
  }

  get running(): boolean {
    return this.client?.state === State.Running;
  }

  /** Starts the server (once; concurrent callers share the start). */
  start(): Promise<LanguageClient> {
    if (this.client && this.client.state === State.Running) {
      return Promise.resolve(this.client);
    }
    this.starting ??= this.doStart().finally(() => {
      this.starting = undefined;
    });
    return this.starting;
  }

  private async doStart(): Promise<LanguageClient> {
    this.stateEmitter.fire({ state: 'starting' });
    if (this.client) {
      await this.stop();
    }
    try {
      const folder = this.folder();
      const config = vscode.workspace.getConfiguration(SETTINGS_SECTION, folder.uri);
      const launch = await resolveServerLaunch({
        settingPython: expandPythonSetting(config.get<string>('server.python') ?? '', folder.uri.fsPath),
        pythonExtension: () => pythonExtensionInterpreter(folder.uri),
        bundle: findBundle(this.extensionPath),
        checkout: findCheckout(this.extensionPath),
      });
      this.launch = launch;
      this.log.info(`Starting ${launch.command} ${launch.args.join(' ')} (interpreter from ${launch.origin}, lsp_server ${launch.version} from the ${launch.packageFrom})`);
      const serverOptions: ServerOptions = {
        command: launch.command,
        args: launch.args,
        transport: TransportKind.stdio,
        options: { env: launch.env, cwd: folder.uri.fsPath },
      };
      const clientOptions: LanguageClientOptions = {
        // Handoff documents of this folder: the server checks their claims as they are
        // edited (diagnostics, hover, go to the session entry, links, a lens that counts).
        // One server for every folder of the window (the client sends them all and their
        // changes; each command names its folder with the `workspace` key). The server's
        // interpreter, working directory and settings are the first folder's.
        documentSelector: (vscode.workspace.workspaceFolders ?? [folder])
          .filter((f) => f.uri.scheme === 'file')
          .flatMap((f) => handoffDocuments(f.uri.fsPath, this.settings().checkDocuments, this.settings().stateFolder)),
        // The client's "[Info  - 12:00:00] …" lines and the server's stderr
        // ("2026-… WARNING …") at their own level, without a second timestamp.
        outputChannel: this.levelledChannel(),
        // The LSP trace ("handoff.trace.server") without its second timestamp, at info:
        // the user asked for it, whatever the channel's own level.
        traceOutputChannel: this.levelledChannel(true),
        revealOutputChannelOn: RevealOutputChannelOn.Never,
        initializationOptions: () => this.settings(),
        initializationFailedHandler: (error) => {
          this.log.error(`The server failed to initialise: ${error instanceof Error ? error.message : String(error)}`);
          return false;
        },
      };
      const client = new LanguageClient('handoff', 'Handoff', serverOptions, clientOptions);
      client.onNotification(DID_CHANGE_NOTIFICATION, (params: DidChangeParams) => this.didChangeEmitter.fire(params));
      client.onDidChangeState((event) => {
        if (event.newState === State.Stopped) {
          // Stopped by stop()/restart() (this.client moved on), or it died on its own.
          this.stateEmitter.fire(
            this.client === client
              ? { state: 'failed', error: new HandoffCommandError('server_unavailable', 'The Handoff language server stopped. See the "Handoff" log, or run "Handoff: Restart Server".') }
              : { state: 'stopped' },
          );
        } else if (event.newState === State.Running) {
          this.stateEmitter.fire({ state: 'running' });
        }
      });
      this.client = client;
      await client.start();
      this.stateEmitter.fire({ state: 'running' });
      client
        .sendRequest(ExecuteCommandRequest.type, { command: ServerCommand.ping, arguments: [{}] })
        .then(
          (pong) => this.log.info(`Server ready: ${JSON.stringify(pong)}`),
          (error) => this.log.warn(`handoff.ping failed: ${toCommandError(error).message}`),
        );
      return client;
    } catch (error) {
      const failure = this.startFailure(error);
      this.stateEmitter.fire({ state: 'failed', error: failure });
      throw failure;
    }
  }

  private startFailure(error: unknown): HandoffCommandError {
    if (error instanceof ServerNotFoundError) {
      this.log.error(error.message);
      return new HandoffCommandError('server_not_found', error.message, { attempts: error.attempts });
    }
    if (error instanceof HandoffCommandError) {
      this.log.error(error.message);
      return error;
    }
    const message = error instanceof Error ? error.message : String(error);
    this.log.error(`The Handoff server did not start: ${message}`);
    return new HandoffCommandError('server_unavailable', `The Handoff language server did not start: ${message}. See the "Handoff" log.`);
  }

  /** An output channel that sends each line to the log at its level (log.ts). */
  private levelledChannel(trace = false): vscode.OutputChannel {
    const log = this.log;
    const router = new LevelRouter(trace ? { ...levelled(log), trace: (m) => log.info(m), debug: (m) => log.info(m) } : levelled(log));
    return {
      name: this.log.name,
      append: (value: string) => router.append(value),
      appendLine: (value: string) => router.appendLine(value),
      replace: (value: string) => router.appendLine(value),
      clear: () => this.log.clear(),
      show: ((preserveFocus?: boolean) => this.log.show(preserveFocus)) as vscode.OutputChannel['show'],
      hide: () => this.log.hide(),
      dispose: () => router.flush(),
    };
  }

  async stop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (client && client.state !== State.Stopped) {
      try {
        await client.stop(5000);
      } catch (error) {
        this.log.warn(`Stopping the server: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
  }

  /** Stops and starts again with fresh settings; concurrent restarts collapse into one. */
  restart(): Promise<void> {
    this.restarting ??= (async () => {
      try {
        await this.starting?.catch(() => undefined);
        await this.stop();
        await this.start();
      } finally {
        this.restarting = undefined;
      }
    })();
    return this.restarting;
  }

  /** Pushes the `handoff` settings to a running server. */
  async pushSettings(): Promise<void> {
    if (this.client && this.running) {
      await this.client.sendNotification(DidChangeConfigurationNotification.type, { settings: { [SETTINGS_SECTION]: this.settings() } });
      this.log.info('Settings pushed to the server.');
    }
  }

  async execute<R>(command: ServerCommandId, params: object, options: ExecuteOptions = {}): Promise<R> {
    await this.restarting;
    const client = await this.start();
    const workDoneToken = options.progress ? `handoff-${randomUUID()}` : undefined;
    const progress = options.progress;
    const subscription =
      workDoneToken && progress
        ? client.onProgress(WorkDoneProgress.type, workDoneToken, (value) => {
            if (value.kind === 'begin') {
              // The notification already carries the client's title; show only the message.
              const begin = value as WorkDoneProgressBegin;
              if (begin.message !== undefined || begin.percentage !== undefined) {
                progress(begin.message, begin.percentage);
              }
            } else if (value.kind === 'report') {
              const report = value as WorkDoneProgressReport;
              progress(report.message, report.percentage);
            }
          })
        : undefined;
    const request: ExecuteCommandParams = { command, arguments: [params], ...(workDoneToken ? { workDoneToken } : {}) };
    this.log.debug(`→ ${command}`);
    try {
      return (await client.sendRequest(ExecuteCommandRequest.type, request, options.token as vscode.CancellationToken | undefined)) as R;
    } catch (error) {
      const failure = toCommandError(error);
      this.log[failureLevel(failure.code)](`${command} ${failure.cancelled ? 'cancelled' : 'refused'}: ${failure.code}: ${failure.message}`);
      throw failure;
    } finally {
      subscription?.dispose();
    }
  }

  dispose(): void {
    void this.stop();
    this.didChangeEmitter.dispose();
    this.stateEmitter.dispose();
  }
}

/** The handoff documents of one folder, as a document selector: drafts and started texts
 * under `.handoff/`, `HANDOFF.md` and `handoff*.md` (the server checks their claims). */
export function handoffDocuments(
  folder: string,
  globs: readonly string[] = DEFAULT_CHECK_DOCUMENTS,
  stateFolder = '.handoff',
): { scheme: string; language: string; pattern: string }[] {
  const root = folder.replace(/\\/g, '/').replace(/\/$/, '');
  const state = stateFolder.replace(/\\/g, '/').replace(/^\.\//, '').replace(/\/$/, '');
  return [
    { scheme: 'file', language: 'markdown', pattern: `${root}/**/${state}/{drafts,started}/*.md` },
    ...globs.map((glob) => ({ scheme: 'file', language: 'markdown', pattern: `${root}/**/${glob.replace(/^(\*\*\/)+/, '')}` })),
  ];
}
