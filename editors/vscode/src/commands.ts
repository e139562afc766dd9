/** The palette commands: each collects its input, calls one server command, and shows
 * the result (a preview, a draft, a notification). Free of `vscode`: it talks to the
 * editor through `Ui` and `Views`, and to the server through `HandoffServer`. */

import { showCommandError } from './errors';
import {
  collectAcknowledgement,
  collectContract,
  collectDraft,
  collectOutcome,
  collectWorkState,
  describeTarget,
  HandoffTarget,
  pickTarget,
  shortDigest,
  targetParams,
} from './inputs';
import { PreparedShelf, readPreparedFile, writePreparedFile } from './prepared';
import {
  AcknowledgeResult,
  AgentSession,
  CommitResult,
  ContinueResult,
  GenerateResult,
  HandoffCurrentWorkResult,
  HandoffDraft,
  HistoryRevision,
  PreparedHandoff,
  PrepareResult,
  ReportResult,
  ServerCommand,
  ServerCommandId,
  SessionsResult,
  SourceResult,
} from './protocol';
import type { CancellationTokenLike, PickItem, ProgressReporter, Ui } from './ui';

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
  | { kind: 'handoff'; revision: string }
  | { kind: 'handoff'; prepared: PreparedHandoff };

/** A Markdown document open in the editor that can become a handoff. */
export interface DraftDocument {
  name: string;
  text: string;
  /** The structured draft Generate returned with it, when it came from Generate. */
  draft?: HandoffDraft;
}

export interface Views {
  showReport(view: ReportView): Promise<void>;
  openDraft(document: string, draft: HandoffDraft): Promise<void>;
  /** The active editor's Markdown document, if any. */
  activeDraft(): DraftDocument | undefined;
}

/** The palette command ids (separate from the server's own `handoff.*` ids). */
export const PaletteCommand = {
  generate: 'handoffUi.generate',
  recordContract: 'handoffUi.recordContract',
  recordWork: 'handoffUi.recordWork',
  handoffCurrentWork: 'handoffUi.handoffCurrentWork',
  prepareFromDraft: 'handoffUi.prepareFromDraft',
  commit: 'handoffUi.commit',
  continue: 'handoffUi.continue',
  acknowledge: 'handoffUi.acknowledge',
  recordOutcome: 'handoffUi.recordOutcome',
  showContinuity: 'handoffUi.showContinuity',
  showHistory: 'handoffUi.showHistory',
  showHandoff: 'handoffUi.showHandoff',
  savePrepared: 'handoffUi.savePrepared',
  loadPrepared: 'handoffUi.loadPrepared',
  restartServer: 'handoffUi.restartServer',
  showLog: 'handoffUi.showLog',
} as const;

const COMMIT = 'Commit';
const SAVE = 'Save…';
const ACKNOWLEDGE = 'Acknowledge…';
const SHOW = 'Show';

function sessionLabel(session: AgentSession): string {
  return session.title || session.path.split(/[\\/]/).pop() || session.path;
}

export class HandoffCommands {
  readonly shelf = new PreparedShelf();
  /** The target the last Continue selected, offered first by Acknowledge. */
  lastContinued: HandoffTarget | undefined;
  /** Acknowledgement receipts recorded in this session, newest first. */
  readonly receipts: { receipt: string; description: string }[] = [];

  constructor(
    private readonly ui: Ui,
    private readonly server: HandoffServer,
    private readonly views: Views,
  ) {}

  /** Runs ``body``, showing any failure; resolves to undefined when it failed. */
  private async guarded<R>(body: () => Promise<R>): Promise<R | undefined> {
    try {
      return await body();
    } catch (error) {
      await showCommandError(this.ui, error);
      return undefined;
    }
  }

  private call<R>(command: ServerCommandId, params: object, options?: ExecuteOptions): Promise<R> {
    return this.server.execute<R>(command, params, options);
  }

  /** Runs a long server command under a progress notification with a Cancel button;
   * the server's own progress messages replace ``firstMessage``. */
  private withProgress<R>(firstMessage: string, command: ServerCommandId, params: object): Promise<R> {
    return this.ui.withProgress('Handoff', (progress, token) => {
      progress(firstMessage);
      return this.call<R>(command, params, { token, progress });
    });
  }

  private async history(): Promise<{ head: string | null; revisions: HistoryRevision[] }> {
    const report = await this.call<ReportResult<{ head?: string | null; revisions?: HistoryRevision[] }>>(ServerCommand.report, { kind: 'history' });
    const revisions = report.data?.revisions ?? [];
    return { head: report.data?.head ?? revisions[0]?.revision ?? null, revisions };
  }

  private loadPreparedFromFile = async (): Promise<PreparedHandoff | undefined> => {
    const path = await this.ui.openFile('Load prepared handoff');
    if (!path) {
      return undefined;
    }
    const prepared = await readPreparedFile(path);
    this.shelf.add(prepared);
    return prepared;
  };

  /** Keeps a freshly prepared handoff, shows it, and offers to commit or save it. */
  private async offerPrepared(prepared: PreparedHandoff, what: string): Promise<void> {
    this.shelf.add(prepared);
    await this.views.showReport({ kind: 'handoff', prepared });
    void this.ui
      .info(`${what} ${shortDigest(prepared.digest)} for ${prepared.scope} is prepared, not committed.`, COMMIT, SAVE)
      .then(async (action): Promise<void> => {
        if (action === COMMIT) {
          await this.commit(prepared);
        } else if (action === SAVE) {
          await this.savePrepared(prepared);
        }
      });
  }

  // -- generation ---------------------------------------------------------------------

  async generate(): Promise<GenerateResult | undefined> {
    return this.guarded(async () => {
      const { sessions } = await this.call<SessionsResult>(ServerCommand.sessions, {});
      if (sessions.length === 0) {
        void this.ui.info('No agent sessions (pi, Claude Code, Codex) are recorded for this workspace.');
        return undefined;
      }
      const session = await this.ui.pick(
        sessions.map((s) => ({
          label: sessionLabel(s),
          description: `${s.format} · ${s.messageCount} messages`,
          detail: `${s.updatedAt} · ${s.path}`,
          value: s,
        })),
        { title: 'Generate from Agent Session (1/2)', placeholder: 'Which session should the handoff come from?' },
      );
      if (!session) {
        return undefined;
      }
      const focus = await this.ui.input({
        title: 'Generate from Agent Session (2/2)',
        prompt: 'Focus instructions for the handoff (optional). Press Enter to skip.',
        placeholder: 'e.g. the failing migration test',
      });
      if (focus === undefined) {
        return undefined;
      }
      const params = { session: session.path, format: session.format, ...(focus.trim() ? { focus: focus.trim() } : {}) };
      const result = await this.withProgress<GenerateResult>(`Generating a handoff from ${sessionLabel(session)}…`, ServerCommand.generate, params);
      await this.views.openDraft(result.document, result.draft);
      const notes: string[] = [];
      if (result.missingSections?.length) {
        notes.push(`missing sections: ${result.missingSections.join(', ')}`);
      }
      if (result.newSession) {
        notes.push(`new session ${result.newSession.path}`);
      } else if (result.continueCommand) {
        notes.push(`continue with: ${result.continueCommand}`);
      }
      const message = `Handoff draft generated by ${result.provider}${notes.length ? ` (${notes.join('; ')})` : ''}. Edit it, then run "Handoff: Prepare from Draft".`;
      void (result.missingSections?.length ? this.ui.warn(message) : this.ui.info(message));
      return result;
    });
  }

  // -- records ------------------------------------------------------------------------

  async recordContract(): Promise<SourceResult | undefined> {
    return this.guarded(async () => {
      const input = await collectContract(this.ui);
      if (!input) {
        return undefined;
      }
      const result = await this.call<SourceResult>(ServerCommand.contract, input);
      void this.ui.info(`Work Contract recorded as ${result.source} in ${result.scope}.`);
      return result;
    });
  }

  async recordWork(): Promise<SourceResult | undefined> {
    return this.guarded(async () => {
      const input = await collectWorkState(this.ui);
      if (!input) {
        return undefined;
      }
      const result = await this.call<SourceResult>(ServerCommand.recordWork, input);
      void this.ui.info(`Work state (${input.disposition}) recorded as ${result.source} in ${result.scope}.`);
      return result;
    });
  }

  async recordOutcome(): Promise<SourceResult | undefined> {
    return this.guarded(async () => {
      const receipts = [...this.receipts];
      try {
        const { revisions } = await this.history();
        for (const ack of [...(revisions[0]?.acknowledgements ?? [])].reverse()) {
          if (!receipts.some((r) => r.receipt === ack.receipt)) {
            receipts.push({ receipt: ack.receipt, description: `${ack.status} of ${revisions[0].revision}` });
          }
        }
      } catch {
        // The receipts of this session are still offered.
      }
      const input = await collectOutcome(this.ui, receipts);
      if (!input) {
        return undefined;
      }
      const result = await this.call<SourceResult>(ServerCommand.recordOutcome, input);
      void this.ui.info(`Task Outcome (${input.status}) recorded as ${result.source} in ${result.scope}.`);
      return result;
    });
  }

  // -- prepare / commit ---------------------------------------------------------------

  async handoffCurrentWork(): Promise<HandoffCurrentWorkResult | undefined> {
    return this.guarded(async () => {
      const active = this.views.activeDraft();
      let document: string | undefined;
      if (active) {
        const use = await this.ui.pick(
          [
            { label: `Attach ${active.name}`, description: 'as the handoff document', value: true },
            { label: 'No document', description: 'the recorded contract and work state only', value: false },
          ],
          { title: 'Handoff Current Work', placeholder: 'Attach the active Markdown document?' },
        );
        if (use === undefined) {
          return undefined;
        }
        document = use ? active.text : undefined;
      }
      const result = await this.call<HandoffCurrentWorkResult>(ServerCommand.handoffCurrentWork, document !== undefined ? { document } : {});
      await this.offerPrepared(result.prepared, 'Current work');
      return result;
    });
  }

  async prepareFromDraft(): Promise<PrepareResult | undefined> {
    return this.guarded(async () => {
      const active = this.views.activeDraft();
      let draft: HandoffDraft | undefined;
      if (active?.draft) {
        draft = { ...active.draft, document: active.text };
      } else {
        draft = await collectDraft(this.ui, active?.text);
      }
      if (!draft) {
        return undefined;
      }
      const result = await this.call<PrepareResult>(ServerCommand.prepare, { draft });
      await this.offerPrepared(result.prepared, 'Handoff');
      return result;
    });
  }

  async commit(prepared?: PreparedHandoff): Promise<CommitResult | undefined> {
    return this.guarded(async () => {
      let chosen = prepared;
      if (!chosen) {
        const target = await this.pickPrepared('Commit');
        if (!target) {
          return undefined;
        }
        chosen = target;
      }
      const result = await this.call<CommitResult>(ServerCommand.commit, { scope: chosen.scope, prepared: chosen });
      this.shelf.markCommitted(chosen.digest, result.revision);
      void this.ui
        .info(result.idempotent ? `Already committed as ${result.revision}.` : `Committed ${result.revision} in ${result.scope}.`, SHOW)
        .then((action) => (action === SHOW ? this.views.showReport({ kind: 'handoff', revision: result.revision }) : undefined));
      return result;
    });
  }

  private async pickPrepared(title: string): Promise<PreparedHandoff | undefined> {
    const items: PickItem<PreparedHandoff | null>[] = this.shelf.list().map((p) => ({
      label: `$(file-text) Prepared ${shortDigest(p.digest)}`,
      description: `${p.scope} · prepared ${p.preparedAt}`,
      detail: p.content?.objective,
      value: p,
    }));
    items.push({ label: '$(folder-opened) Load prepared handoff from file…', value: null });
    const choice = await this.ui.pick(items, {
      title,
      placeholder: this.shelf.size ? 'Which prepared handoff?' : 'No prepared handoff in this session: load one from a file',
    });
    if (choice === undefined) {
      return undefined;
    }
    return choice ?? (await this.loadPreparedFromFile());
  }

  async savePrepared(prepared?: PreparedHandoff): Promise<string | undefined> {
    return this.guarded(async () => {
      const chosen = prepared ?? (await this.pickPrepared('Save Prepared Handoff'));
      if (!chosen) {
        return undefined;
      }
      const path = await this.ui.saveFile('Save prepared handoff', `prepared-${shortDigest(chosen.digest)}.json`);
      if (!path) {
        return undefined;
      }
      await writePreparedFile(path, chosen);
      void this.ui.info(`Prepared handoff ${shortDigest(chosen.digest)} saved to ${path}.`);
      return path;
    });
  }

  async loadPrepared(): Promise<PreparedHandoff | undefined> {
    return this.guarded(async () => {
      const prepared = await this.loadPreparedFromFile();
      if (prepared) {
        await this.views.showReport({ kind: 'handoff', prepared });
        void this.ui.info(`Loaded prepared handoff ${shortDigest(prepared.digest)} for ${prepared.scope}.`);
      }
      return prepared;
    });
  }

  // -- continue / acknowledge ---------------------------------------------------------

  async continue(): Promise<ContinueResult | undefined> {
    return this.guarded(async () => {
      const { head, revisions } = await this.history();
      const target = await pickTarget(
        this.ui,
        'Continue from…',
        {
          head,
          allowLatest: true,
          allowLoad: true,
          revisions: revisions.map((r) => ({ revision: r.revision, description: r.content?.objective })),
          prepared: this.shelf.list(),
        },
        this.loadPreparedFromFile,
      );
      if (!target) {
        return undefined;
      }
      const result = await this.call<ContinueResult>(ServerCommand.continue, targetParams(target));
      if (!result.found) {
        void this.ui.info(`No committed revision in ${result.scope} yet: there is nothing to continue from.`);
        return result;
      }
      const selected: HandoffTarget = result.selected
        ? { kind: 'revision', revision: result.selected }
        : target;
      this.lastContinued = selected;
      await this.views.showReport(
        selected.kind === 'revision' ? { kind: 'handoff', revision: selected.revision } : { kind: 'handoff', prepared: (selected as { prepared: PreparedHandoff }).prepared },
      );
      const unreadable = result.unreadableEvidence?.length ?? 0;
      const stale = result.selected && result.current && result.selected !== result.current ? ` The head is now ${result.current}.` : '';
      const message =
        `Continuing from ${describeTarget(selected)} (untrusted history): confirm the evidence, the live state, ` +
        `your capability and the user's authorisation before acting.${stale}` +
        (unreadable ? ` ${unreadable} cited item${unreadable === 1 ? ' is' : 's are'} unreadable.` : '');
      void (unreadable || stale ? this.ui.warn(message, ACKNOWLEDGE) : this.ui.info(message, ACKNOWLEDGE)).then((action) =>
        action === ACKNOWLEDGE ? this.acknowledge(selected) : undefined,
      );
      return result;
    });
  }

  async acknowledge(target?: HandoffTarget): Promise<AcknowledgeResult | undefined> {
    return this.guarded(async () => {
      let chosen = target;
      if (!chosen) {
        const { head, revisions } = await this.history();
        chosen = await pickTarget(
          this.ui,
          'Acknowledge…',
          {
            head,
            lastContinued: this.lastContinued,
            revisions: revisions.map((r) => ({ revision: r.revision, description: r.content?.objective })),
            prepared: this.shelf.list(),
            allowLoad: true,
          },
          this.loadPreparedFromFile,
        );
        if (!chosen) {
          return undefined;
        }
      }
      const input = await collectAcknowledgement(this.ui, chosen);
      if (!input) {
        return undefined;
      }
      const scope = chosen.kind === 'prepared' ? { scope: chosen.prepared.scope } : {};
      const result = await this.call<AcknowledgeResult>(ServerCommand.acknowledge, { ...scope, ...targetParams(chosen), ...input });
      this.receipts.unshift({ receipt: result.receipt, description: `${result.status} of ${result.target}` });
      void this.ui.info(`Recorded ${result.status} of ${result.target} (receipt ${result.receipt}).`);
      return result;
    });
  }

  // -- views --------------------------------------------------------------------------

  async showContinuity(): Promise<void> {
    await this.guarded(() => this.views.showReport({ kind: 'continuity' }));
  }

  async showHistory(): Promise<void> {
    await this.guarded(() => this.views.showReport({ kind: 'history' }));
  }

  async showHandoff(): Promise<void> {
    await this.guarded(async () => {
      const { head, revisions } = await this.history();
      const target = await pickTarget(
        this.ui,
        'Show Handoff',
        {
          head,
          revisions: revisions.map((r) => ({ revision: r.revision, description: r.content?.objective })),
          prepared: this.shelf.list(),
          allowLoad: true,
        },
        this.loadPreparedFromFile,
      );
      if (!target || target.kind === 'latest') {
        return;
      }
      await this.views.showReport(target.kind === 'revision' ? { kind: 'handoff', revision: target.revision } : { kind: 'handoff', prepared: target.prepared });
    });
  }
}
