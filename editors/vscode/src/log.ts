/** Log lines at the level they mean: the server's stderr (`2026-12-01 12:00:00,123 WARNING
 * lsp_server.surfaces.lsp.server: …`) and the language client's own lines (`[Error - 12:00:00] …`)
 * reach the "Handoff" log channel at their level, without their own timestamp (the
 * channel adds one). Free of `vscode`. */

export type LogLevel = 'trace' | 'debug' | 'info' | 'warn' | 'error';

export interface LevelledLog {
  trace(message: string): void;
  debug(message: string): void;
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

const SERVER_LINE = /^\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[,.]\d+)? (DEBUG|INFO|WARNING|ERROR|CRITICAL) (.*)$/;
const CLIENT_LINE = /^\[(Trace|Debug|Info|Warn|Error)\s*-\s*[^\]]*\]\s?(.*)$/;
const SERVER_LEVELS: Record<string, LogLevel> = { DEBUG: 'debug', INFO: 'info', WARNING: 'warn', ERROR: 'error', CRITICAL: 'error' };
const NORMAL_EXIT = /^Server process exited with code 0\.?$/;
const CLIENT_LEVELS: Record<string, LogLevel> = { Trace: 'trace', Debug: 'debug', Info: 'info', Warn: 'warn', Error: 'error' };

/** The level and the message of one line; ``undefined`` level: a continuation line
 * (a traceback), which keeps the level of the line before it. */
export function parseLogLine(line: string): { level: LogLevel | undefined; message: string } {
  let m = SERVER_LINE.exec(line);
  if (m) {
    return { level: SERVER_LEVELS[m[1]], message: m[2] };
  }
  m = CLIENT_LINE.exec(line);
  if (m) {
    // The client says a normal stop (exit code 0) at error level: it is information.
    const level = m[1] === 'Error' && NORMAL_EXIT.test(m[2]) ? 'info' : CLIENT_LEVELS[m[1]];
    return { level, message: m[2] };
  }
  return { level: undefined, message: line };
}

/** What the language client writes to (`append`, `appendLine`): split into lines, each
 * sent to ``log`` at its level. */
export class LevelRouter {
  private partial = '';
  private last: LogLevel = 'info';

  constructor(private readonly log: LevelledLog) {}

  append(text: string): void {
    const lines = (this.partial + text).split(/\r?\n/);
    this.partial = lines.pop() ?? '';
    for (const line of lines) {
      this.line(line);
    }
  }

  appendLine(text: string): void {
    this.append(`${text}\n`);
  }

  flush(): void {
    if (this.partial) {
      this.line(this.partial);
      this.partial = '';
    }
  }

  private line(line: string): void {
    if (!line.trim()) {
      return;
    }
    const { level, message } = parseLogLine(line);
    this.last = level ?? this.last;
    this.log[this.last](message);
  }
}

/** The level a refused or failed command is logged at: cancellation is information, a
 * refusal of the input a warning, the server failing an error. */
export function failureLevel(code: string): LogLevel {
  if (code === 'cancelled') {
    return 'info';
  }
  if (['internal_error', 'server_unavailable', 'server_not_found', 'no_workspace'].includes(code)) {
    return 'error';
  }
  return 'warn';
}
