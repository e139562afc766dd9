/** Entry point: wires the server connection, the palette commands, the preview pane and
 * the status bar together. */

import * as vscode from 'vscode';
import { HandoffClient } from './client';
import { HandoffCommands, PaletteCommand } from './commands';
import { showCommandError, toCommandError } from './errors';
import { RESTART_SETTINGS, SETTINGS_SECTION } from './settings';
import { PREVIEW_SCHEME } from './preview';
import type { Citation } from './protocol';
import { VscodeUi } from './vscodeUi';
import { HandoffStatus } from './status';
import { HandoffPreviewProvider, HandoffStatusBar, VscodeViews } from './vscodeViews';
import type { TreeNode } from './handoffTree';
import { HandoffTree, serverTreeSource, VIEW_ID } from './vscodeTree';

export interface HandoffExtensionApi {
  client: HandoffClient;
  commands: HandoffCommands;
}

export function activate(context: vscode.ExtensionContext): HandoffExtensionApi {
  const log = vscode.window.createOutputChannel('Handoff', { log: true });
  const ui = new VscodeUi();
  const client = new HandoffClient(context.extensionPath, log);
  let commands: HandoffCommands | undefined;
  const preview = new HandoffPreviewProvider(
    client,
    (digest) => commands?.shelf.get(digest),
    (digest) => commands?.shelf.committedAs(digest),
  );
  const views = new VscodeViews(preview);
  const statusBar = new HandoffStatusBar();
  const status = new HandoffStatus(statusBar, client);
  // Palette commands show the item busy while their server command runs.
  commands = new HandoffCommands(ui, status.busyServer(client), views, {
    startSessionAction: () => vscode.workspace.getConfiguration(SETTINGS_SECTION).get<string>('startSession.action'),
    checkEvidence: workspaceEvidence,
    preparedStore: context.workspaceState,
  });
  const palette = commands;

  context.subscriptions.push(
    log,
    client,
    preview,
    statusBar,
    vscode.workspace.registerTextDocumentContentProvider(PREVIEW_SCHEME, preview),
    vscode.window.onDidChangeActiveTextEditor((editor) => views.track(editor)),
    vscode.workspace.onDidCloseTextDocument((document) => views.forget(document)),
  );
  views.track(vscode.window.activeTextEditor);

  const register = (id: string, run: () => Promise<unknown>) =>
    context.subscriptions.push(vscode.commands.registerCommand(id, () => run()));
  // The Handoff view: its items pass themselves to the commands of their menus.
  const node = (value: unknown): TreeNode | undefined =>
    typeof value === 'object' && value !== null && 'kind' in value ? (value as TreeNode) : undefined;
  const tree = new HandoffTree(
    serverTreeSource(
      (command, params) => client.execute(command, params),
      () => vscode.workspace.getConfiguration(SETTINGS_SECTION).get<string>('stateFolder') || '.handoff',
    ),
  );
  context.subscriptions.push(
    tree,
    vscode.window.registerTreeDataProvider(VIEW_ID, tree),
    vscode.commands.registerCommand(PaletteCommand.refreshView, () => tree.refresh()),
    client.onDidChange(() => tree.refresh()),
  );
  const revisionOf = (value: unknown): string | undefined => {
    const n = node(value);
    return n?.kind === 'revision' ? n.revision.revision : undefined;
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
      return palette.generate(n?.kind === 'session' ? n.session : undefined);
    }),
    vscode.commands.registerCommand(PaletteCommand.continue, (value?: unknown) => {
      const revision = revisionOf(value);
      return palette.continue(revision ? { kind: 'revision', revision } : undefined);
    }),
    vscode.commands.registerCommand(PaletteCommand.acknowledge, (value?: unknown) => {
      const revision = revisionOf(value);
      return palette.acknowledge(revision ? { kind: 'revision', revision } : undefined);
    }),
    vscode.commands.registerCommand(PaletteCommand.showHandoff, (value?: unknown) => palette.showHandoff(revisionOf(value))),
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
    vscode.commands.registerCommand(PaletteCommand.prepareFromDraft, async (uri?: unknown) => palette.prepareFromDraft(documentOf(await draftUri(uri)))),
    vscode.commands.registerCommand(PaletteCommand.startSessionFromDraft, async (uri?: unknown, agent?: unknown) =>
      palette.startSessionFromDraft(documentOf(await draftUri(uri)), typeof agent === 'string' ? agent : undefined),
    ),
    vscode.commands.registerCommand(PaletteCommand.showChecks, () => vscode.commands.executeCommand('workbench.actions.view.problems')),
  );
  register(PaletteCommand.commit, () => palette.commit());

  register(PaletteCommand.recordOutcome, () => palette.recordOutcome());
  register(PaletteCommand.showContinuity, () => palette.showContinuity());
  register(PaletteCommand.showHistory, () => palette.showHistory());
  register(PaletteCommand.showLineage, () => palette.showLineage());

  register(PaletteCommand.savePrepared, () => palette.savePrepared());
  register(PaletteCommand.loadPrepared, () => palette.loadPrepared());
  register(PaletteCommand.showLog, async () => log.show(true));
  register(PaletteCommand.repairStore, () => palette.repairStore());
  register(PaletteCommand.restartServer, async () => {
    status.starting();
    try {
      await client.restart();
      log.info('Server restarted.');
      await status.refresh();
    } catch (error) {
      status.failed(error);
      await showCommandError(ui, error);
    }
  });

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

  // The item shows from activation: starting then ready or failed, or "no folder".
  if (vscode.workspace.workspaceFolders?.length) {
    status.starting();
    client.start().then(
      () => status.refresh(),
      (error) => {
        status.failed(error);
        void showCommandError(ui, error);
      },
    );
  } else {
    status.noFolder();
  }
  return { client, commands };
}

/** A typed citation looked up in the workspace folder: the file exists, and its cited
 * lines are in it. Sources are left to the server (it knows the scope's records). */
async function workspaceEvidence(citation: Citation): Promise<string | undefined> {
  const folder = vscode.workspace.workspaceFolders?.[0];
  if (citation.kind !== 'artifact' || !folder) {
    return undefined;
  }
  const uri = vscode.Uri.joinPath(folder.uri, citation.path);
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
