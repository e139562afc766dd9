/** Test doubles: a scripted `Ui` (what the user would click and type), a recording
 * server, and recording views. */

import type { DraftDocument, DraftOrigin, ExecuteOptions, HandoffServer, ReportView, Views } from '../../src/commands';
import type { HandoffDraft, PreparedHandoff, ServerCommandId } from '../../src/protocol';
import type { CancellationTokenLike, InputOptions, PickItem, PickOptions, ProgressReporter, Ui } from '../../src/ui';
import { ResponseError } from 'vscode-jsonrpc';

/** What the user does at one step. */
export type Answer =
  | { pick: string } // the item whose label contains this text
  | { pickMany: string[] } // the items whose labels contain these texts
  | { type: string } // text typed into an input box
  | { enter: true } // Enter on the box's value as it was filled in
  | { dismiss: true }; // Escape

export interface Shown {
  kind: 'info' | 'warn' | 'error';
  message: string;
  actions: string[];
}

export class CancellationSource {
  private readonly listeners = new Set<() => void>();
  private cancelled = false;
  readonly token: CancellationTokenLike;

  constructor() {
    // eslint-disable-next-line @typescript-eslint/no-this-alias
    const source = this;
    this.token = {
      get isCancellationRequested() {
        return source.cancelled;
      },
      onCancellationRequested(listener: () => void) {
        source.listeners.add(listener);
        return { dispose: () => source.listeners.delete(listener) };
      },
    };
  }

  cancel(): void {
    this.cancelled = true;
    for (const listener of this.listeners) {
      listener();
    }
  }
}

export class ScriptedUi implements Ui {
  readonly shown: Shown[] = [];
  readonly steps: { kind: string; title: string; items?: string[]; value?: string; placeholder?: string; picked?: string[] }[] = [];
  readonly validationErrors: string[] = [];
  readonly commandsRun: { id: string; args: unknown[] }[] = [];
  readonly terminals: { name: string; commandLine: string }[] = [];
  readonly clipboard: string[] = [];
  readonly progress: { title: string; reports: [string | undefined, number | undefined][] }[] = [];
  /** The action the user clicks on the next notification that offers it. */
  clickAction: string | undefined;
  /** Called inside withProgress, e.g. to press Cancel. */
  onProgress: ((cancel: () => void) => void) | undefined;
  saveTo: string | undefined;
  openFrom: string | undefined;

  constructor(private readonly answers: Answer[] = []) {}

  answer(...more: Answer[]): this {
    this.answers.push(...more);
    return this;
  }

  get remaining(): number {
    return this.answers.length;
  }

  private next(kind: string, title: string): Answer {
    const answer = this.answers.shift();
    if (!answer) {
      throw new Error(`the script has no answer for ${kind} "${title}"`);
    }
    return answer;
  }

  async pick<T>(items: PickItem<T>[], options: PickOptions): Promise<T | undefined> {
    this.steps.push({ kind: 'pick', title: options.title, items: items.map((i) => i.label), placeholder: options.placeholder });
    const answer = this.next('pick', options.title);
    if ('dismiss' in answer) {
      return undefined;
    }
    if (!('pick' in answer)) {
      throw new Error(`expected a pick answer for "${options.title}", got ${JSON.stringify(answer)}`);
    }
    const item = items.find((i) => i.label.includes(answer.pick));
    if (!item) {
      throw new Error(`no item "${answer.pick}" in "${options.title}": ${items.map((i) => i.label).join(' | ')}`);
    }
    return item.value;
  }

  async pickMany<T>(items: PickItem<T>[], options: PickOptions): Promise<T[] | undefined> {
    this.steps.push({ kind: 'pickMany', title: options.title, items: items.map((i) => i.label), picked: items.filter((i) => i.picked).map((i) => i.label) });
    const answer = this.next('pickMany', options.title);
    if ('dismiss' in answer) {
      return undefined;
    }
    if (!('pickMany' in answer)) {
      throw new Error(`expected a pickMany answer for "${options.title}"`);
    }
    return answer.pickMany.map((label) => {
      const item = items.find((i) => i.label.includes(label));
      if (!item) {
        throw new Error(`no item "${label}" in "${options.title}"`);
      }
      return item.value;
    });
  }

  /** Like an input box: a value the validator rejects is shown and the user types again. */
  async input(options: InputOptions): Promise<string | undefined> {
    this.steps.push({ kind: 'input', title: options.title, value: options.value });
    for (;;) {
      const answer = this.next('input', options.title);
      if ('dismiss' in answer) {
        return undefined;
      }
      if (!('type' in answer) && !('enter' in answer)) {
        throw new Error(`expected typed text for "${options.title}", got ${JSON.stringify(answer)}`);
      }
      const text = 'type' in answer ? answer.type : (options.value ?? '');
      const problem = await options.validate?.(text);
      if (problem === undefined) {
        return text;
      }
      this.validationErrors.push(problem);
    }
  }

  private show(kind: Shown['kind'], message: string, actions: string[]): Promise<string | undefined> {
    this.shown.push({ kind, message, actions });
    const click = this.clickAction && actions.includes(this.clickAction) ? this.clickAction : undefined;
    if (click) {
      this.clickAction = undefined;
    }
    return Promise.resolve(click);
  }

  info(message: string, ...actions: string[]) {
    return this.show('info', message, actions);
  }
  warn(message: string, ...actions: string[]) {
    return this.show('warn', message, actions);
  }
  error(message: string, ...actions: string[]) {
    return this.show('error', message, actions);
  }

  async withProgress<R>(title: string, task: (report: ProgressReporter, token: CancellationTokenLike) => Promise<R>): Promise<R> {
    const source = new CancellationSource();
    const entry = { title, reports: [] as [string | undefined, number | undefined][] };
    this.progress.push(entry);
    const running = task((m, p) => entry.reports.push([m, p]), source.token);
    this.onProgress?.(() => source.cancel());
    return running;
  }

  async saveFile(): Promise<string | undefined> {
    return this.saveTo;
  }
  /** The titles of the open dialogs shown. */
  readonly opened: string[] = [];
  async openFile(title = ''): Promise<string | undefined> {
    this.opened.push(title);
    return this.openFrom;
  }
  async runCommand(id: string, ...args: unknown[]): Promise<unknown> {
    this.commandsRun.push({ id, args });
    return undefined;
  }

  async runInTerminal(name: string, commandLine: string): Promise<void> {
    this.terminals.push({ name, commandLine });
  }
  async copyToClipboard(text: string): Promise<void> {
    this.clipboard.push(text);
  }

  errors(): string[] {
    return this.shown.filter((s) => s.kind === 'error').map((s) => s.message);
  }
}

export type Handler = (params: Record<string, unknown>, options: ExecuteOptions) => unknown | Promise<unknown>;

/** Answers server commands from handlers and records every call. */
export class RecordingServer implements HandoffServer {
  readonly calls: { command: string; params: Record<string, unknown> }[] = [];
  constructor(readonly handlers: Partial<Record<ServerCommandId, Handler>>) {}

  async execute<R>(command: ServerCommandId, params: object, options: ExecuteOptions = {}): Promise<R> {
    this.calls.push({ command, params: params as Record<string, unknown> });
    const handler = this.handlers[command];
    if (!handler) {
      throw new Error(`unexpected server command ${command}`);
    }
    return (await handler(params as Record<string, unknown>, options)) as R;
  }

  paramsOf(command: string): Record<string, unknown> {
    const call = [...this.calls].reverse().find((c) => c.command === command);
    if (!call) {
      throw new Error(`${command} was not called`);
    }
    return call.params;
  }
}

export class RecordingViews implements Views {
  readonly reports: ReportView[] = [];
  readonly drafts: { document: string; draft: HandoffDraft; origin?: DraftOrigin }[] = [];
  active: DraftDocument | undefined;
  /** The open drafts by id (what the user has typed into them: edit ``text``). */
  readonly open = new Map<string, DraftDocument>();

  async showReport(view: ReportView): Promise<void> {
    this.reports.push(view);
  }
  readonly replaced: { from: ReportView; to: ReportView }[] = [];
  async replaceReport(from: ReportView, to: ReportView): Promise<void> {
    this.replaced.push({ from, to });
  }
  async openDraft(document: string, draft: HandoffDraft, origin?: DraftOrigin): Promise<string> {
    this.drafts.push({ document, draft, origin });
    const id = `untitled:Untitled-${this.drafts.length}`;
    this.active = { id, name: `Untitled-${this.drafts.length}`, text: document, draft, origin };
    this.open.set(id, this.active);
    return id;
  }
  activeDraft(): DraftDocument | undefined {
    return this.active;
  }
  draftById(id: string): DraftDocument | undefined {
    return this.open.get(id);
  }
}

export const REVISION = 'handoff/ec6bd8c4c24e@1';

export function preparedFixture(overrides: Partial<PreparedHandoff> = {}): PreparedHandoff {
  return {
    type: 'prepared_handoff',
    scope: 'openapi-client',
    base: null,
    content: {
      objective: 'complete the OpenAPI client update',
      state: { text: 'client generation completed', citations: [{ kind: 'artifact', path: 'client/pets_client.py' }] },
      disposition: 'continuable',
      nextActions: [],
    },
    evidence: [{ kind: 'artifact', path: 'client/pets_client.py' }],
    boundary: null,
    preparedAt: '2026-12-01T07:40:55.939Z',
    digest: 'sha256:' + '5b370b11276f'.padEnd(64, '0'),
    ...overrides,
  };
}

export function historyReport(revisions: string[] = [REVISION]) {
  return {
    scope: 'openapi-client',
    kind: 'history',
    markdown: '# Handoff history',
    data: {
      head: revisions[0] ?? null,
      revisions: revisions.map((revision, i) => ({
        revision,
        number: revisions.length - i,
        content: { objective: `objective of ${revision}` },
        acknowledgements: [{ receipt: 'source/ack1', status: 'accepted' }],
      })),
    },
  };
}

/** Lets pending promise callbacks run. */
export const flush = () => new Promise((resolve) => setImmediate(resolve));

/** A server refusal as vscode-languageclient rejects with it. */
export function refusal(code: string, message: string, data: Record<string, unknown> = {}) {
  return new ResponseError(code === 'invalid_params' ? -32602 : -32803, message, { code, ...data });
}
