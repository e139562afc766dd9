/** The `handoff` settings the server reads, shaped as the server expects them
 * (initializationOptions and workspace/didChangeConfiguration). */

export const SETTINGS_SECTION = 'handoff';

/** Reads one setting under `handoff.` (vscode's WorkspaceConfiguration.get, or a stub). */
export type SettingsReader = <T>(key: string) => T | undefined;

export interface ServerSettings {
  scope?: string;
  stateFolder?: string;
  logLevel?: string;
  /** Markdown files checked as handoffs besides drafts and started texts (globs). */
  checkDocuments?: string[];
  generation: {
    provider?: string;
    maxPromptTokens?: number;
    openai: { baseUrl?: string; model?: string; apiKeyEnv?: string; timeoutSeconds?: number };
    anthropic: { baseUrl?: string; model?: string; apiKeyEnv?: string; maxTokens?: number; timeoutSeconds?: number };
    command: { argv?: string[]; timeoutSeconds?: number };
  };
}

function text(read: SettingsReader, key: string): string | undefined {
  const value = read<unknown>(key);
  return typeof value === 'string' && value.trim() ? value.trim() : undefined;
}

function num(read: SettingsReader, key: string): number | undefined {
  const value = read<unknown>(key);
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}

function strings(read: SettingsReader, key: string): string[] | undefined {
  const value = read<unknown>(key);
  return Array.isArray(value) && value.length > 0 && value.every((v) => typeof v === 'string') ? (value as string[]) : undefined;
}

/** A list of globs, an empty list kept (it turns the opt-in files off). */
function globs(read: SettingsReader, key: string): string[] | undefined {
  const value = read<unknown>(key);
  return Array.isArray(value) && value.every((v) => typeof v === 'string' && v.trim()) ? (value as string[]).map((v) => v.trim()) : undefined;
}

/** The default of `handoff.checkDocuments` (the server's own default too). */
export const DEFAULT_CHECK_DOCUMENTS = ['HANDOFF.md', 'handoff*.md'];

/** Drops undefined keys so the server sees only what the user set (and its own defaults). */
function compact<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}

/** The settings object sent to the server; empty values are left out so server defaults apply. */
export function serverSettings(read: SettingsReader): ServerSettings {
  return compact({
    scope: text(read, 'scope'),
    stateFolder: text(read, 'stateFolder'),
    logLevel: text(read, 'logLevel'),
    checkDocuments: globs(read, 'checkDocuments'),
    generation: compact({
      provider: text(read, 'generation.provider'),
      maxPromptTokens: num(read, 'generation.maxPromptTokens'),
      openai: compact({
        baseUrl: text(read, 'generation.openai.baseUrl'),
        model: text(read, 'generation.openai.model'),
        apiKeyEnv: text(read, 'generation.openai.apiKeyEnv'),
        timeoutSeconds: num(read, 'generation.openai.timeoutSeconds'),
      }),
      anthropic: compact({
        baseUrl: text(read, 'generation.anthropic.baseUrl'),
        model: text(read, 'generation.anthropic.model'),
        apiKeyEnv: text(read, 'generation.anthropic.apiKeyEnv'),
        maxTokens: num(read, 'generation.anthropic.maxTokens'),
        timeoutSeconds: num(read, 'generation.anthropic.timeoutSeconds'),
      }),
      command: compact({
        argv: strings(read, 'generation.command.argv'),
        timeoutSeconds: num(read, 'generation.command.timeoutSeconds'),
      }),
    }),
  });
}

/** Does a change of these settings need a new server process (rather than a settings push)? */
export const RESTART_SETTINGS = ['handoff.server.python', 'handoff.stateFolder', 'handoff.checkDocuments'];
