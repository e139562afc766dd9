/** What the user sees in VS Code: the Markdown preview pane (a content provider on the
 * `handoff-preview:` scheme), editable drafts, and the status bar item. */

import { readFileSync } from 'fs';
import * as path from 'path';
import * as vscode from 'vscode';
import type { DraftDocument, DraftOrigin, HandoffServer, ReportView, Views } from './commands';
import { HandoffDraft, PreparedHandoff } from './protocol';
import type { FolderRef } from './folders';
import { placeOf, PREVIEW_SCHEME, previewPath, previewQuery, renderPreview, viewPathOf } from './preview';
import { linkTitle, targetOfPath } from './previewLinks';
import type { StatusSink, StatusView } from './status';

export class HandoffPreviewProvider implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly changeEmitter = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changeEmitter.event;
  /** Previews opened in this window, refreshed on every server change. */
  private readonly opened = new Map<string, vscode.Uri>();

  constructor(
    private readonly server: HandoffServer,
    private readonly lookupPrepared: (digest: string) => PreparedHandoff | undefined,
    private readonly committedAs: (digest: string) => string | undefined = () => undefined,
    /** In a multi-root window, the folder a new preview is of (undefined: one folder). */
    private readonly folder: () => FolderRef | undefined = () => undefined,
  ) {}

  provideTextDocumentContent(uri: vscode.Uri, token: vscode.CancellationToken): Promise<string> {
    const link = targetOfPath(uri.path);
    if (link) {
      // A link's stand-in: shown for a moment, until the link is followed.
      return Promise.resolve(`${linkTitle(link)}…\n`);
    }
    this.opened.set(uri.toString(), uri);
    // The folder's name starts the tab's title in a multi-root window; the view is the rest.
    return renderPreview(this.server, viewPathOf(uri.path, uri.query), this.lookupPrepared, token, this.committedAs, placeOf(uri.query));
  }

  uriFor(view: ReportView, folder = this.folder()): vscode.Uri {
    let p = previewPath(view);
    let query = previewQuery(view, folder?.uri);
    if (folder) {
      const at = p.lastIndexOf('/');
      p = `${p.slice(0, at + 1)}${folder.name} · ${p.slice(at + 1)}`;
      query = `${query}&name=${encodeURIComponent(folder.name)}`;
    }
    return vscode.Uri.from({ scheme: PREVIEW_SCHEME, path: p, query });
  }

  /** Re-renders every open preview (the server reported a change). */
  async refresh(): Promise<void> {
    for (const uri of this.opened.values()) {
      this.changeEmitter.fire(uri);
    }
    if (this.opened.size > 0) {
      await vscode.commands.executeCommand('markdown.preview.refresh');
    }
  }

  /** The Markdown preview tabs showing ``uri`` (by their title), or any Handoff preview. */
  private previewTabs(uri?: vscode.Uri): vscode.Tab[] {
    const titles = new Set(
      (uri ? [uri] : [...this.opened.values()]).flatMap((u) => {
        const name = path.posix.basename(u.path);
        return [`[Preview] ${name}`, `Preview ${name}`];
      }),
    );
    return vscode.window.tabGroups.all.flatMap((group) =>
      group.tabs.filter((tab) => tab.input instanceof vscode.TabInputWebview && /markdown\.preview$/.test(tab.input.viewType) && titles.has(tab.label)),
    );
  }

  /** Closes the preview of ``from`` if one is open, then shows ``to`` (in the group
   * the previews are in). Nothing is opened when ``from`` was not shown. */
  async replace(from: ReportView, to: ReportView): Promise<void> {
    const tabs = this.previewTabs(this.uriFor(from));
    if (tabs.length === 0) {
      return;
    }
    await vscode.window.tabGroups.close(tabs);
    this.opened.delete(this.uriFor(from).toString());
    await this.show(to);
  }

  /** One preview per view: an open one is refreshed and revealed; a new one opens in the
   * group that holds the other Handoff previews (else beside the editor), locked so it
   * stays on its report when another Markdown editor becomes active. */
  async show(view: ReportView, folder = this.folder()): Promise<void> {
    const uri = this.uriFor(view, folder);
    const existing = this.previewTabs(uri)[0];
    if (existing) {
      this.changeEmitter.fire(uri);
      await vscode.commands.executeCommand('markdown.preview.refresh');
      await focusGroup(existing.group.viewColumn);
      await vscode.commands.executeCommand('workbench.action.openEditorAtIndex', existing.group.tabs.indexOf(existing));
      return;
    }
    if (this.opened.has(uri.toString())) {
      this.changeEmitter.fire(uri);
    }
    await vscode.workspace.openTextDocument(uri);
    const column = this.previewTabs()[0]?.group.viewColumn;
    // The Markdown extension opens "to the side" in the group after the active one, and
    // a plain (not to-side) preview in the active text editor's group (the first when
    // a preview is active): focus the group before the previews' own one.
    // (Run by name: the Markdown extension may not be active yet, and running its
    // command activates it.)
    try {
      if (column === vscode.ViewColumn.One) {
        await focusGroup(column);
        // (markdown.showPreview's third argument is its preview settings.)
        await vscode.commands.executeCommand('markdown.showPreview', uri, undefined, { locked: true });
        return;
      }
      if (column !== undefined) {
        await focusGroup(column - 1);
      }
      await vscode.commands.executeCommand('markdown.showLockedPreviewToSide', uri);
    } catch {
      await vscode.commands.executeCommand('markdown.showPreviewToSide', uri);
    }
  }

  /** Follows a preview's link (`previewLinks.ts`) when ``editor`` shows its stand-in:
   * cited lines open selected in that editor's group (the cursor on the first line),
   * a record in a preview of its own; the stand-in's tab is closed. */
  async follow(editor: vscode.TextEditor | undefined, folders: () => FolderRef[]): Promise<void> {
    const uri = editor?.document.uri;
    const target = uri?.scheme === PREVIEW_SCHEME ? targetOfPath(uri.path) : undefined;
    if (!editor || !uri || !target) {
      return;
    }
    const all = folders();
    const folder = all.find((f) => f.uri === target.folder) ?? (target.folder ? undefined : all[0]);
    const standIns = () => vscode.window.tabGroups.all.flatMap((g) => g.tabs.filter((t) => t.input instanceof vscode.TabInputText && t.input.uri.toString() === uri.toString()));
    try {
      if (target.kind === 'source') {
        await vscode.window.tabGroups.close(standIns());
        await this.show({ kind: 'source', source: target.source, ...(target.scope ? { scope: target.scope } : {}) }, target.folder ? folder : this.folder());
        return;
      }
      if (!folder) {
        throw new Error(`the workspace folder of ${target.path} is no longer open`);
      }
      const doc = await vscode.workspace.openTextDocument(vscode.Uri.joinPath(vscode.Uri.parse(folder.uri), target.path));
      const [first, last] = target.lines.map((n) => Math.min(n, doc.lineCount) - 1);
      const range = new vscode.Range(first, 0, last, doc.lineAt(last).text.length);
      const shown = await vscode.window.showTextDocument(doc, { viewColumn: editor.viewColumn, selection: range, preview: true });
      // The cursor on the first cited line (a shown range puts it at the end).
      shown.selection = new vscode.Selection(range.end, range.start);
      shown.revealRange(range, vscode.TextEditorRevealType.InCenterIfOutsideViewport);
      await vscode.window.tabGroups.close(standIns());
    } catch (error) {
      await vscode.window.tabGroups.close(standIns());
      void vscode.window.showErrorMessage(`Handoff: could not open ${target.kind === 'source' ? target.source : target.path}: ${error instanceof Error ? error.message : String(error)}`);
    }
  }

  dispose(): void {
    this.changeEmitter.dispose();
  }
}

const FOCUS_GROUP = ['First', 'Second', 'Third', 'Fourth', 'Fifth', 'Sixth', 'Seventh', 'Eighth'].map((n) => `workbench.action.focus${n}EditorGroup`);

/** Focuses the editor group in ``column`` (1-based, as `ViewColumn`). */
async function focusGroup(column: number): Promise<void> {
  const command = FOCUS_GROUP[column - 1];
  if (command) {
    await vscode.commands.executeCommand(command);
  }
}

/** The context key that is true while the active editor is a draft Generate opened
 * (it shows "Start Session from Draft" in the editor title). */
export const DRAFT_CONTEXT_KEY = 'handoff.activeEditorIsDraft';

export class VscodeViews implements Views {
  /** Structured drafts from Generate, by the URI of the Markdown document they opened in. */
  private readonly drafts = new Map<string, { draft: HandoffDraft; origin: DraftOrigin }>();
  private lastMarkdown: vscode.TextDocument | undefined;
  private draftContext: boolean | undefined;

  constructor(
    private readonly preview: HandoffPreviewProvider,
    /** The folder the running command acts on (drafts' paths are relative to it). */
    private readonly folder: () => FolderRef | undefined = () => undefined,
  ) {}

  /** Remembers the last Markdown editor, for commands run while the preview has focus,
   * and sets the draft context key for the editor-title button. */
  track(editor: vscode.TextEditor | undefined): void {
    if (editor && editor.document.languageId === 'markdown' && editor.document.uri.scheme !== PREVIEW_SCHEME) {
      this.lastMarkdown = editor.document;
    }
    const isDraft = !!editor && (this.drafts.has(editor.document.uri.toString()) || savedDraft(editor.document.uri) !== undefined);
    if (isDraft !== this.draftContext) {
      this.draftContext = isDraft;
      void vscode.commands.executeCommand('setContext', DRAFT_CONTEXT_KEY, isDraft);
    }
  }

  /** A closed draft is forgotten. */
  forget(document: vscode.TextDocument): void {
    this.drafts.delete(document.uri.toString());
    if (this.lastMarkdown === document) {
      this.lastMarkdown = undefined;
    }
  }

  showReport(view: ReportView): Promise<void> {
    return this.preview.show(view);
  }

  replaceReport(from: ReportView, to: ReportView): Promise<void> {
    return this.preview.replace(from, to);
  }

  refresh(): Promise<void> {
    return this.preview.refresh();
  }

  /** Opens the draft the server saved (`.handoff/drafts/<time>-<generation>.md`): it has
   * a name, Save keeps the edits, the server checks its claims as it is edited, and it is
   * still a draft after a reload. A server that saved none: an untitled document. */
  async openDraft(document: string, draft: HandoffDraft, origin: DraftOrigin = {}): Promise<string> {
    const folder = this.folder();
    let doc: vscode.TextDocument | undefined;
    if (origin.draftPath && folder) {
      doc = await vscode.workspace.openTextDocument(vscode.Uri.joinPath(vscode.Uri.parse(folder.uri), origin.draftPath)).then(
        (opened) => opened,
        () => undefined,
      );
    }
    doc ??= await vscode.workspace.openTextDocument({ language: 'markdown', content: document });
    const id = doc.uri.toString();
    this.drafts.set(id, { draft, origin });
    const editor = await vscode.window.showTextDocument(doc, { preview: false });
    this.track(editor);
    return id;
  }

  private describe(doc: vscode.TextDocument): DraftDocument {
    const name = doc.isUntitled ? doc.uri.path : path.basename(doc.uri.fsPath);
    const id = doc.uri.toString();
    const known = this.drafts.get(id) ?? savedDraft(doc.uri);
    return { id, name, text: doc.getText(), draft: known?.draft, origin: known?.origin };
  }

  activeDraft(): DraftDocument | undefined {
    const active = vscode.window.activeTextEditor?.document;
    const doc = active && active.languageId === 'markdown' && active.uri.scheme !== PREVIEW_SCHEME ? active : this.lastMarkdown;
    if (!doc || doc.isClosed) {
      return undefined;
    }
    return this.describe(doc);
  }

  draftById(id: string): DraftDocument | undefined {
    const doc = vscode.workspace.textDocuments.find((d) => d.uri.toString() === id);
    return doc && !doc.isClosed ? this.describe(doc) : undefined;
  }
}

/** A draft file the server saved (`<state>/drafts/*.md` with its `.json` beside it):
 * its structured draft and where it came from, so a draft opened after a reload (or from
 * the Explorer) prepares and starts as one Generate opened. */
export function savedDraft(uri: vscode.Uri): { draft: HandoffDraft; origin: DraftOrigin } | undefined {
  if (uri.scheme !== 'file' || !uri.fsPath.endsWith('.md') || path.basename(path.dirname(uri.fsPath)) !== 'drafts') {
    return undefined;
  }
  try {
    const saved = JSON.parse(readFileSync(uri.fsPath.slice(0, -3) + '.json', 'utf8')) as Record<string, unknown>;
    if (typeof saved.draft !== 'object' || saved.draft === null) {
      return undefined;
    }
    const origin: DraftOrigin = {
      generation: typeof saved.generation === 'string' ? saved.generation : undefined,
      scope: typeof saved.scope === 'string' ? saved.scope : undefined,
    };
    return { draft: saved.draft as HandoffDraft, origin };
  } catch {
    return undefined;
  }
}

/** The real status bar item; `HandoffStatus` (status.ts) decides what it shows. */
export class HandoffStatusBar implements StatusSink, vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem('handoff.status', vscode.StatusBarAlignment.Left, 50);

  constructor() {
    this.item.name = 'Handoff';
  }

  show(view: StatusView): void {
    this.item.text = view.text;
    this.item.tooltip = view.tooltip;
    this.item.command = view.command;
    this.item.backgroundColor = view.warning ? new vscode.ThemeColor('statusBarItem.errorBackground') : undefined;
    this.item.show();
  }

  hide(): void {
    this.item.hide();
  }

  dispose(): void {
    this.item.dispose();
  }
}
