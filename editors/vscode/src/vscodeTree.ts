/** The Handoff view in the activity bar: `handoffTree.ts`'s nodes as VS Code tree items,
 * read over the server and from the state folder, refreshed on `handoff/didChange`. */

import { promises as fs } from 'fs';
import * as path from 'path';
import * as vscode from 'vscode';
import type { FolderRef } from './folders';
import { childrenOf, itemOf, ScopesResult, TreeNode, TreeSource } from './handoffTree';
import { HistoryRevision, ReportResult, ServerCommand, ServerCommandId, SessionsResult } from './protocol';

export const VIEW_ID = 'handoff.view';

type Call = <R>(command: ServerCommandId, params: object) => Promise<R>;

/** The tree's data: the server's answers, the drafts folder. A folder's URI goes to the
 * server as the `workspace` key (none in a one-folder window). */
export function serverTreeSource(call: Call, stateFolder: () => string, folders: () => readonly FolderRef[]): TreeSource {
  const at = (folder: string | undefined, params: object = {}) => (folder ? { ...params, workspace: folder } : params);
  return {
    folders,
    scopes: (folder) => call<ScopesResult>(ServerCommand.scopes, at(folder)),
    history: async (scope, folder) => {
      const report = await call<ReportResult<{ head?: string | null; revisions?: HistoryRevision[] }>>(ServerCommand.report, at(folder, { kind: 'history', scope }));
      const revisions = report.data?.revisions ?? [];
      return { head: report.data?.head ?? null, revisions };
    },
    sessions: (folder) => call<SessionsResult>(ServerCommand.sessions, at(folder)),
    drafts: async (folder) => {
      const list = folders();
      const root = (folder ? list.find((f) => f.uri === folder) : list[0])?.path;
      if (!root) {
        return [];
      }
      const drafts = path.join(root, stateFolder(), 'drafts');
      const names = await fs.readdir(drafts).catch(() => [] as string[]);
      // Names start with their UTC time: newest first by name.
      return names.filter((n) => n.endsWith('.md')).sort().reverse().map((n) => path.join(drafts, n));
    },
  };
}

export class HandoffTree implements vscode.TreeDataProvider<TreeNode>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<TreeNode | undefined>();
  readonly onDidChangeTreeData = this.changed.event;

  constructor(private readonly source: TreeSource) {}

  refresh(): void {
    this.changed.fire(undefined);
  }

  getTreeItem(node: TreeNode): vscode.TreeItem {
    const view = itemOf(node);
    const state = {
      none: vscode.TreeItemCollapsibleState.None,
      collapsed: vscode.TreeItemCollapsibleState.Collapsed,
      expanded: vscode.TreeItemCollapsibleState.Expanded,
    }[view.collapsible];
    const item = new vscode.TreeItem(view.label, state);
    item.description = view.description;
    item.tooltip = view.tooltip;
    item.contextValue = view.contextValue;
    if (view.file) {
      item.resourceUri = vscode.Uri.file(view.file);
      item.command = { command: 'vscode.open', title: 'Open', arguments: [item.resourceUri] };
    } else if (view.command) {
      item.command = view.command;
    }
    if (view.icon) {
      item.iconPath = new vscode.ThemeIcon(view.icon);
    }
    return item;
  }

  async getChildren(node?: TreeNode): Promise<TreeNode[]> {
    try {
      return await childrenOf(node, this.source);
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      return [{ kind: 'note', text: `Could not read this: ${message}` }];
    }
  }

  dispose(): void {
    this.changed.dispose();
  }
}
