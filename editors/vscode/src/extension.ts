/** Entry point: wires the server connection, the palette commands, the preview pane and
 * the status bar together. */

import * as vscode from 'vscode';
import { HandoffClient } from './client';
import { HandoffCommands, PaletteCommand } from './commands';
import { showCommandError, toCommandError } from './errors';
import { RESTART_SETTINGS, SETTINGS_SECTION } from './settings';
import { placeOf, PREVIEW_SCHEME, scopeOfView, viewFromPath, viewPathOf } from './preview';
import { handoffLinks, LinkPlace, MarkdownItLike, targetOfPath } from './previewLinks';
import type { Citation } from './protocol';
import { VscodeUi } from './vscodeUi';
import { HandoffStatus } from './status';
import { HandoffPreviewProvider, HandoffStatusBar, VscodeViews } from './vscodeViews';
import type { TreeNode } from './handoffTree';
import { FolderChoice, FolderRef, folderServer } from './folders';
import { handoffPresence } from './status';
import { HandoffTree, serverTreeSource, VIEW_ID } from './vscodeTree';

export interface HandoffExtensionApi {
  client: HandoffClient;
  commands: HandoffCommands;
  /** The Markdown preview's hook (`markdown.markdownItPlugins`): the Handoff previews'
   * cited lines and records as links the extension follows (`previewLinks.ts`). */
  extendMarkdownIt<T extends MarkdownItLike>(md: T): T;
}

export function activate(context: vscode.ExtensionContext): HandoffExtensionApi {
  const log = vscode.window.createOutputChannel('Handoff', { log: true });
  const ui = new VscodeUi();
  const client = new HandoffClient(context.extensionPath, log);
  let commands: HandoffCommands | undefined;
  // One server for the window; each command names its folder (multi-root: the active
  // editor's folder, else the one chosen last, else asked).
  const choice = new FolderChoice(
    workspaceFolderRefs,
    () => {
      const uri = vscode.window.activeTextEditor?.document.uri;
      return uri?.scheme === 'file' ? uri.fsPath : undefined;
    },
    async () => {
      const picked = await vscode.window.showWorkspaceFolderPick({ placeHolder: 'Handoff: act on which workspace folder?', ignoreFocusOut: true });
      return picked ? workspaceFolderRefs().find((f) => f.uri === picked.uri.toString()) : undefined;
    },
  );
  const multiFolder = () => (choice.multiRoot ? choice.peek() : undefined);
  const preview = new HandoffPreviewProvider(
    client,
    (digest) => commands?.shelf.get(digest),
    (digest) => commands?.shelf.committedAs(digest),
    multiFolder,
  );
  const views = new VscodeViews(preview, () => choice.peek());
  ui.folder = () => {
    const folder = choice.peek();
    return folder ? vscode.Uri.parse(folder.uri) : undefined;
  };
  const statusBar = new HandoffStatusBar();
  const status = new HandoffStatus(statusBar, client, multiFolder);
  // Palette commands show the item busy while their server command runs.
  commands = new HandoffCommands(ui, status.busyServer(folderServer(client, choice)), views, {
    startSessionAction: () => vscode.workspace.getConfiguration(SETTINGS_SECTION).get<string>('startSession.action'),
    checkEvidence: (citation) => workspaceEvidence(citation, choice.peek()),
    preparedStore: context.workspaceState,
  });
  const palette = commands;

  context.subscriptions.push(
    log,
    client,
    preview,
    statusBar,
    vscode.workspace.registerTextDocumentContentProvider(PREVIEW_SCHEME, preview),
    vscode.window.onDidChangeActiveTextEditor((editor) => {
      void preview.follow(editor, workspaceFolderRefs);
      views.track(editor);
      if (choice.multiRoot && status.current.kind === 'ready') {
        void status.refresh(); // the item is of the active editor's folder
      }
    }),
    vscode.workspace.onDidCloseTextDocument((document) => views.forget(document)),
  );
  views.track(vscode.window.activeTextEditor);
  // Where a Handoff preview's links are rendered (other documents: undefined, untouched).
  const linkPlace = (env: unknown): LinkPlace | undefined => {
    const uri = (env as { currentDocument?: vscode.Uri } | undefined)?.currentDocument;
    if (!uri || uri.scheme !== PREVIEW_SCHEME || targetOfPath(uri.path)) {
      return undefined;
    }
    const place = placeOf(uri.query);
    const scope = scopeOfView(viewFromPath(viewPathOf(uri.path, uri.query), (digest) => commands?.shelf.get(digest)), place);
    return { docPath: uri.path, ...(place.folder ? { folder: place.folder } : {}), ...(scope ? { scope } : {}) };
  };
  const api: HandoffExtensionApi = { client, commands: palette, extendMarkdownIt: (md) => handoffLinks(md, linkPlace) };

  // The Handoff view: its items pass themselves to the commands of their menus.
  const node = (value: unknown): TreeNode | undefined =>
    typeof value === 'object' && value !== null && 'kind' in value ? (value as TreeNode) : undefined;
  // A command runs on one folder: a view item's, else the one the choice gives (asked
  // once, before anything runs, when several folders are open and no editor says which).
  const inFolder = async <R>(value: unknown, run: () => Promise<R>): Promise<R | undefined> => {
    const n = node(value);
    const uri = n?.kind === 'folder' ? n.folder.uri : n && 'folder' in n ? n.folder : undefined;
    const folder = uri ? workspaceFolderRefs().find((f) => f.uri === uri) : await choice.current();
    if (!folder && choice.multiRoot) {
      return undefined;
    }
    try {
      return await choice.within(folder, run);
    } finally {
      if (choice.multiRoot && status.visible) {
        void status.refresh(); // the item is of the folder acted on last
      }
    }
  };
  const register = (id: string, run: () => Promise<unknown>) =>
    context.subscriptions.push(vscode.commands.registerCommand(id, (value?: unknown) => inFolder(value, run)));
  const tree = new HandoffTree(
    serverTreeSource(
      (command, params) => client.execute(command, params),
      () => vscode.workspace.getConfiguration(SETTINGS_SECTION).get<string>('stateFolder') || '.handoff',
      workspaceFolderRefs,
    ),
  );
  context.subscriptions.push(
    tree,
    vscode.window.registerTreeDataProvider(VIEW_ID, tree),
    vscode.commands.registerCommand(PaletteCommand.refreshView, () => tree.refresh()),
    client.onDidChange(() => tree.refresh()),
  );
  const revisionOf = (value: unknown): { kind: 'revision'; revision: string; scope?: string } | undefined => {
    const n = node(value);
    return n?.kind === 'revision' ? { kind: 'revision', revision: n.revision.revision, ...(n.scope ? { scope: n.scope } : {}) } : undefined;
  };
  const draftUri = async (value: unknown): Promise<unknown> => {
    const n = node(value);
    if (n?.kind !== 'draft') {
      return value;
    }
    const doc = await vscode.workspace.openTextDocument(vscode.Uri.file(n.path));
    await vscode.window.showTextDocument(doc, { preview: false });
    return doc.uri;
  };
  context.subscriptions.push(
    vscode.commands.registerCommand(PaletteCommand.generate, (value?: unknown) => {
      const n = node(value);
      return inFolder(value, () => palette.generate(n?.kind === 'session' ? n.session : undefined));
    }),
    vscode.commands.registerCommand(PaletteCommand.continue, (value?: unknown) => inFolder(value, () => palette.continue(revisionOf(value)))),
    vscode.commands.registerCommand(PaletteCommand.acknowledge, (value?: unknown) => inFolder(value, () => palette.acknowledge(revisionOf(value)))),
    vscode.commands.registerCommand(PaletteCommand.showHandoff, (value?: unknown) => {
      const target = revisionOf(value);
      return inFolder(value, () => palette.showHandoff(target?.revision, target?.scope));
    }),
  );
  register(PaletteCommand.recordContract, () => palette.recordContract());
  register(PaletteCommand.recordWork, () => palette.recordWork());
  register(PaletteCommand.handoffCurrentWork, () => palette.handoffCurrentWork());
  // From the editor title the button passes its editor's URI, and a lens of the server
  // its document's URI (a string) and the agent: that document, even when another editor
  // has the focus.
  const documentOf = (uri: unknown): string | undefined => {
    const id = uri instanceof vscode.Uri ? uri.toString() : typeof uri === 'string' ? uri : undefined;
    return id !== undefined && views.draftById(id) ? id : undefined;
  };
  context.subscriptions.push(
    vscode.commands.registerCommand(PaletteCommand.prepareFromDraft, async (uri?: unknown) => {
      const document = documentOf(await draftUri(uri));
      return inFolder(uri, () => palette.prepareFromDraft(document));
    }),
    vscode.commands.registerCommand(PaletteCommand.startSessionFromDraft, async (uri?: unknown, agent?: unknown) => {
      const document = documentOf(await draftUri(uri));
      return inFolder(uri, () => palette.startSessionFromDraft(document, typeof agent === 'string' ? agent : undefined));
    }),
    vscode.commands.registerCommand(PaletteCommand.showChecks, () => vscode.commands.executeCommand('workbench.actions.view.problems')),
  );
  register(PaletteCommand.commit, () => palette.commit());

  register(PaletteCommand.recordOutcome, () => palette.recordOutcome());
  register(PaletteCommand.showContinuity, () => palette.showContinuity());
  register(PaletteCommand.showHistory, () => palette.showHistory());
  register(PaletteCommand.showLineage, () => palette.showLineage());

  register(PaletteCommand.savePrepared, () => palette.savePrepared());
  register(PaletteCommand.loadPrepared, () => palette.loadPrepared());
  context.subscriptions.push(vscode.commands.registerCommand(PaletteCommand.showLog, async () => log.show(true)));
  register(PaletteCommand.repairStore, () => palette.repairStore());
  const restartServer = async () => {
    status.starting();
    try {
      await client.restart();
      log.info('Server restarted.');
      await status.refresh();
    } catch (error) {
      status.failed(error);
      await showCommandError(ui, error);
    }
  };
  context.subscriptions.push(vscode.commands.registerCommand(PaletteCommand.restartServer, restartServer));

  context.subscriptions.push(
    client.onDidChange((change) => {
      log.debug(`handoff/didChange: ${change.command} in ${change.scope}`);
      void preview.refresh();
      void status.refresh();
    }),
    client.onDidChangeState((change) => {
      if (change.state === 'starting') {
        status.starting();
      } else if (change.state === 'running') {
        void status.refresh();
      } else if (change.state === 'failed') {
        status.failed(change.error);
      }
    }),
  );

  let restartTimer: NodeJS.Timeout | undefined;
  context.subscriptions.push(
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (!event.affectsConfiguration(SETTINGS_SECTION)) {
        return;
      }
      if (RESTART_SETTINGS.some((key) => event.affectsConfiguration(key))) {
        clearTimeout(restartTimer);
        restartTimer = setTimeout(() => void vscode.commands.executeCommand(PaletteCommand.restartServer), 500);
        return;
      }
      void client
        .pushSettings()
        .then(() => Promise.all([status.refresh(), preview.refresh()]))
        .catch((error) => log.warn(`Pushing settings: ${toCommandError(error).message}`));
    }),
    { dispose: () => clearTimeout(restartTimer) },
  );

  context.subscriptions.push(
    vscode.workspace.onDidChangeWorkspaceFolders(() => {
      tree.refresh();
      if (status.visible) {
        void status.refresh();
      }
    }),
  );

  // The item shows from activation (starting, then ready or failed) when a folder has
  // its state folder; else it stays hidden until the server finds agent sessions of a
  // folder (checked now, when the window gains focus and every 10 s, never creating a
  // store) or a Handoff command is run.
  const stateFolder = () => vscode.workspace.getConfiguration(SETTINGS_SECTION).get<string>('stateFolder') || '.handoff';
  const hasStore = async (folder: FolderRef): Promise<boolean> =>
    vscode.workspace.fs.stat(vscode.Uri.joinPath(vscode.Uri.parse(folder.uri), stateFolder())).then(
      () => true,
      () => false,
    );
  if (!vscode.workspace.workspaceFolders?.length) {
    status.noFolder();
    return api;
  }
  let watching: NodeJS.Timeout | undefined;
  let looking = false;
  let reported = false;
  const lookForHandoff = async (): Promise<void> => {
    if (status.visible) {
      clearInterval(watching);
      return;
    }
    if (looking) {
      return;
    }
    looking = true;
    try {
      const found = await handoffPresence(client, workspaceFolderRefs(), hasStore);
      if (!found && !reported) {
        reported = true;
        log.info(`No ${stateFolder()} folder and no agent session in this window's folders yet: the status item appears when one does (looked again every 10 s).`);
      }
      if (found && !status.visible) {
        log.info(`Showing Handoff: ${found.folder.name} has ${found.why === 'store' ? `its ${stateFolder()} folder` : 'agent sessions'}.`);
        status.reveal();
        clearInterval(watching);
        await status.refresh();
      }
    } catch (error) {
      log.debug(`Looking for agent sessions: ${toCommandError(error).message}`);
    } finally {
      looking = false;
    }
  };
  void (async () => {
    const stores = await Promise.all(workspaceFolderRefs().map(hasStore));
    if (stores.some(Boolean)) {
      status.starting();
      client.start().then(
        () => status.refresh(),
        (error) => {
          status.failed(error);
          void showCommandError(ui, error);
        },
      );
      return;
    }
    status.conceal();
    watching = setInterval(() => void lookForHandoff(), 10_000);
    context.subscriptions.push(
      { dispose: () => clearInterval(watching) },
      vscode.window.onDidChangeWindowState((state) => (state.focused ? void lookForHandoff() : undefined)),
    );
    await lookForHandoff();
  })();
  return api;
}

/** The window's workspace folders on the local file system, as the server knows them. */
function workspaceFolderRefs(): FolderRef[] {
  return (vscode.workspace.workspaceFolders ?? [])
    .filter((f) => f.uri.scheme === 'file')
    .map((f) => ({ uri: f.uri.toString(), name: f.name, path: f.uri.fsPath }));
}

/** A typed citation looked up in the workspace folder: the file exists, and its cited
 * lines are in it. Sources are left to the server (it knows the scope's records). */
async function workspaceEvidence(citation: Citation, folder: FolderRef | undefined): Promise<string | undefined> {
  if (citation.kind !== 'artifact' || !folder) {
    return undefined;
  }
  const uri = vscode.Uri.joinPath(vscode.Uri.parse(folder.uri), citation.path);
  let stat: vscode.FileStat;
  try {
    stat = await vscode.workspace.fs.stat(uri);
  } catch {
    return `${citation.path} is not in the workspace folder ${folder.name}.`;
  }
  if (stat.type & vscode.FileType.Directory) {
    return `${citation.path} is a folder: cite a file.`;
  }
  if (citation.lines) {
    const text = new TextDecoder().decode(await vscode.workspace.fs.readFile(uri));
    const count = text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
    if (citation.lines[1] > count) {
      return `${citation.path} has ${count} line${count === 1 ? '' : 's'}: lines ${citation.lines[0]}–${citation.lines[1]} are not in it.`;
    }
  }
  return undefined;
}

export function deactivate(): void {
  // The client is disposed with the extension's subscriptions.
}
