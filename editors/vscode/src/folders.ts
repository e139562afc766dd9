/** Which workspace folder a command acts on in a multi-root window, free of `vscode`: the
 * active editor's folder, else the folder chosen last, else the one folder, else asked.
 * One server serves every folder; each command names its folder with the `workspace` key. */

import type { ExecuteOptions, HandoffServer } from './commands';
import { HandoffCommandError } from './errors';
import { ServerCommand, ServerCommandId } from './protocol';

export interface FolderRef {
  /** The folder's URI as the server knows it (the `workspace` key). */
  uri: string;
  name: string;
  /** Its path on disk (the active editor's file is matched against it). */
  path: string;
}

function inside(file: string, folder: string): boolean {
  const f = folder.replace(/[\\/]+$/, '');
  return file === f || file.startsWith(`${f}/`) || file.startsWith(`${f}\\`);
}

/** The folder holding ``file`` (the innermost when folders nest), if any. */
export function folderOf(folders: readonly FolderRef[], file: string | undefined): FolderRef | undefined {
  if (!file) {
    return undefined;
  }
  return folders.filter((f) => inside(file, f.path)).sort((a, b) => b.path.length - a.path.length)[0];
}

export class FolderChoice {
  private chosen: string | undefined;
  private pinned: FolderRef | undefined;

  constructor(
    private readonly list: () => readonly FolderRef[],
    /** The active editor's file path, if it is a file. */
    private readonly activeFile: () => string | undefined,
    private readonly ask: (folders: readonly FolderRef[]) => Promise<FolderRef | undefined>,
  ) {}

  get multiRoot(): boolean {
    return this.list().length > 1;
  }

  /** The folder without asking: the active editor's, the one chosen last, else the first. */
  peek(): FolderRef | undefined {
    const folders = this.list();
    return this.pinned ?? folderOf(folders, this.activeFile()) ?? folders.find((f) => f.uri === this.chosen) ?? folders[0];
  }

  /** The folder a command acts on; with several folders and no editor in any, the folder
   * chosen before, else the user is asked (and the answer kept). Undefined: no folder, or
   * the question was dismissed. */
  async current(): Promise<FolderRef | undefined> {
    const folders = this.list();
    if (folders.length <= 1) {
      return folders[0];
    }
    const known = this.pinned ?? folderOf(folders, this.activeFile()) ?? folders.find((f) => f.uri === this.chosen);
    if (known) {
      return known;
    }
    const picked = await this.ask(folders);
    if (picked) {
      this.chosen = picked.uri;
    }
    return picked;
  }

  /** Runs ``run`` with every command and view of it on ``folder`` (a Handoff view item's
   * folder, or the one a palette command resolved first); the folder is also kept as the
   * one chosen, for what follows from it (a notification's button). */
  async within<R>(folder: FolderRef | undefined, run: () => Promise<R>): Promise<R> {
    const before = this.pinned;
    this.pinned = folder;
    if (folder) {
      this.chosen = folder.uri;
    }
    try {
      return await run();
    } finally {
      this.pinned = before;
    }
  }
}

/** ``server`` with every command sent to one folder: the one ``params.workspace`` already
 * names, else the folder ``choice`` gives. With one folder open nothing is added (the
 * server takes its only folder). */
export function folderServer(server: HandoffServer, choice: FolderChoice): HandoffServer {
  return {
    execute: async <R>(command: ServerCommandId, params: object, options?: ExecuteOptions): Promise<R> => {
      if (command === ServerCommand.ping || 'workspace' in params || !choice.multiRoot) {
        return server.execute<R>(command, params, options);
      }
      const folder = await choice.current();
      if (!folder) {
        throw new HandoffCommandError('cancelled', 'No workspace folder was chosen; nothing was run.');
      }
      return server.execute<R>(command, { ...params, workspace: folder.uri }, options);
    },
  };
}
