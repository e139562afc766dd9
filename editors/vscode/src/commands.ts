/** The palette commands: each collects its input, calls one server command, and shows
 * the result (a preview, a draft, a notification). Free of `vscode`: it talks to the
 * editor through `Ui` and `Views`, and to the server through `HandoffServer`. */

import { inUserWords, showCommandError, toCommandError } from './errors';
import {
  collectAcknowledgement,
  collectContract,
  collectDraft,
  collectOutcome,
  collectWorkState,
  describeTarget,
  HandoffTarget,
  inWords,
  pickTarget,
  shortDigest,
  targetParams,
  ContractInput,
  EvidenceCheck,
  OutcomeInput,
  WorkStateInput,
} from './inputs';
import { PreparedShelf, readPreparedFile, writePreparedFile } from './prepared';
import {
  AcknowledgeResult,
  Agent,
  AGENT_LABELS,
  AgentSession,
  CommitResult,
  ContinueResult,
  GenerateResult,
  HandoffCurrentWorkResult,
  HandoffDraft,
  HistoryRevision,
  PreparedHandoff,
  PrepareResult,
  RepairStoreResult,
  ReportResult,
  ServerCommand,
  ServerCommandId,
  SessionRef,
  SessionsResult,
  SourceResult,
  StartSessionParams,
  StartSessionResult,
} from './protocol';
import type { CancellationTokenLike, PickItem, Ui } from './ui';
import type { CommandOptions, ExecuteOptions, HandoffServer, StartSessionAction, Views } from './commandTypes';
import { START_SESSION_ACTIONS } from './commandTypes';
import { agentChoices, baseName, receiptDescription, sessionItems, sessionLabel, terminalName } from './labels';

// Their old home: other modules and the tests import these names from here.
export type { CommandOptions, DraftDocument, DraftOrigin, ExecuteOptions, HandoffServer, ReportView, StartSessionAction, Views } from './commandTypes';
export { START_SESSION_ACTIONS } from './commandTypes';
export { agentChoices, receiptDescription, relativeTime, sessionItems, shorten, terminalName } from './labels';

/** The button of a refusal that runs the steps again with every value kept. */
export const EDIT_AND_RETRY = 'Edit and Retry';
/** The button that records a refused `accepted` as `needs_clarification` instead. */
export const RECORD_NEEDS_CLARIFICATION = 'Record as Needs Clarification';

/** Failures a retry with other values cannot fix. */
const NOT_RETRYABLE = new Set(['no_workspace', 'server_not_found', 'server_unavailable', 'server_error', 'server_outdated', 'client_error']);

/** The palette command ids (separate from the server's own `handoff.*` ids). */
export const PaletteCommand = {
  generate: 'handoffUi.generate',
  recordContract: 'handoffUi.recordContract',
  recordWork: 'handoffUi.recordWork',
  handoffCurrentWork: 'handoffUi.handoffCurrentWork',
  prepareFromDraft: 'handoffUi.prepareFromDraft',
  startSessionFromDraft: 'handoffUi.startSessionFromDraft',
  commit: 'handoffUi.commit',
  continue: 'handoffUi.continue',
  acknowledge: 'handoffUi.acknowledge',
  recordOutcome: 'handoffUi.recordOutcome',
  showContinuity: 'handoffUi.showContinuity',
  showHistory: 'handoffUi.showHistory',
  showLineage: 'handoffUi.showLineage',
  showHandoff: 'handoffUi.showHandoff',
  savePrepared: 'handoffUi.savePrepared',
  loadPrepared: 'handoffUi.loadPrepared',
  restartServer: 'handoffUi.restartServer',
  showLog: 'handoffUi.showLog',
  /** The check lens of a handoff document: its findings in the Problems panel. */
  showChecks: 'handoffUi.showChecks',
  /** The Handoff view's refresh button. */
  refreshView: 'handoffUi.refreshView',
  repairStore: 'handoffUi.repairStore',
} as const;

const COMMIT = 'Commit';
const SAVE = 'Save…';
const ACKNOWLEDGE = 'Acknowledge…';
const SHOW = 'Show';
const PREPARE_AGAIN = 'Prepare Again';
const SHOW_HEAD = 'Show Head';
const START_SESSION = 'Start Session';
const CHOOSE_SESSION_FILE = 'Choose a Session File…';
const START_OVER = 'Start Over';
const COPY_COMMAND = 'Copy Command';

export class HandoffCommands {
  readonly shelf: PreparedShelf;
  /** The target the last Continue selected, offered first by Acknowledge. */
  lastContinued: HandoffTarget | undefined;
  /** Acknowledgement receipts recorded in this session, newest first. */
  readonly receipts: { receipt: string; description: string }[] = [];

  constructor(
    private readonly ui: Ui,
    private readonly server: HandoffServer,
    private readonly views: Views,
    private readonly options: CommandOptions = {},
  ) {
    this.shelf = new PreparedShelf(options.preparedStore);
  }

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

  private sources: { at: number; scope: string; refs: Set<string>; complete: boolean } | undefined;

  /** A typed citation looked up: a file through ``checkEvidence`` (the editor's
   * workspace), a source among the scope's records (the continuity report's events,
   * read once a few seconds; a truncated report cannot say no). */
  private readonly checkCitation: EvidenceCheck = async (citation) => {
    if (citation.kind === 'artifact') {
      return this.options.checkEvidence?.(citation);
    }
    if (!this.sources || Date.now() - this.sources.at > 5000) {
      try {
        const report = await this.call<ReportResult<{ events?: { refs?: Record<string, unknown> }[]; truncated?: boolean }>>(ServerCommand.report, { kind: 'continuity' });
        // Every source an event names: the record itself, a boundary, a receipt.
        const refs = new Set(
          (report.data?.events ?? []).flatMap((e) => Object.values(e.refs ?? {})).filter((r): r is string => typeof r === 'string' && r.startsWith('source/')),
        );
        this.sources = { at: Date.now(), scope: report.scope ?? 'this scope', refs, complete: !report.data?.truncated };
      } catch {
        return undefined; // the server says so when the citation is sent
      }
    }
    const known = this.sources;
    return known.complete && !known.refs.has(citation.ref)
      ? `${citation.ref} is not a record of ${known.scope}: cite a source/<id> from its continuity report.`
      : undefined;
  };

  /** Runs a long server command under a progress notification with a Cancel button;
   * the server's own progress messages replace ``firstMessage``. ``cancelled``: the user
   * pressed Cancel, yet the answer came (it crossed the cancel on its way). */
  private async withProgress<R>(firstMessage: string, command: ServerCommandId, params: object): Promise<{ result: R; cancelled: boolean }> {
    let token: CancellationTokenLike | undefined;
    const result = await this.ui.withProgress('Handoff', (progress, cancel) => {
      token = cancel;
      progress(firstMessage);
      return this.call<R>(command, params, { token: cancel, progress });
    });
    return { result, cancelled: token?.isCancellationRequested === true };
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

  /** Generate from ``given`` (the Handoff view's session), else from a session picked. */
  async generate(given?: AgentSession): Promise<GenerateResult | undefined> {
    return this.guarded(async () => {
      let session: AgentSession | undefined = given;
      if (!session) {
        const { sessions, searched } = await this.call<SessionsResult>(ServerCommand.sessions, {});
        if (sessions.length === 0) {
          // Not a dead end: where it looked, and a session file chosen by hand.
          const where = searched?.length ? ` in ${searched.join(', ')}` : '';
          const choice = await this.ui.info(
            `No agent session (pi, Claude Code, Codex) of this workspace was found${where}.`,
            CHOOSE_SESSION_FILE,
          );
          session = choice === CHOOSE_SESSION_FILE ? await this.chooseSessionFile() : undefined;
        } else {
          const picked = await this.ui.pick<AgentSession | typeof CHOOSE_SESSION_FILE>(
            [...sessionItems(sessions), { label: CHOOSE_SESSION_FILE, detail: 'a session file from anywhere (.jsonl, .json)', value: CHOOSE_SESSION_FILE }],
            { title: 'Generate from Agent Session (1/2)', placeholder: 'Which session should the handoff come from?' },
          );
          session = picked === CHOOSE_SESSION_FILE ? await this.chooseSessionFile() : picked;
        }
      }
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
      const { result, cancelled } = await this.withProgress<GenerateResult>(
        `Generating a handoff from ${sessionLabel(session)}…`,
        ServerCommand.generate,
        params,
      );
      if (cancelled) {
        // The answer crossed the Cancel: the user asked for no draft, so none opens.
        const saved = result.draftPath ? ` (the server had already saved it as ${result.draftPath})` : '';
        void this.ui.info(`Generation was cancelled; the draft was not opened${saved}.`);
        return undefined;
      }
      const draftId = await this.views.openDraft(result.document, result.draft, {
        generation: result.generation,
        scope: result.scope,
        sourceSession: result.sourceSession,
        draftPath: result.draftPath,
      });
      const missing = result.missingSections?.length ? ` (missing sections: ${result.missingSections.join(', ')})` : '';
      const message =
        `Handoff draft generated by ${result.provider}${missing}. ` +
        'Edit it, then Start Session from Draft or Prepare from Draft.';
      void (result.missingSections?.length ? this.ui.warn(message, START_SESSION) : this.ui.info(message, START_SESSION)).then((action) =>
        action === START_SESSION ? this.startSessionFromDraft(draftId) : undefined,
      );
      return result;
    });
  }

  /** A session file picked in the open dialog, its format found by the server. */
  private async chooseSessionFile(): Promise<AgentSession | undefined> {
    const file = await this.ui.openFile('Choose an Agent Session File', { 'Agent session': ['jsonl', 'json'] });
    return file ? ({ path: file, format: 'auto', title: baseName(file), updatedAt: '', messageCount: 0 } as AgentSession) : undefined;
  }

  /** The source session of ``generation`` from the lineage report; undefined when the
   * lineage cannot say (the pick then has no default). */
  private async generationSource(generation: string, scope?: string): Promise<SessionRef | undefined> {
    try {
      const report = await this.server.execute<ReportResult<{ generations?: { generation?: string; sourceSession?: SessionRef }[] }>>(
        ServerCommand.report,
        scope ? { kind: 'lineage', scope } : { kind: 'lineage' },
      );
      const source = report.data?.generations?.find((g) => g.generation === generation)?.sourceSession;
      return source && typeof source.path === 'string' && typeof source.format === 'string' ? source : undefined;
    } catch {
      return undefined;
    }
  }

  /** Starts an agent session from a draft's current text: the open draft ``draftId``
   * (from Generate's notification), else the active Markdown document. */
  async startSessionFromDraft(draftId?: string, agentChosen?: string): Promise<StartSessionResult | undefined> {
    return this.guarded(async () => {
      const active = draftId !== undefined ? this.views.draftById(draftId) : this.views.activeDraft();
      if (!active) {
        void this.ui.info(
          draftId !== undefined
            ? 'That draft is no longer open: run "Handoff: Generate from Agent Session" again.'
            : 'No draft is open: run "Handoff: Generate from Agent Session" first (or open a Markdown document).',
        );
        return undefined;
      }
      if (!active.text.trim()) {
        void this.ui.info(`${active.name} is empty: there is nothing to start a session from.`);
        return undefined;
      }
      const origin = active.origin ?? {};
      const known = agentChosen !== undefined && (Object.keys(AGENT_LABELS) as string[]).includes(agentChosen);
      // A draft reopened from its file (after a reload) knows its generation, not its
      // source session: the lineage names it, so the source's agent is still the default.
      if (!known && !origin.sourceSession && origin.generation) {
        origin.sourceSession = await this.generationSource(origin.generation, origin.scope);
      }
      const agent = known ? (agentChosen as Agent) : await this.ui.pick(
        agentChoices(origin.sourceSession).map(({ agent, isDefault }) => ({
          label: AGENT_LABELS[agent],
          description: isDefault ? 'default · the agent of the source session' : undefined,
          detail:
            agent === 'pi' || agent === 'omp'
              ? `a new ${agent} session seeded with the draft, opened with ${agent} --session`
              : `${agent} with the draft as its first prompt`,
          value: agent,
        })),
        { title: `Start Session from ${active.name}`, placeholder: 'Which agent continues the work?' },
      );
      if (!agent) {
        return undefined;
      }
      const params: StartSessionParams = {
        document: active.text,
        agent,
        ...(origin.generation ? { generation: origin.generation } : {}),
        ...(origin.scope ? { scope: origin.scope } : {}),
      };
      const result = await this.call<StartSessionResult>(ServerCommand.startSession, params);
      await this.runStarted(result);
      if (result.claims?.length) {
        // Said, not held back: the person who edited the draft decides.
        const named = result.claims.slice(0, 3).map((d) => `line ${d.line}: ${d.message}`).join('; ');
        const more = result.claims.length > 3 ? ` (and ${result.claims.length - 3} more)` : '';
        void this.ui.warn(`The handed-over text has ${result.claims.length} contradicted or dropped claim(s): ${named}${more}`);
      }
      return result;
    });
  }

  /** Runs the started session's command in a terminal, or copies it, as the setting says. */
  private async runStarted(result: StartSessionResult): Promise<void> {
    const label = AGENT_LABELS[result.agent] ?? result.agent;
    const what = result.newSession ? `${label} session` : label;
    const which = result.newSession ? ` (session ${baseName(result.newSession.path)})` : '';
    const transfer = result.transfer?.said ? ` ${result.transfer.said}` : '';
    const setting = this.options.startSessionAction?.();
    let action: StartSessionAction | undefined = START_SESSION_ACTIONS.includes(setting as StartSessionAction)
      ? (setting as StartSessionAction)
      : 'terminal';
    if (action === 'ask') {
      action = await this.ui.pick<StartSessionAction>(
        [
          { label: '$(terminal) Run in a terminal', description: terminalName(result.agent), detail: result.command, value: 'terminal' },
          { label: '$(clippy) Copy the command', detail: result.command, value: 'copy' },
        ],
        { title: `Started ${what}`, placeholder: 'Run its command now, or copy it to run it yourself?' },
      );
    }
    if (action === 'terminal') {
      const name = terminalName(result.agent);
      await this.ui.runInTerminal(name, result.command);
      void this.ui.info(`Started ${label} from the draft in the terminal "${name}"${which}.${transfer}`);
    } else if (action === 'copy') {
      await this.ui.copyToClipboard(result.command);
      void this.ui.info(`Started ${what} from the draft; the command that opens it is on the clipboard: ${result.command}`);
    } else {
      void this.ui.info(`Started ${what} from the draft; open it with: ${result.command}`, COPY_COMMAND).then((choice) =>
        choice === COPY_COMMAND ? this.ui.copyToClipboard(result.command) : undefined,
      );
    }
  }

  // -- the store ----------------------------------------------------------------------

  /** Repair Store…: the store checked; when something is wrong, the CLI's choices (the
   * safe repairs, a state file put back, a fresh start) over the server. */
  async repairStore(): Promise<RepairStoreResult | undefined> {
    return this.guarded(async () => {
      const checked = await this.call<RepairStoreResult>(ServerCommand.repairStore, { action: 'check' });
      const problems = checked.check.problems ?? [];
      if (checked.ok) {
        const c = checked.check.counts ?? {};
        void this.ui.info(`The store is sound: ${c.sources ?? 0} Sources, ${c.revisions ?? 0} revisions, ${c.segments ?? 0} sealed segments.`);
        return checked;
      }
      const said = problems.map((p) => p.message).join('; ');
      const missing = problems.some((p) => p.problem === 'state_missing');
      const choice = await this.ui.pick<'repair' | 'restore' | 'fresh'>(
        [
          ...(missing ? [] : [{ label: 'Repair', detail: 'the safe repairs: the segment list rebuilt, the sequence raised, the marker written', value: 'repair' as const }]),
          { label: 'Restore a State File…', detail: 'put a good copy of state.json back (a backup, or the file moved aside if it is whole)', value: 'restore' as const },
          { label: 'Start Over', detail: 'an empty store; what the lost one left is moved into lost-<time>/, nothing is deleted', value: 'fresh' as const },
        ],
        { title: 'Repair Store', placeholder: `The store: ${said}` },
      );
      if (!choice) {
        return undefined;
      }
      const params: Record<string, unknown> = { action: choice };
      if (choice === 'restore') {
        const file = await this.ui.openFile('Choose the State File to Put Back', { 'State file': ['json', '*'] });
        if (!file) {
          return undefined;
        }
        params.file = file;
      }
      if (choice === 'fresh') {
        const sure = await this.ui.warn('Start over with an empty store? The lost store\'s files are kept in lost-<time>/.', START_OVER);
        if (sure !== START_OVER) {
          return undefined;
        }
      }
      const result = await this.call<RepairStoreResult>(ServerCommand.repairStore, params);
      const done = result.actions.length ? result.actions.join('; ') : 'nothing needed doing';
      void (result.ok ? this.ui.info(`Store repaired: ${done}.`) : this.ui.warn(`Store repair: ${done}; still wrong: ${(result.check.problems ?? []).map((p) => p.message).join('; ')}`));
      return result;
    });
  }

  // -- records ------------------------------------------------------------------------

  async recordContract(): Promise<SourceResult | undefined> {
    return this.guarded(async () => {
      return this.untilAccepted(
        (initial?: ContractInput) => collectContract(this.ui, initial),
        async (input) => {
          const result = await this.call<SourceResult>(ServerCommand.contract, input);
          void this.ui.info(`Work Contract recorded as ${result.source} in ${result.scope}.`);
          return result;
        },
      );
    });
  }

  async recordWork(): Promise<SourceResult | undefined> {
    return this.guarded(async () => {
      return this.untilAccepted(
        (initial?: WorkStateInput) => collectWorkState(this.ui, { check: this.checkCitation, initial }),
        async (input) => {
          const result = await this.call<SourceResult>(ServerCommand.recordWork, input);
          void this.ui.info(`Work state (${input.disposition}) recorded as ${result.source} in ${result.scope}.`);
          return result;
        },
      );
    });
  }

  /** Collects the input, sends it; on a refusal the user can fix ("Edit and Retry"),
   * collects it again with every value of the refused attempt filled in. */
  private async untilAccepted<I, R>(collect: (initial?: I) => Promise<I | undefined>, send: (input: I) => Promise<R>): Promise<R | undefined> {
    let initial: I | undefined;
    for (;;) {
      const input = await collect(initial);
      if (!input) {
        return undefined;
      }
      try {
        return await send(input);
      } catch (error) {
        if (!(await this.offerRetry(error))) {
          return undefined;
        }
        initial = input;
      }
    }
  }

  /** A refusal the user can fix: its message with "Edit and Retry"; true when chosen.
   * Other failures are thrown on. */
  private async offerRetry(error: unknown): Promise<boolean> {
    const failure = toCommandError(error);
    if (failure.cancelled || NOT_RETRYABLE.has(failure.code)) {
      throw error;
    }
    return (await this.ui.error(`${inUserWords(failure.message)} Nothing was recorded.`, EDIT_AND_RETRY)) === EDIT_AND_RETRY;
  }

  async recordOutcome(): Promise<SourceResult | undefined> {
    return this.guarded(async () => {
      const receipts = [...this.receipts];
      try {
        const { revisions } = await this.history();
        for (const ack of [...(revisions[0]?.acknowledgements ?? [])].reverse()) {
          if (!receipts.some((r) => r.receipt === ack.receipt)) {
            receipts.push({ receipt: ack.receipt, description: receiptDescription(ack.status, revisions[0].revision) });
          }
        }
      } catch {
        // The receipts of this session are still offered.
      }
      return this.untilAccepted(
        (initial?: OutcomeInput) => collectOutcome(this.ui, receipts, initial),
        async (input) => {
          const result = await this.call<SourceResult>(ServerCommand.recordOutcome, input);
          void this.ui.info(`Task Outcome (${input.status}) recorded as ${result.source} in ${result.scope}.`);
          return result;
        },
      );
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
          { title: 'Hand Off Current Work', placeholder: 'Attach the active Markdown document?' },
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

  async prepareFromDraft(draftId?: string): Promise<PrepareResult | undefined> {
    return this.guarded(async () => {
      const active = draftId !== undefined ? this.views.draftById(draftId) : this.views.activeDraft();
      if (active?.draft) {
        const result = await this.call<PrepareResult>(ServerCommand.prepare, { draft: { ...active.draft, document: active.text } });
        await this.offerPrepared(result.prepared, 'Handoff');
        return result;
      }
      // A document that did not come from Generate: the draft typed in, and typed in
      // again with every value kept when the server refuses it.
      return this.untilAccepted(
        (initial?: HandoffDraft) => collectDraft(this.ui, active?.text, { check: this.checkCitation, initial }),
        async (draft) => {
          const result = await this.call<PrepareResult>(ServerCommand.prepare, { draft });
          await this.offerPrepared(result.prepared, 'Handoff');
          return result;
        },
      );
    });
  }

  async commit(prepared?: PreparedHandoff): Promise<CommitResult | undefined> {
    return this.guarded(async () => {
      let chosen = prepared;
      if (!chosen) {
        const head = this.shelf.size ? await this.history().then((h) => h.head, () => undefined) : undefined;
        const target = await this.pickPrepared('Commit', head);
        if (!target) {
          return undefined;
        }
        chosen = target;
      }
      let result: CommitResult;
      try {
        result = await this.call<CommitResult>(ServerCommand.commit, { scope: chosen.scope, prepared: chosen });
      } catch (error) {
        const failure = toCommandError(error);
        if (failure.code !== 'revision_conflict') {
          throw error;
        }
        // The head moved since it was prepared: offer what to do next.
        const current = typeof failure.data.current === 'string' ? failure.data.current : undefined;
        const from = chosen;
        void this.ui.error(failure.message, PREPARE_AGAIN, ...(current ? [SHOW_HEAD] : [])).then(async (action): Promise<void> => {
          if (action === PREPARE_AGAIN) {
            await this.guarded(async () => {
              const again = await this.call<PrepareResult>(ServerCommand.prepare, { scope: from.scope, draft: from.content });
              await this.offerPrepared(again.prepared, 'Handoff');
            });
          } else if (action === SHOW_HEAD && current) {
            await this.views.showReport({ kind: 'handoff', revision: current });
          }
        });
        return undefined;
      }
      this.shelf.markCommitted(chosen.digest, result.revision);
      // Its open preview becomes the revision's (a tab titled by the revision, not by
      // the prepared digest); the other previews re-render.
      void this.views.replaceReport?.({ kind: 'handoff', prepared: chosen }, { kind: 'handoff', revision: result.revision });
      void this.views.refresh?.();
      void this.ui
        .info(result.idempotent ? `Already committed as ${result.revision}.` : `Committed ${result.revision} in ${result.scope}.`, SHOW)
        .then((action) => (action === SHOW ? this.views.showReport({ kind: 'handoff', revision: result.revision }) : undefined));
      return result;
    });
  }

  /** The kept prepared handoffs; with ``head`` known, one prepared on another head is
   * marked stale (its commit would be refused). */
  private async pickPrepared(title: string, head?: string | null): Promise<PreparedHandoff | undefined> {
    const items: PickItem<PreparedHandoff | null>[] = this.shelf.list().map((p) => {
      const stale = head !== undefined && p.base !== head;
      return {
        label: stale ? `$(warning) Prepared ${shortDigest(p.digest)} · stale` : `$(file-text) Prepared ${shortDigest(p.digest)}`,
        description: stale
          ? `${p.scope} · prepared on ${p.base ?? 'no revision'}, the head is now ${head ?? 'no revision'}: prepare again`
          : `${p.scope} · prepared ${p.preparedAt}`,
        detail: p.content?.objective,
        value: p,
      };
    });
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
        // Prepared on a head that has moved on: its commit would be refused. A warning.
        const head = await this.history().then((h) => h.head, () => undefined);
        const loaded = `Loaded prepared handoff ${shortDigest(prepared.digest)} for ${prepared.scope}`;
        if (head !== undefined && (prepared.base ?? null) !== head) {
          void this.ui.warn(`${loaded}: it is stale (prepared on ${prepared.base ?? 'no revision'}; the head is now ${head ?? 'none'}), and its commit would be refused. Prepare again from its draft.`);
        } else {
          void this.ui.info(`${loaded}.`);
        }
      }
      return prepared;
    });
  }

  // -- continue / acknowledge ---------------------------------------------------------

  /** Continue from ``given`` (the Handoff view's revision), else from a target picked. */
  async continue(given?: HandoffTarget): Promise<ContinueResult | undefined> {
    return this.guarded(async () => {
      const { head, revisions } = given ? { head: null, revisions: [] as HistoryRevision[] } : await this.history();
      const target = given ?? await pickTarget(
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
      const scoped = target.kind === 'revision' && target.scope ? { scope: target.scope } : {};
      const selected: HandoffTarget = result.selected
        ? { kind: 'revision', revision: result.selected, ...scoped }
        : target;
      this.lastContinued = selected;
      // Latest: a pane titled so that follows the scope's head; else pinned to what was selected.
      await this.views.showReport(
        target.kind === 'latest'
          ? { kind: 'continue', latest: result.scope }
          : selected.kind === 'revision'
            ? { kind: 'continue', revision: selected.revision, ...scoped }
            : { kind: 'continue', prepared: (selected as { prepared: PreparedHandoff }).prepared },
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
      this.receipts.unshift({ receipt: result.receipt, description: receiptDescription(result.status, result.target) });
      void this.ui.info(`Acknowledged ${result.target} as ${inWords(result.status)} (receipt ${result.receipt}).`);
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

  async showLineage(): Promise<void> {
    await this.guarded(() => this.views.showReport({ kind: 'lineage' }));
  }

  /** Show the handoff ``revision`` (the Handoff view's, of ``scope`` when given), else a
   * target picked. */
  async showHandoff(revision?: string, scope?: string): Promise<void> {
    await this.guarded(async () => {
      if (revision) {
        await this.views.showReport(scope ? { kind: 'handoff', revision, scope } : { kind: 'handoff', revision });
        return;
      }
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
