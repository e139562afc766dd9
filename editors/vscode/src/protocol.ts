/** The server's command contract (docs/commands.md) as TypeScript types and constants. */

export const ServerCommand = {
  contract: 'handoff.contract',
  recordWork: 'handoff.recordWork',
  prepare: 'handoff.prepare',
  handoffCurrentWork: 'handoff.handoffCurrentWork',
  commit: 'handoff.commit',
  continue: 'handoff.continue',
  acknowledge: 'handoff.acknowledge',
  recordOutcome: 'handoff.recordOutcome',
  report: 'handoff.report',
  generate: 'handoff.generate',
  startSession: 'handoff.startSession',
  sessions: 'handoff.sessions',
  status: 'handoff.status',
  scopes: 'handoff.scopes',
  check: 'handoff.check',
  repairStore: 'handoff.repairStore',
  ping: 'handoff.ping',
} as const;
export type ServerCommandId = (typeof ServerCommand)[keyof typeof ServerCommand];

/** The notification the server sends after every successful mutation. */
export const DID_CHANGE_NOTIFICATION = 'handoff/didChange';
export interface DidChangeParams {
  workspace: string;
  scope: string;
  command: string;
}

export const DISPOSITIONS = ['continuable', 'blocked', 'done'] as const;
export type Disposition = (typeof DISPOSITIONS)[number];

export const ACK_STATUSES = ['accepted', 'needs_clarification', 'declined'] as const;
export type AckStatus = (typeof ACK_STATUSES)[number];

export const OUTCOME_STATUSES = ['succeeded', 'partial', 'blocked', 'failed', 'cancelled', 'unknown'] as const;
export type OutcomeStatus = (typeof OUTCOME_STATUSES)[number];

export const CHECK_STATUSES = ['passed', 'failed', 'skipped', 'timed_out'] as const;
export type CheckStatus = (typeof CHECK_STATUSES)[number];

/** The four acceptance checks: wire key (camelCase) and the name refusals use (snake_case). */
export const ACCEPTANCE_CHECKS = [
  { key: 'evidenceAvailable', name: 'evidence_available', label: 'Evidence available', detail: 'I can read every cited source and artifact.' },
  { key: 'liveStateConfirmed', name: 'live_state_confirmed', label: 'Live state confirmed', detail: 'The workspace really is in the state the handoff describes.' },
  { key: 'capabilityConfirmed', name: 'capability_confirmed', label: 'Capability confirmed', detail: 'I have the tools and access the next actions need.' },
  { key: 'authorizationConfirmed', name: 'authorization_confirmed', label: 'Authorization confirmed', detail: 'The user has authorised me to carry on with this work.' },
] as const;
export type AcceptanceCheckKey = (typeof ACCEPTANCE_CHECKS)[number]['key'];
export type AcceptanceChecks = Record<AcceptanceCheckKey, boolean>;

export const SCOPE_RE = /^(?![/.])(?!.*\.\.)[A-Za-z0-9._/-]{1,128}$/;
export const REVISION_RE = /^handoff\/([A-Za-z0-9_-]{1,64})@([1-9][0-9]{0,8})$/;
export const SOURCE_RE = /^source\/([A-Za-z0-9_-]{1,64})$/;

export type Citation =
  | { kind: 'source'; ref: string }
  | { kind: 'artifact'; path: string; sha256?: string; lines?: [number, number] };

export interface Fact {
  text: string;
  citations: Citation[];
}

export interface HandoffDraft {
  objective: string;
  state: Fact;
  disposition: Disposition | string;
  nextActions: Fact[];
  document?: string;
}

/** Opaque to the client apart from these keys; passed back unchanged. */
export interface PreparedHandoff {
  scope: string;
  base: string | null;
  content: HandoffDraft;
  evidence: Citation[];
  boundary: string | null;
  preparedAt: string;
  digest: string;
  [key: string]: unknown;
}

export interface SourceResult {
  scope: string;
  source: string;
  seq?: number;
}

export interface PrepareResult {
  scope: string;
  prepared: PreparedHandoff;
}

export interface HandoffCurrentWorkResult extends PrepareResult {
  boundary: string;
}

export interface CommitResult {
  scope: string;
  revision: string;
  handoffId: string;
  number: number;
  idempotent: boolean;
}

export interface UnreadableEvidence {
  citation: Citation;
  reason: string;
}

export interface ContinueResult {
  scope: string;
  trust: 'untrusted_history';
  mode: 'prepared' | 'exact' | 'latest';
  found: boolean;
  selected: string | null;
  current: string | null;
  content: HandoffDraft | null;
  citations: Citation[];
  unreadableEvidence: UnreadableEvidence[];
  requiredChecks: string[];
  digest?: string;
  /** With ``render``: the continue view the server's template writes. */
  markdown?: string;
}

export interface AcknowledgeResult {
  scope: string;
  receipt: string;
  status: AckStatus;
  target: string;
}

export type ReportKind = 'continuity' | 'history' | 'handoff' | 'lineage';

export interface ContinuityData {
  scope?: string;
  head: string | null;
  transfer: 'none' | 'pending' | 'accepted' | 'needs_clarification' | 'declined';
  outcome: 'none' | 'covered' | 'uncovered';
  totalEvents: number;
  events: { seq: number; kind: string; at: string; summary: string }[];
}

export interface HistoryRevision {
  revision: string;
  number: number;
  content?: Partial<HandoffDraft>;
  committedAt?: string;
  covered?: boolean;
  acknowledgements?: { receipt: string; status: string; actor?: string | null }[];
}

export interface ReportResult<D = unknown> {
  scope: string;
  kind: ReportKind;
  markdown: string;
  data: D;
}

export interface AgentSession {
  path: string;
  format: string;
  title?: string;
  updatedAt: string;
  messageCount: number;
  /** False for a session with nothing to hand off yet (fewer than two messages). */
  canHandOff?: boolean;
  /** Set for a session a handoff started: the session it continues. */
  startedFrom?: { parentSession?: string | null; start?: string | null; handoff?: unknown };
}

export interface SessionsResult {
  sessions: AgentSession[];
  /** The agents' session folders the server looked in. */
  searched?: string[];
}

export interface SessionRef {
  path: string;
  format: string;
  id?: string;
}

/** `handoff.generate`: the document and its draft; no agent session is written (unless
 * `startSession: true`, the one-step flow, which this extension does not send). */
export interface GenerateResult {
  scope?: string;
  document: string;
  missingSections: string[];
  draft: HandoffDraft;
  provider: string;
  sourceSession: SessionRef & { title?: string; messageCount?: number };
  /** The generation's id (for `handoff.startSession`'s lineage). */
  generation?: string;
  /** The saved plain-Markdown draft, relative to the workspace. */
  draftPath?: string;
  documentPath?: string;
  warnings?: string[];
  started?: StartSessionResult;
}

/** The agents a session can be started in (`handoff.startSession`'s `agent`). */
export const AGENTS = ['pi', 'omp', 'claude', 'codex', 'opencode', 'gemini', 'qwen'] as const;
export type Agent = (typeof AGENTS)[number];

export const AGENT_LABELS: Record<Agent, string> = {
  pi: 'pi',
  omp: 'oh-my-pi (omp)',
  claude: 'Claude Code',
  codex: 'Codex',
  opencode: 'opencode',
  gemini: 'Gemini CLI',
  qwen: 'Qwen Code',
};

/** The agent that wrote a session file: oh-my-pi keeps pi's format under `.omp`
 * (as the server's `agent_of`). */
export function agentOf(session: { path: string; format?: string } | undefined): Agent | undefined {
  if (!session) {
    return undefined;
  }
  if (session.format === 'pi') {
    return session.path.split(/[\\/]/).includes('.omp') ? 'omp' : 'pi';
  }
  return (AGENTS as readonly string[]).includes(session.format ?? '') ? (session.format as Agent) : undefined;
}

export interface StartSessionParams {
  document?: string;
  prepared?: PreparedHandoff;
  revision?: string;
  agent?: Agent;
  parentSession?: string;
  generation?: string;
  scope?: string;
}

export interface StartSessionResult {
  scope: string;
  agent: Agent;
  /** A shell command line that starts the agent in the workspace on the handoff. */
  command: string;
  /** The pi / omp session written for it; null for Claude Code and Codex. */
  newSession: { path: string; id: string } | null;
  /** The exact text handed over, saved under the state folder (workspace-relative). */
  documentPath: string;
  lineage: Record<string, unknown>;
  /** What the handed-over text contradicts or dropped of its session (a warning). */
  claims?: CheckDiagnostic[];
  /** What the successor receives and what it does not, said in one sentence. */
  transfer?: { said: string };
}

/** `handoff.repairStore`'s answer: what was done, and the store's check after it. */
export interface RepairStoreResult {
  ok: boolean;
  action: 'check' | 'repair' | 'restore' | 'fresh';
  actions: string[];
  check: {
    ok: boolean;
    stateFile?: string;
    counts?: { segments?: number; sources?: number; revisions?: number };
    problems?: { problem: string; message: string }[];
  };
}

/** One finding of `handoff.check` (lines 1-based). */
export interface CheckDiagnostic {
  line: number;
  endLine: number;
  severity: 'error' | 'warning' | 'information' | 'hint';
  code: string;
  message: string;
  evidence: Record<string, unknown>[];
}

/** Is ``value`` shaped like a PreparedHandoff (enough to hand back to the server)? */
export function isPreparedHandoff(value: unknown): value is PreparedHandoff {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return false;
  }
  const v = value as Record<string, unknown>;
  return (
    typeof v.scope === 'string' &&
    typeof v.digest === 'string' &&
    v.digest.startsWith('sha256:') &&
    typeof v.content === 'object' &&
    v.content !== null
  );
}
