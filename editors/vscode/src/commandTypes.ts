/** What the palette commands speak through and are given: the server (`HandoffServer`),
 * the editor's previews and drafts (`Views`, `ReportView`, `DraftDocument`), and their
 * options. Free of `vscode`. */

import type { EvidenceCheck } from './inputs';
import type { ShelfStore } from './prepared';
import type { HandoffDraft, PreparedHandoff, ServerCommandId, SessionRef } from './protocol';
import type { CancellationTokenLike, ProgressReporter } from './ui';

export interface ExecuteOptions {
  token?: CancellationTokenLike;
  progress?: ProgressReporter;
}

/** Sends one `workspace/executeCommand` with one JSON object; rejects with the server's error. */
export interface HandoffServer {
  execute<R>(command: ServerCommandId, params: object, options?: ExecuteOptions): Promise<R>;
}

export type ReportView =
  | { kind: 'continuity' }
  | { kind: 'history' }
  | { kind: 'lineage' }
  /** ``scope``: the revision's scope when it is not the default one. */
  | { kind: 'handoff'; revision: string; scope?: string }
  | { kind: 'handoff'; prepared: PreparedHandoff }
  /** What Continue selected, as the server renders it (``handoff.continue`` with ``render``):
   * an exact revision (pinned), a prepared value, or the latest revision of a scope (the
   * pane follows the head as revisions are committed). */
  | { kind: 'continue'; revision: string; scope?: string }
  | { kind: 'continue'; prepared: PreparedHandoff }
  | { kind: 'continue'; latest: string }
  /** One record of the store (a `source/<id>` a preview cites), in its scope. */
  | { kind: 'source'; source: string; scope?: string };

/** Where a generated draft came from (from the Generate result). */
export interface DraftOrigin {
  generation?: string;
  scope?: string;
  sourceSession?: SessionRef;
  draftPath?: string;
}

/** A Markdown document open in the editor that can become a handoff. */
export interface DraftDocument {
  /** The document's identity (its URI) while it is open. */
  id?: string;
  name: string;
  text: string;
  /** The structured draft Generate returned with it, when it came from Generate. */
  draft?: HandoffDraft;
  origin?: DraftOrigin;
}

export interface Views {
  showReport(view: ReportView): Promise<void>;
  /** Opens the document as an editable draft; resolves to its id. */
  openDraft(document: string, draft: HandoffDraft, origin?: DraftOrigin): Promise<string>;
  /** The active editor's Markdown document, if any. */
  activeDraft(): DraftDocument | undefined;
  /** The open draft ``id`` (as openDraft returned it), with its current text; undefined once closed. */
  draftById(id: string): DraftDocument | undefined;
  /** Re-renders the open previews. */
  refresh?(): Promise<void>;
  /** The preview of ``from``, if one is open, closed and ``to`` shown in its place (a
   * prepared handoff's tab becomes its revision's once committed). */
  replaceReport?(from: ReportView, to: ReportView): Promise<void>;
}

/** What Start Session from Draft does with the command the server returns. */
export type StartSessionAction = 'terminal' | 'copy' | 'ask';
export const START_SESSION_ACTIONS: readonly StartSessionAction[] = ['terminal', 'copy', 'ask'];

export interface CommandOptions {
  /** The `handoff.startSession.action` setting (read at each use). */
  startSessionAction?: () => StartSessionAction | string | undefined;
  /** Looks a typed citation up in the workspace (the file, its lines). */
  checkEvidence?: EvidenceCheck;
  /** Where prepared handoffs are kept across reloads (the workspace's state). */
  preparedStore?: ShelfStore;
}
