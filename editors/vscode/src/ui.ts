/** The thin wrapper over the VS Code window API that the command logic talks to,
 * so unit tests can drive it with a scripted stand-in instead of `vscode`. */

/** Structurally compatible with both vscode.CancellationToken and the JSON-RPC one. */
export interface CancellationTokenLike {
  readonly isCancellationRequested: boolean;
  onCancellationRequested(listener: () => void): { dispose(): unknown };
}

export interface PickItem<T> {
  label: string;
  description?: string;
  detail?: string;
  picked?: boolean;
  value: T;
}

export interface PickOptions {
  title: string;
  placeholder?: string;
}

export type Validate = (value: string) => string | undefined | Promise<string | undefined>;

export interface InputOptions {
  title: string;
  prompt?: string;
  placeholder?: string;
  value?: string;
  /** Returns a message when the value is not acceptable, else undefined; may look
   * things up (a cited file in the workspace) and answer later. */
  validate?: Validate;
}

/** Reports a server progress message and, when known, the absolute percentage. */
export type ProgressReporter = (message?: string, percentage?: number) => void;

export interface Ui {
  /** One choice from a quick pick; undefined when the user dismisses it. */
  pick<T>(items: PickItem<T>[], options: PickOptions): Promise<T | undefined>;
  /** A multi-select quick pick; undefined when dismissed, [] when accepted with none ticked. */
  pickMany<T>(items: PickItem<T>[], options: PickOptions): Promise<T[] | undefined>;
  /** An input box; undefined when dismissed. */
  input(options: InputOptions): Promise<string | undefined>;
  info(message: string, ...actions: string[]): Promise<string | undefined>;
  warn(message: string, ...actions: string[]): Promise<string | undefined>;
  error(message: string, ...actions: string[]): Promise<string | undefined>;
  /** A progress notification with a Cancel button around ``task``. */
  withProgress<R>(
    title: string,
    task: (report: ProgressReporter, token: CancellationTokenLike) => Promise<R>,
  ): Promise<R>;
  /** A file to save to / open from; undefined when dismissed. */
  saveFile(title: string, defaultName: string): Promise<string | undefined>;
  /** A file to open; `filters` as VS Code's (name -> extensions), default a prepared
   * handoff's JSON. */
  openFile(title: string, filters?: Record<string, string[]>): Promise<string | undefined>;
  /** Runs an editor command (opening settings, the log, ...). */
  runCommand(id: string, ...args: unknown[]): Promise<unknown>;
  /** Opens a new integrated terminal named ``name``, shows it and runs ``commandLine`` in it. */
  runInTerminal(name: string, commandLine: string): Promise<void>;
  copyToClipboard(text: string): Promise<void>;
}
