/** The end-to-end harness: a real VS Code (code-server) with the packaged extension,
 * a workspace prepared through the `handoff` CLI, and Chromium driven by Playwright. */

import { ChildProcess, execFileSync, spawn } from 'child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'fs';
import * as net from 'net';
import * as os from 'os';
import * as path from 'path';
import { Browser, chromium, FrameLocator, Page } from 'playwright-core';

export const extensionRoot = path.resolve(__dirname, '..', '..', '..');
export const repoRoot = path.resolve(extensionRoot, '..', '..');
export const screenshotDir = process.env.HANDOFF_E2E_SCREENSHOTS ?? path.join(extensionRoot, 'out', 'e2e-screenshots');
/** Where the screenshots of the main views go: the docs show them. */
export const docsImageDir = path.join(repoRoot, 'docs', 'img');

/** Chromium flags for this machine: no sandbox as root, no GPU, no calls home. */
export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-quic',
  '--no-first-run',
  '--disable-dev-shm-usage',
];

function firstExisting(candidates: (string | undefined)[]): string | undefined {
  return candidates.find((c): c is string => !!c && existsSync(c));
}

/** Installs (or reuses) code-server with this folder's install-code-server.sh; returns its launcher. */
export function installCodeServer(): string {
  if (process.env.HANDOFF_CODE_SERVER && existsSync(process.env.HANDOFF_CODE_SERVER)) {
    return process.env.HANDOFF_CODE_SERVER;
  }
  const script = firstExisting([
    path.join(repoRoot, 'editors', 'vscode', 'test', 'e2e', 'install-code-server.sh'),
  ]);
  if (!script) {
    throw new Error('editors/vscode/test/e2e/install-code-server.sh is missing from the checkout.');
  }
  const out = execFileSync('bash', [script], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], timeout: 30 * 60_000 });
  const launcher = out.trim().split('\n').pop() ?? '';
  if (!existsSync(launcher)) {
    throw new Error(`install-code-server.sh did not print a launcher (got ${JSON.stringify(launcher)}).`);
  }
  return launcher;
}

export function chromiumPath(): string {
  const found = firstExisting([process.env.HANDOFF_CHROMIUM, '/usr/bin/chromium', '/usr/bin/chromium-browser']);
  if (!found) {
    throw new Error('Chromium not found: apt-get install chromium (or set HANDOFF_CHROMIUM).');
  }
  return found;
}

export function venvPython(): string {
  const python = path.join(repoRoot, '.venv', 'bin', 'python');
  if (!existsSync(python)) {
    throw new Error(`${python} is missing: run uv sync in ${repoRoot}.`);
  }
  return python;
}

/** Runs the `handoff` CLI of the checkout; returns its parsed JSON for `call`. */
export function handoffCli(args: string[]): string {
  const exe = path.join(repoRoot, '.venv', 'bin', 'handoff');
  const [cmd, argv] = existsSync(exe) ? [exe, args] : ['uv', ['run', '--frozen', 'handoff', ...args]];
  return execFileSync(cmd, argv, { cwd: repoRoot, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

/** A revision committed in ``scope`` by another process (the CLI): a contract and the
 * work state recorded, handed off and committed. */
export function commitByCli(workspace: string, scope: string, state: string): string {
  const call = (command: string, params: object) => JSON.parse(handoffCli(['--workspace', workspace, '--scope', scope, 'call', command, JSON.stringify(params)]));
  const { source } = call('handoff.contract', { objective: state, inScope: ['docs'], acceptance: ['reviewed'] });
  call('handoff.recordWork', { state: `${state} :: ${source}`, disposition: 'continuable', nextActions: [`go on :: ${source}`] });
  const { prepared } = call('handoff.handoffCurrentWork', {});
  return call('handoff.commit', { prepared }).revision;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

export interface Session {
  root: string;
  workspace: string;
  userData: string;
  page: Page;
  browser: Browser;
  codeServer: ChildProcess;
  output: string[];
  url: string;
  /** PI_CODING_AGENT_DIR/sessions of the code-server process (and so of the server). */
  piSessions: string;
  /** Every workspace folder of the window (``workspace`` first). */
  folders: string[];
}

/** Writes the workspace's .vscode/settings.json with exactly ``settings`` (the test
 * starts without one: the extension needs no setting). */
export function writeWorkspaceSettings(workspace: string, settings: Record<string, unknown>): void {
  mkdirSync(path.join(workspace, '.vscode'), { recursive: true });
  writeFileSync(path.join(workspace, '.vscode', 'settings.json'), JSON.stringify(settings, null, 2));
}

/** The lines of the pets client the test cites (line 4 is `def list_pets`). */
export const PETS_CLIENT = ['"""Client for the pets API, generated from openapi.yaml."""', '', '', 'def list_pets(limit=20):', '    """GET /pets"""', '    return []', ''].join('\n');

/** A new project as a user has it: a few files, no .handoff/, no .vscode/, not a git
 * repository (so the scope is "default"). */
export function prepareWorkspace(root: string): string {
  const workspace = path.join(root, 'workspace');
  mkdirSync(path.join(workspace, 'client'), { recursive: true });
  writeFileSync(path.join(workspace, 'client', 'pets_client.py'), PETS_CLIENT);
  writeFileSync(path.join(workspace, 'openapi.yaml'), 'openapi: 3.0.3\ninfo:\n  title: pets\n  version: "2"\npaths: {}\n');
  writeFileSync(path.join(workspace, 'notes.md'), '# Notes\n\nThe client is regenerated; the contract tests are next.\n');
  // A hand-written handoff with one claim the workspace no longer bears out.
  writeFileSync(path.join(workspace, 'HANDOFF.md'), '## Progress\n\n- `client/gone.py` (created)\n- `client/pets_client.py` (edited)\n');
  return workspace;
}

/** A small pi (v3) agent session recorded in ``workspace``: a header and four messages. */
export function writePiSession(sessionsRoot: string, workspace: string): string {
  const dir = path.join(sessionsRoot, `--${workspace.replace(/^\//, '').replace(/\//g, '-')}--`);
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, '2026-12-01T08-00-00-000Z_e2e.jsonl');
  const at = (s: number) => new Date(Date.UTC(2026, 11, 1, 8, 0, s)).toISOString();
  const message = (id: string, parentId: string | null, s: number, role: string, text: string) => ({
    type: 'message',
    id,
    parentId,
    timestamp: at(s),
    message: { role, content: [{ type: 'text', text }], timestamp: Date.UTC(2026, 11, 1, 8, 0, s) },
  });
  const entries = [
    { type: 'session', version: 3, id: 'e2e-session-1', timestamp: at(0), cwd: workspace },
    message('m1', null, 1, 'user', 'Regenerate the pets client from openapi.yaml and keep the contract tests green.'),
    message('m2', 'm1', 2, 'assistant', 'I regenerated client/pets_client.py from openapi.yaml. Next: run the contract tests.'),
    message('m3', 'm2', 3, 'user', 'Do not touch the server stubs; they are out of scope.'),
    message('m4', 'm3', 4, 'assistant', 'Understood. Remaining: run the contract tests against the new client.'),
  ];
  writeFileSync(file, entries.map((e) => JSON.stringify(e)).join('\n') + '\n');
  return file;
}

function writeUserSettings(userData: string): void {
  const dir = path.join(userData, 'User');
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    path.join(dir, 'settings.json'),
    JSON.stringify(
      {
        'workbench.startupEditor': 'none',
        'workbench.tips.enabled': false,
        'workbench.enableExperiments': false,
        'security.workspace.trust.enabled': false,
        'telemetry.telemetryLevel': 'off',
        'update.mode': 'none',
        'extensions.autoCheckUpdates': false,
        'extensions.autoUpdate': false,
        'extensions.ignoreRecommendations': true,
        'git.enabled': false,
        'chat.disableAIFeatures': true,
        'window.menuBarVisibility': 'classic',
        'markdown.preview.scrollEditorWithPreview': false,
      },
      null,
      2,
    ),
  );
}

/** ``options.secondFolder``: a multi-root window, the prepared workspace and a folder of
 * that name beside it (with a `notes.md`), opened from a `.code-workspace` file. */
export async function startSession(options: { vsix: string; secondFolder?: string; before?: (folders: string[], piSessions: string) => void }): Promise<Session> {
  const launcher = installCodeServer();
  const executablePath = chromiumPath();
  const root = mkdtempSync(path.join(os.tmpdir(), 'handoff-e2e-'));
  const workspace = prepareWorkspace(root);
  const folders = [workspace];
  let opened = workspace;
  let query = `folder=${encodeURIComponent(workspace)}`;
  if (options.secondFolder) {
    const second = path.join(root, options.secondFolder);
    mkdirSync(second, { recursive: true });
    writeFileSync(path.join(second, 'notes.md'), `# ${options.secondFolder}\n\nNotes of the second folder.\n`);
    folders.push(second);
    opened = path.join(root, 'handoff.code-workspace');
    writeFileSync(opened, JSON.stringify({ folders: folders.map((f) => ({ path: f })) }, null, 2));
    query = `workspace=${encodeURIComponent(opened)}`;
  }
  const userData = path.join(root, 'user-data');
  const extensionsDir = path.join(root, 'extensions');
  writeUserSettings(userData);
  const common = ['--user-data-dir', userData, '--extensions-dir', extensionsDir];
  execFileSync(launcher, [...common, '--install-extension', options.vsix], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 120_000 });

  const port = await freePort();
  // Agent sessions are looked up in the test's own pi home, never the user's.
  const piSessions = path.join(root, 'pi', 'sessions');
  mkdirSync(piSessions, { recursive: true });
  options.before?.(folders, piSessions);
  const env: NodeJS.ProcessEnv = { ...process.env, PI_CODING_AGENT_DIR: path.join(root, 'pi') };
  for (const key of Object.keys(env)) {
    if (key.startsWith('VSCODE_') || key.startsWith('ELECTRON_')) {
      delete env[key];
    }
  }
  const codeServer = spawn(
    launcher,
    [
      ...common,
      '--auth',
      'none',
      '--bind-addr',
      `127.0.0.1:${port}`,
      '--disable-telemetry',
      '--disable-update-check',
      '--disable-workspace-trust',
      '--disable-getting-started-override',
      opened,
    ],
    { env, stdio: ['ignore', 'pipe', 'pipe'], detached: true },
  );
  const output: string[] = [];
  const listening = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`code-server did not listen within 90 s:\n${output.join('')}`)), 90_000);
    const onData = (chunk: Buffer) => {
      output.push(chunk.toString());
      if (/HTTP server listening on/.test(output.join(''))) {
        clearTimeout(timer);
        resolve();
      }
    };
    codeServer.stdout?.on('data', onData);
    codeServer.stderr?.on('data', onData);
    codeServer.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`code-server exited with ${code}:\n${output.join('')}`));
    });
  });
  await listening;

  const browser = await chromium.launch({ executablePath, headless: true, args: CHROMIUM_ARGS });
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  const url = `http://127.0.0.1:${port}/?${query}`;
  await page.goto(url);
  await page.locator('.monaco-workbench').waitFor({ timeout: 120_000 });
  return { root, workspace, userData, page, browser, codeServer, output, url, piSessions, folders };
}

export async function stopSession(session: Session | undefined): Promise<void> {
  if (!session) {
    return;
  }
  await session.browser.close().catch(() => undefined);
  if (session.codeServer.pid && session.codeServer.exitCode === null) {
    try {
      process.kill(-session.codeServer.pid, 'SIGTERM');
    } catch {
      // already gone
    }
  }
}

/** Runs a command from the palette by its title (F1, type, Enter). */
export async function runFromPalette(page: Page, title: string, options: { keepFocus?: boolean } = {}): Promise<void> {
  await page.keyboard.press('Escape');
  if (!options.keepFocus) {
    await page.locator('.monaco-workbench').click({ position: { x: 700, y: 400 } }).catch(() => undefined);
  }
  const input = page.locator('.quick-input-widget .quick-input-box input');
  const row = page.locator('.quick-input-widget .monaco-list-row', { hasText: title }).first();
  // The palette lists the commands known when it opens: on a loaded machine an
  // extension's contributions can arrive after the window, so open it again until
  // the command is there.
  const deadline = Date.now() + 120_000;
  for (;;) {
    await page.keyboard.press('F1');
    await input.waitFor({ state: 'visible', timeout: 30_000 });
    await input.fill(`>${title}`);
    try {
      await row.waitFor({ state: 'visible', timeout: 10_000 });
      break;
    } catch (error) {
      if (Date.now() > deadline) {
        throw error;
      }
      await page.keyboard.press('Escape');
    }
  }
  await input.press('Enter');
}

/** The visible quick input: waits for a row with ``text`` and accepts it. */
export async function pickRow(page: Page, text: string | RegExp): Promise<void> {
  const row = page.locator('.quick-input-widget .monaco-list-row', { hasText: text }).first();
  await row.waitFor({ state: 'visible', timeout: 30_000 });
  await row.click();
}

/** The frame of the visible Markdown preview pane. */
export function markdownPreview(page: Page): FrameLocator {
  return page.frameLocator('iframe.webview.ready:visible').frameLocator('iframe#active-frame');
}

export async function screenshot(page: Page, name: string, dir = screenshotDir): Promise<string> {
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `${name}.png`);
  await page.screenshot({ path: file });
  return file;
}

/** A screenshot of one of the main views, for docs/vscode.md (and, for the one the
 * extension's README shows, its media/ folder: the extension page reads it there). */
export async function docsShot(page: Page, name: string): Promise<string> {
  const file = await screenshot(page, name, docsImageDir);
  if (name === 'vscode-continuity') {
    copyFileSync(file, path.join(extensionRoot, 'media', `${name}.png`));
  }
  return file;
}

/** Waits until the Handoff log holds ``text`` more than ``seen`` times; returns the new count. */
export async function waitForLog(userData: string, text: string, seen: number, timeout = 30_000): Promise<number> {
  const deadline = Date.now() + timeout;
  for (;;) {
    const count = handoffLog(userData, Infinity).split(text).length - 1;
    if (count > seen) {
      return count;
    }
    if (Date.now() > deadline) {
      throw new Error(`the Handoff log never said ${JSON.stringify(text)} (seen ${count} times)`);
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/** The "Handoff" output channel's log file, for failure reports. */
export function handoffLog(userData: string, tail = 6000): string {
  const logs = path.join(userData, 'logs');
  const found: string[] = [];
  const walk = (dir: string) => {
    for (const name of existsSync(dir) ? readdirSync(dir) : []) {
      const p = path.join(dir, name);
      if (statSync(p).isDirectory()) {
        walk(p);
      } else if (/Handoff\.log$/.test(name)) {
        found.push(p);
      }
    }
  };
  walk(logs);
  return found.map((f) => `--- ${f}\n${readFileSync(f, 'utf8').slice(-tail)}`).join('\n');
}
