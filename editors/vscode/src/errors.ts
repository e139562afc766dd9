/** Refusals and failures of server commands as values, and how the UI shows them. */

import type { Ui } from './ui';

/** JSON-RPC codes the contract uses, plus the client-side ones we translate. */
export const RpcCode = {
  invalidParams: -32602,
  requestFailed: -32803,
  requestCancelled: -32800,
  methodNotFound: -32601,
  internalError: -32603,
  /** vscode-jsonrpc: the connection closed or the client is not running. */
  connectionInactive: -32096,
  pendingResponseRejected: -32097,
} as const;

/** A failed server command: the server's snake_case ``code``, its message and data. */
export class HandoffCommandError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly data: Record<string, unknown> = {},
    readonly rpcCode?: number,
  ) {
    super(message);
    this.name = 'HandoffCommandError';
  }

  get cancelled(): boolean {
    return this.code === 'cancelled';
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Turns whatever a request rejected with into a HandoffCommandError. */
export function toCommandError(error: unknown): HandoffCommandError {
  if (error instanceof HandoffCommandError) {
    return error;
  }
  if (isObject(error) && typeof error.code === 'number' && typeof error.message === 'string') {
    // A JSON-RPC ResponseError (duck-typed so tests need not load vscode-languageclient).
    const data = isObject(error.data) ? error.data : {};
    const rpcCode = error.code;
    if (typeof data.code === 'string') {
      return new HandoffCommandError(data.code, error.message, data, rpcCode);
    }
    if (rpcCode === RpcCode.requestCancelled) {
      return new HandoffCommandError('cancelled', 'The command was cancelled; nothing was written.', data, rpcCode);
    }
    if (rpcCode === RpcCode.connectionInactive || rpcCode === RpcCode.pendingResponseRejected) {
      return new HandoffCommandError(
        'server_unavailable',
        'The Handoff language server is not running. Check the "Handoff" log, or restart it with "Handoff: Restart Server".',
        data,
        rpcCode,
      );
    }
    if (rpcCode === RpcCode.methodNotFound) {
      return new HandoffCommandError('server_outdated', `The Handoff language server does not support this command: ${error.message}`, data, rpcCode);
    }
    return new HandoffCommandError('server_error', `The Handoff language server failed: ${error.message}`, data, rpcCode);
  }
  if (error instanceof Error) {
    if (error.name === 'Canceled' || error.name === 'CancellationError') {
      return new HandoffCommandError('cancelled', 'The command was cancelled; nothing was written.');
    }
    return new HandoffCommandError('client_error', error.message);
  }
  return new HandoffCommandError('client_error', String(error));
}

/** A server message with its field paths in the words of the input steps:
 * ``draft.nextActions[1].citations[0]`` → "next action 2, evidence 1". */
export function inUserWords(message: string): string {
  return message
    .replace(/\b(?:draft\.|content\.)?nextActions\[(\d+)\]\.citations\[(\d+)\]/g, (_m, a: string, c: string) => `next action ${Number(a) + 1}, evidence ${Number(c) + 1}`)
    .replace(/\b(?:draft\.|content\.)?state\.citations\[(\d+)\]/g, (_m, c: string) => `the state's evidence ${Number(c) + 1}`)
    .replace(/\b(?:draft\.|content\.)?nextActions\[(\d+)\]/g, (_m, a: string) => `next action ${Number(a) + 1}`);
}

export const SHOW_LOG = 'Show Log';
export const OPEN_SETTINGS = 'Open Settings';

/**
 * Shows a failed command the way a user can act on it: the server's own message in an
 * error notification; a cancellation as information, since nothing went wrong.
 */
export async function showCommandError(ui: Ui, error: unknown): Promise<HandoffCommandError> {
  const failure = toCommandError(error);
  if (failure.cancelled) {
    void ui.info(failure.message);
    return failure;
  }
  if (failure.code === 'server_not_found') {
    void ui.error(failure.message, OPEN_SETTINGS, SHOW_LOG).then((action) => {
      if (action === OPEN_SETTINGS) {
        return ui.runCommand('workbench.action.openSettings', 'handoff.server');
      }
      return action === SHOW_LOG ? ui.runCommand('handoffUi.showLog') : undefined;
    });
    return failure;
  }
  if (failure.code === 'server_unavailable' || failure.code === 'server_error' || failure.code === 'client_error') {
    void ui.error(failure.message, SHOW_LOG).then((action) =>
      action === SHOW_LOG ? ui.runCommand('handoffUi.showLog') : undefined,
    );
    return failure;
  }
  if (failure.code === 'store_corrupt') {
    // The repair is in the editor too (the .vsix has no CLI).
    void ui.error(inUserWords(failure.message), REPAIR_STORE).then((action) =>
      action === REPAIR_STORE ? ui.runCommand('handoffUi.repairStore') : undefined,
    );
    return failure;
  }
  void ui.error(inUserWords(failure.message));
  return failure;
}

/** The button of a store_corrupt refusal. */
export const REPAIR_STORE = 'Repair Store…';
