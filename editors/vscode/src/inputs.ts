/** Input collection for the palette commands: quick picks and input boxes that build one
 * params object per server command. Returns undefined whenever the user dismisses a step. */

import {
  ACCEPTANCE_CHECKS,
  ACK_STATUSES,
  AckStatus,
  AcceptanceCheckKey,
  AcceptanceChecks,
  CHECK_STATUSES,
  Citation,
  DISPOSITIONS,
  Disposition,
  Fact,
  HandoffDraft,
  OUTCOME_STATUSES,
  OutcomeStatus,
  PreparedHandoff,
  REVISION_RE,
  SOURCE_RE,
} from './protocol';
import type { PickItem, Ui, Validate } from './ui';

/** What Continue / Acknowledge / Show Handoff point at. */
export type HandoffTarget =
  /** ``scope``: the revision's scope when it is not the default one (the Handoff view's
   * other scopes). */
  | { kind: 'revision'; revision: string; scope?: string }
  | { kind: 'prepared'; prepared: PreparedHandoff }
  | { kind: 'latest' };

export function describeTarget(target: HandoffTarget): string {
  switch (target.kind) {
    case 'revision':
      return target.revision;
    case 'prepared':
      return `prepared ${shortDigest(target.prepared.digest)}`;
    case 'latest':
      return 'the latest revision';
  }
}

export function shortDigest(digest: string): string {
  return digest.replace(/^sha256:/, '').slice(0, 12);
}

/** The params keys that select a target: ``mode`` plus ``revision`` or ``prepared``. */
export function targetParams(target: HandoffTarget): {
  mode: 'exact' | 'prepared' | 'latest';
  revision?: string;
  prepared?: PreparedHandoff;
  scope?: string;
} {
  switch (target.kind) {
    case 'revision':
      return target.scope ? { mode: 'exact', revision: target.revision, scope: target.scope } : { mode: 'exact', revision: target.revision };
    case 'prepared':
      return { mode: 'prepared', prepared: target.prepared };
    case 'latest':
      return { mode: 'latest' };
  }
}

// -- facts and citations --------------------------------------------------------------

/** ``source/<id>`` → a source citation; anything else → a workspace-relative artifact,
 * with ``:12`` or ``:12-20`` after the path for the cited lines. */
export function parseCitation(spec: string): Citation {
  const text = spec.trim();
  if (text.startsWith('source/')) {
    return { kind: 'source', ref: text };
  }
  const m = LINES_RE.exec(text);
  const path = (m ? m[1] : text).replace(/^\.\//, '');
  if (!m) {
    return { kind: 'artifact', path };
  }
  const start = Number(m[2]);
  return { kind: 'artifact', path, lines: [start, m[3] ? Number(m[3]) : start] };
}

const LINES_RE = /^(.+?):(\d+)(?:-(\d+))?$/;

/** Why a comma-separated evidence list is not acceptable, or undefined when it is. */
export function validateCitations(value: string): string | undefined {
  const parts = value.split(',').map((p) => p.trim()).filter((p) => p.length > 0);
  if (parts.length === 0) {
    return 'Cite at least one piece of evidence: a workspace path (path:line for lines) or source/<id>.';
  }
  for (const part of parts) {
    if (part.startsWith('source/') && !SOURCE_RE.test(part)) {
      return `${part} is not a source reference (source/<id>).`;
    }
    if (part.startsWith('/') || /^[A-Za-z]:[\\/]/.test(part)) {
      return `${part} is absolute: cite a path relative to the workspace.`;
    }
    if (part.split(/[\\/]/).includes('..')) {
      return `${part} leaves the workspace: cite a path inside it.`;
    }
    const m = LINES_RE.exec(part);
    if (m && (Number(m[2]) < 1 || (m[3] !== undefined && Number(m[3]) < Number(m[2])))) {
      return `${part}: lines run from 1, the first no later than the last (path:12 or path:12-20).`;
    }
  }
  return undefined;
}

/** Looks a citation up where it points (the file in the workspace, its lines); says why
 * it cannot be cited, or undefined. Supplied by the editor; the checks stop at syntax
 * without one. */
export type EvidenceCheck = (citation: Citation) => Promise<string | undefined>;

/** ``validateCitations``, then each citation looked up with ``check`` as it is typed. */
export function citationValidator(check?: EvidenceCheck): (value: string) => Promise<string | undefined> {
  return async (value) => {
    const syntax = validateCitations(value);
    if (syntax !== undefined || !check) {
      return syntax;
    }
    for (const citation of parseCitations(value)) {
      const problem = await check(citation);
      if (problem) {
        return problem;
      }
    }
    return undefined;
  };
}

export function parseCitations(value: string): Citation[] {
  return value
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p.length > 0)
    .map(parseCitation);
}

/** ``"text :: cite, cite"`` (the CLI's spelling) → a Fact. */
export function parseFactSpec(spec: string): Fact | undefined {
  const at = spec.indexOf('::');
  if (at < 0) {
    return undefined;
  }
  const text = spec.slice(0, at).trim();
  const cites = spec.slice(at + 2);
  if (!text || validateCitations(cites) !== undefined) {
    return undefined;
  }
  return { text, citations: parseCitations(cites) };
}

export function validateFactSpec(spec: string): string | undefined {
  const at = spec.indexOf('::');
  if (at < 0) {
    return "Write the action and its evidence: 'text :: path/or/source-ref[, more]'.";
  }
  if (!spec.slice(0, at).trim()) {
    return 'Describe the action before the ::.';
  }
  return validateCitations(spec.slice(at + 2));
}

const required = (what: string) => (value: string) =>
  value.trim() ? undefined : `${what} cannot be empty.`;

// -- generic steps ----------------------------------------------------------------------

/** What a list step's title shows of the items entered so far. */
export function soFar(items: string[]): string {
  if (items.length === 0) {
    return 'none yet';
  }
  const shown = items.map((i) => (i.length > 40 ? `${i.slice(0, 39)}…` : i)).join(' · ');
  return `${items.length}: ${shown.length > 100 ? `${shown.slice(0, 99)}…` : shown}`;
}

/** Repeated input boxes until an empty entry; at least ``min`` items. ``initial`` (the
 * values of a refused attempt) fills the boxes in turn. */
export async function collectList(
  ui: Ui,
  options: { title: string; prompt: string; min: number; validate?: Validate; initial?: string[] },
): Promise<string[] | undefined> {
  const items: string[] = [];
  for (;;) {
    const done = items.length >= options.min;
    const value = await ui.input({
      title: `${options.title} (${soFar(items)})`,
      prompt: done ? `${options.prompt} Leave empty and press Enter to finish.` : options.prompt,
      value: options.initial?.[items.length],
      validate: (v) => {
        if (!v.trim()) {
          return done ? undefined : `Enter at least ${options.min} item${options.min === 1 ? '' : 's'}.`;
        }
        return options.validate?.(v);
      },
    });
    if (value === undefined) {
      return undefined;
    }
    if (!value.trim()) {
      return items;
    }
    items.push(value.trim());
  }
}

/** Citations back in the spelling they are typed in (``path:12-20``, ``source/<id>``). */
export function formatCitations(citations: Citation[]): string {
  return citations
    .map((c) => (c.kind === 'source' ? c.ref : c.lines ? `${c.path}:${c.lines[0]}${c.lines[1] !== c.lines[0] ? `-${c.lines[1]}` : ''}` : c.path))
    .join(', ');
}

/** How the typed-in steps check and what they start from. */
export interface StepOptions {
  /** Looks each citation up as it is typed. */
  check?: EvidenceCheck;
}

/** A Fact as two steps: what is true, then the evidence for it. */
export async function collectFact(ui: Ui, title: string, prompt: string, options: StepOptions & { initial?: Fact } = {}): Promise<Fact | undefined> {
  const text = await ui.input({ title, prompt, value: options.initial?.text, validate: required('The statement') });
  if (text === undefined) {
    return undefined;
  }
  const cites = await ui.input({
    title: `${title}: evidence`,
    prompt: 'Evidence for it: workspace paths (path:12 or path:12-20 for lines) or source/<id>, comma-separated.',
    placeholder: 'src/client.ts:40-52, source/6ea103d664ad4374bf75',
    value: options.initial ? formatCitations(options.initial.citations) : undefined,
    validate: citationValidator(options.check),
  });
  if (cites === undefined) {
    return undefined;
  }
  return { text: text.trim(), citations: parseCitations(cites) };
}

export async function pickDisposition(ui: Ui, title: string, before?: Disposition): Promise<Disposition | undefined> {
  const detail: Record<Disposition, string> = {
    continuable: 'Another session can pick the work up and carry on.',
    blocked: 'The work cannot go on until something outside it changes.',
    done: 'The objective is met; only checking remains.',
  };
  // A retry offers the value of the refused attempt first.
  const order = before ? [before, ...DISPOSITIONS.filter((d) => d !== before)] : [...DISPOSITIONS];
  return ui.pick(
    order.map((d) => ({ label: d, description: d === before ? 'as before' : undefined, detail: detail[d], value: d })),
    { title, placeholder: 'Where does the work stand?' },
  );
}

// -- per command ------------------------------------------------------------------------

export interface ContractInput {
  objective: string;
  inScope: string[];
  outOfScope: string[];
  acceptance: string[];
}

/** The Work Contract's steps; ``initial`` (a refused attempt) fills each in again. */
export async function collectContract(ui: Ui, initial?: ContractInput): Promise<ContractInput | undefined> {
  const title = 'Record Work Contract';
  const objective = await ui.input({
    title: `${title}: objective`,
    prompt: 'What should the work achieve?',
    value: initial?.objective,
    validate: required('The objective'),
  });
  if (objective === undefined) {
    return undefined;
  }
  const inScope = await collectList(ui, { title: `${title}: in scope`, prompt: 'Something the work covers.', min: 1, initial: initial?.inScope });
  if (inScope === undefined) {
    return undefined;
  }
  const outOfScope = await collectList(ui, {
    title: `${title}: out of scope`,
    prompt: 'Something the work must not touch (optional).',
    min: 0,
    initial: initial?.outOfScope,
  });
  if (outOfScope === undefined) {
    return undefined;
  }
  const acceptance = await collectList(ui, {
    title: `${title}: acceptance`,
    prompt: 'A criterion that shows the work is done.',
    min: 1,
    initial: initial?.acceptance,
  });
  if (acceptance === undefined) {
    return undefined;
  }
  return { objective: objective.trim(), inScope, outOfScope, acceptance };
}

export interface WorkStateInput {
  state: Fact;
  disposition: Disposition;
  nextActions: Fact[];
}

async function collectNextActions(ui: Ui, title: string, options: StepOptions & { initial?: Fact[] } = {}): Promise<Fact[] | undefined> {
  const check = citationValidator(options.check);
  const specs = await collectList(ui, {
    title: `${title}: next actions`,
    prompt: "A next action and its evidence: 'text :: path/or/source-ref[, more]'.",
    min: 0,
    initial: options.initial?.map((f) => `${f.text} :: ${formatCitations(f.citations)}`),
    validate: async (v) => validateFactSpec(v) ?? (await check(v.slice(v.indexOf('::') + 2))),
  });
  return specs?.map((s) => parseFactSpec(s) as Fact);
}

/** The Record Work State steps; ``initial`` (a refused attempt) fills every step. */
export async function collectWorkState(ui: Ui, options: StepOptions & { initial?: WorkStateInput } = {}): Promise<WorkStateInput | undefined> {
  const title = 'Record Work State';
  const state = await collectFact(ui, `${title}: state`, 'Where does the work stand right now?', { check: options.check, initial: options.initial?.state });
  if (!state) {
    return undefined;
  }
  const disposition = await pickDisposition(ui, `${title}: disposition`, options.initial?.disposition);
  if (!disposition) {
    return undefined;
  }
  const nextActions = await collectNextActions(ui, title, { check: options.check, initial: options.initial?.nextActions });
  if (!nextActions) {
    return undefined;
  }
  return { state, disposition, nextActions };
}

/** A whole draft typed in (for a Markdown document that did not come from Generate). */
export async function collectDraft(ui: Ui, document: string | undefined, options: StepOptions & { initial?: HandoffDraft } = {}): Promise<HandoffDraft | undefined> {
  const title = 'Prepare from Draft';
  const initial = options.initial;
  const objective = await ui.input({ title: `${title}: objective`, prompt: 'The objective this handoff serves.', value: initial?.objective, validate: required('The objective') });
  if (objective === undefined) {
    return undefined;
  }
  const state = await collectFact(ui, `${title}: state`, 'Where does the work stand right now?', { check: options.check, initial: initial?.state });
  if (!state) {
    return undefined;
  }
  const disposition = await pickDisposition(ui, `${title}: disposition`, initial?.disposition as Disposition | undefined);
  if (!disposition) {
    return undefined;
  }
  const nextActions = await collectNextActions(ui, title, { check: options.check, initial: initial?.nextActions });
  if (!nextActions) {
    return undefined;
  }
  return { objective: objective.trim(), state, disposition, nextActions, ...(document !== undefined ? { document } : {}) };
}

/** The choices offered wherever a handoff must be picked. */
export interface TargetChoices {
  /** The head revision of the scope, when known. */
  head?: string | null;
  /** Committed revisions (newest first) with a one-line description. */
  revisions?: { revision: string; description?: string }[];
  /** Prepared handoffs kept in this session. */
  prepared?: PreparedHandoff[];
  /** The target the last Continue selected. */
  lastContinued?: HandoffTarget;
  allowLatest?: boolean;
  allowLoad?: boolean;
}

export const LOAD_FROM_FILE = Symbol('load-from-file');
export const TYPE_REVISION = Symbol('type-revision');
type TargetChoice = HandoffTarget | typeof LOAD_FROM_FILE | typeof TYPE_REVISION;

export function validateRevision(value: string): string | undefined {
  return REVISION_RE.test(value.trim()) ? undefined : 'A revision looks like handoff/<id>@<n>.';
}

export function preparedLabel(prepared: PreparedHandoff): PickItem<TargetChoice> {
  const objective = prepared.content?.objective ?? '';
  return {
    label: `$(file-text) Prepared ${shortDigest(prepared.digest)}`,
    description: `${prepared.scope} · not committed`,
    detail: objective,
    value: { kind: 'prepared', prepared },
  };
}

/**
 * Picks a handoff to act on. ``loadPrepared`` is called for "Load from file…".
 * Returns undefined when dismissed.
 */
export async function pickTarget(
  ui: Ui,
  title: string,
  choices: TargetChoices,
  loadPrepared?: () => Promise<PreparedHandoff | undefined>,
): Promise<HandoffTarget | undefined> {
  const items: PickItem<TargetChoice>[] = [];
  const seen = new Set<string>();
  const last = choices.lastContinued;
  if (last && last.kind !== 'latest') {
    items.push({ label: `$(debug-continue) ${describeTarget(last)}`, description: 'the handoff you continued from', value: last });
    seen.add(last.kind === 'revision' ? last.revision : last.prepared.digest);
  }
  if (choices.allowLatest) {
    items.push({
      label: '$(arrow-up) Latest revision',
      description: choices.head ? `currently ${choices.head}` : 'none committed yet',
      value: { kind: 'latest' },
    });
  }
  if (choices.head && !seen.has(choices.head)) {
    items.push({ label: `$(git-commit) ${choices.head}`, description: 'head revision', value: { kind: 'revision', revision: choices.head } });
    seen.add(choices.head);
  }
  for (const rev of choices.revisions ?? []) {
    if (!seen.has(rev.revision)) {
      items.push({ label: `$(git-commit) ${rev.revision}`, description: rev.description, value: { kind: 'revision', revision: rev.revision } });
      seen.add(rev.revision);
    }
  }
  for (const prepared of choices.prepared ?? []) {
    if (!seen.has(prepared.digest)) {
      items.push(preparedLabel(prepared));
      seen.add(prepared.digest);
    }
  }
  items.push({ label: '$(edit) Another revision…', description: 'type handoff/<id>@<n>', value: TYPE_REVISION });
  if (choices.allowLoad && loadPrepared) {
    items.push({ label: '$(folder-opened) Load prepared handoff from file…', value: LOAD_FROM_FILE });
  }
  const choice = await ui.pick(items, { title, placeholder: 'Which handoff?' });
  if (choice === undefined) {
    return undefined;
  }
  if (choice === TYPE_REVISION) {
    const revision = await ui.input({ title, prompt: 'The exact revision.', placeholder: 'handoff/<id>@<n>', validate: validateRevision });
    return revision === undefined ? undefined : { kind: 'revision', revision: revision.trim() };
  }
  if (choice === LOAD_FROM_FILE) {
    const prepared = await loadPrepared?.();
    return prepared ? { kind: 'prepared', prepared } : undefined;
  }
  return choice;
}

/** A status as the user reads it: `needs_clarification` → "needs clarification". */
export function inWords(status: string): string {
  return status.replace(/_/g, ' ');
}

export interface AcknowledgeInput {
  status: AckStatus;
  checks: AcceptanceChecks;
  note?: string;
}

/** Status, the four checks as a multi-select, and an optional note. ``accepted`` with a
 * check left unticked is caught here, before the note and before the server: tick them
 * again, or record ``needs_clarification`` with the missing checks named in the note. */
export async function collectAcknowledgement(ui: Ui, target: HandoffTarget): Promise<AcknowledgeInput | undefined> {
  const title = `Acknowledge ${describeTarget(target)}`;
  const detail: Record<AckStatus, string> = {
    accepted: 'I take the work over; all four checks must hold.',
    needs_clarification: 'I need answers before I can take it over.',
    declined: 'I will not take this work over.',
  };
  let status = await ui.pick(
    ACK_STATUSES.map((s) => ({ label: inWords(s), detail: detail[s], value: s })),
    { title: `${title} (1/3): status`, placeholder: 'How do you receive this handoff?' },
  );
  if (!status) {
    return undefined;
  }
  let confirmed: AcceptanceCheckKey[] = [];
  let missingNote = '';
  for (;;) {
    const ticked = await ui.pickMany(
      ACCEPTANCE_CHECKS.map((c) => ({ label: c.label, description: c.name, detail: c.detail, picked: confirmed.includes(c.key), value: c.key })),
      {
        title: `${title} (2/3): checks`,
        placeholder: status === 'accepted' ? 'Accepting needs all four: tick each one you have confirmed, then press Enter.' : 'Tick each check you have confirmed, then press Enter.',
      },
    );
    if (!ticked) {
      return undefined;
    }
    confirmed = ticked;
    const missing = ACCEPTANCE_CHECKS.filter((c) => !confirmed.includes(c.key));
    if (status !== 'accepted' || missing.length === 0) {
      break;
    }
    const names = missing.map((c) => c.label.toLowerCase()).join(', ');
    const choice = await ui.pick<'again' | 'clarify'>(
      [
        { label: '$(checklist) Tick the checks again', description: `missing: ${names}`, value: 'again' },
        { label: '$(question) Record as needs clarification instead', description: 'the note names the missing checks', value: 'clarify' },
      ],
      { title: `${title}: accepting needs all four checks`, placeholder: `Not confirmed: ${names}.` },
    );
    if (!choice) {
      return undefined;
    }
    if (choice === 'clarify') {
      status = 'needs_clarification';
      missingNote = `Not confirmed yet: ${names}.`;
      break;
    }
  }
  const checks = Object.fromEntries(ACCEPTANCE_CHECKS.map((c) => [c.key, confirmed.includes(c.key)])) as AcceptanceChecks;
  const note = await ui.input({
    title: `${title} (3/3): note`,
    prompt: 'A note for the record (optional). Press Enter to skip.',
    value: missingNote || undefined,
  });
  if (note === undefined) {
    return undefined;
  }
  return { status, checks, ...(note.trim() ? { note: note.trim() } : {}) };
}

export interface OutcomeInput {
  status: OutcomeStatus;
  summary: string;
  checks: { name: string; status: string }[];
  receipt?: string;
}

export function parseCheckSpec(spec: string): { name: string; status: string } | undefined {
  const m = /^(.+?)\s*[=:]\s*([a-z_]+)\s*$/.exec(spec.trim());
  if (!m || !(CHECK_STATUSES as readonly string[]).includes(m[2])) {
    return undefined;
  }
  return { name: m[1].trim(), status: m[2] };
}

/** The Task Outcome's steps; ``initial`` (a refused attempt) fills each in again. */
export async function collectOutcome(
  ui: Ui,
  receipts: { receipt: string; description: string }[],
  initial?: OutcomeInput,
): Promise<OutcomeInput | undefined> {
  const title = 'Record Outcome';
  const order = initial ? [initial.status, ...OUTCOME_STATUSES.filter((s) => s !== initial.status)] : [...OUTCOME_STATUSES];
  const status = await ui.pick(
    order.map((s) => ({ label: s, description: s === initial?.status ? 'as before' : undefined, value: s })),
    { title: `${title}: status`, placeholder: 'How did the task end?' },
  );
  if (!status) {
    return undefined;
  }
  const summary = await ui.input({ title: `${title}: summary`, prompt: 'One line on what happened.', value: initial?.summary, validate: required('The summary') });
  if (summary === undefined) {
    return undefined;
  }
  const checkSpecs = await collectList(ui, {
    title: `${title}: checks`,
    prompt: `A check and its status, e.g. 'contract tests = passed' (${CHECK_STATUSES.join(', ')}).`,
    min: 0,
    initial: initial?.checks.map((c) => `${c.name} = ${c.status}`),
    validate: (v) => (parseCheckSpec(v) ? undefined : `Write 'name = status' with a status of ${CHECK_STATUSES.join(', ')}.`),
  });
  if (!checkSpecs) {
    return undefined;
  }
  let receipt: string | undefined;
  if (receipts.length > 0) {
    const picked = await ui.pick<string | null>(
      [
        ...receipts.map((r) => ({ label: r.receipt, description: r.description, value: r.receipt })),
        { label: 'No receipt', description: 'the outcome does not follow an acknowledged handoff', value: null },
      ],
      { title: `${title}: acknowledgement`, placeholder: 'Which acknowledgement does this outcome follow?' },
    );
    if (picked === undefined) {
      return undefined;
    }
    receipt = picked ?? undefined;
  }
  return {
    status,
    summary: summary.trim(),
    checks: checkSpecs.map((s) => parseCheckSpec(s) as { name: string; status: string }),
    ...(receipt ? { receipt } : {}),
  };
}
