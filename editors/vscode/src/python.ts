/** Finds the Python that runs the server: the `handoff.server.python` setting, else the
 * Python extension's active environment, else `python3` on PATH; the server from the
 * extension's bundle (`bundled/launch.py`), that environment's own `lsp_server`, or, for
 * development, the repository checkout. */

import { execFile } from 'child_process';
import { existsSync } from 'fs';
import * as os from 'os';
import * as path from 'path';

export type InterpreterOrigin = 'setting' | 'pythonExtension' | 'path' | 'checkoutVenv';

export interface Interpreter {
  python: string;
  origin: InterpreterOrigin;
}

/** How to start the server: `<command> <args>` with this environment. */
export interface ServerLaunch {
  command: string;
  args: string[];
  env: NodeJS.ProcessEnv;
  origin: InterpreterOrigin;
  /** Where `lsp_server` came from: the extension's bundle, the environment itself or
   * the checkout (PYTHONPATH). */
  packageFrom: 'bundle' | 'environment' | 'checkout';
  version: string;
}

/** Checks that ``python`` can run the server (from ``launcher``, the bundle's launch.py,
 * when given); resolves to the server's version, rejects with a one-line reason. */
export type Probe = (python: string, env: NodeJS.ProcessEnv, launcher?: string) => Promise<string>;

// Imports the server module (and so pygls), not just the package, so a half-installed
// environment is caught here with its reason rather than as a crash after start.
const PROBE_CODE = 'import sys, lsp_server, lsp_server.surfaces.lsp.server; sys.stdout.write(getattr(lsp_server, "__version__", "unknown"))';

export const probeServerPackage: Probe = (python, env, launcher) =>
  new Promise((resolve, reject) => {
    const args = launcher ? ['-I', launcher, '--probe'] : ['-c', PROBE_CODE];
    execFile(python, args, { env, timeout: 30_000, windowsHide: true }, (error, stdout, stderr) => {
      if (!error) {
        resolve(stdout.trim());
        return;
      }
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') {
        reject(new Error(`${python} was not found`));
      } else if (code === 'EACCES') {
        reject(new Error(`${python} is not executable`));
      } else if (launcher && stderr.trim()) {
        // launch.py says why in one line (too old a Python, no bundle for its version).
        reject(new Error(`${python} cannot run the bundled server: ${stderr.trim().split('\n').pop()}`));
      } else if (/No module named '?lsp_server'?$/m.test(stderr)) {
        reject(new Error(`${python} cannot import lsp_server`));
      } else if (/No module named '?([\w.]+)/.test(stderr)) {
        const missing = /No module named '?([\w.]+)/.exec(stderr)?.[1];
        reject(new Error(`${python} has lsp_server but not its dependency ${missing}`));
      } else {
        const last = stderr.trim().split('\n').pop() || error.message;
        reject(new Error(`${python} failed: ${last}`));
      }
    });
  });

/** Expands `${workspaceFolder}`, `${userHome}`, `~` and `${env:NAME}` in a configured path. */
export function expandPythonSetting(value: string, workspaceFolder: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  let result = value.trim();
  if (result === '~' || result.startsWith('~/')) {
    result = os.homedir() + result.slice(1);
  }
  result = result
    .replace(/\$\{userHome\}/g, os.homedir())
    .replace(/\$\{env:([^}]+)\}/g, (_m, name: string) => env[name] ?? '');
  if (workspaceFolder) {
    result = result.replace(/\$\{workspaceFolder\}/g, workspaceFolder);
    if (!path.isAbsolute(result) && (result.includes('/') || result.includes('\\'))) {
      result = path.join(workspaceFolder, result);
    }
  }
  return result;
}

/** The repository checkout an unpackaged extension runs from (`<repo>/editors/vscode`). */
export function findCheckout(extensionPath: string): string | undefined {
  const repo = path.resolve(extensionPath, '..', '..');
  return existsSync(path.join(repo, 'lsp_server', '__init__.py')) && existsSync(path.join(repo, 'pyproject.toml')) ? repo : undefined;
}

function venvPython(dir: string): string {
  return process.platform === 'win32' ? path.join(dir, '.venv', 'Scripts', 'python.exe') : path.join(dir, '.venv', 'bin', 'python');
}

/** The extension's bundled server (`bundled/launch.py`), when the extension was packaged
 * with one (`npm run package`); absent in a development checkout. */
export function findBundle(extensionPath: string): string | undefined {
  const launcher = path.join(extensionPath, 'bundled', 'launch.py');
  return existsSync(launcher) && existsSync(path.join(extensionPath, 'bundled', 'libs', 'lsp_server')) ? launcher : undefined;
}

export interface ResolveOptions {
  /** The `handoff.server.python` setting, already expanded; empty when unset. */
  settingPython?: string;
  /** The Python extension's active interpreter, if that extension is installed. */
  pythonExtension?: () => Promise<string | undefined>;
  /** The bundled server's launch.py. */
  bundle?: string;
  /** The repository checkout, for development. */
  checkout?: string;
  env?: NodeJS.ProcessEnv;
  probe?: Probe;
}

/** Raised when no interpreter can run the server; lists everything that was tried. */
export class ServerNotFoundError extends Error {
  constructor(readonly attempts: string[]) {
    super(
      'Handoff cannot start its language server: ' +
        attempts.join('; ') +
        '. Install Python 3.11 or newer, or set "handoff.server.python" to one.',
    );
    this.name = 'ServerNotFoundError';
  }
}

/** The interpreter the settings and the Python extension point at, in that order. */
export async function chooseInterpreter(options: ResolveOptions, attempts: string[]): Promise<Interpreter> {
  if (options.settingPython && options.settingPython.trim()) {
    return { python: options.settingPython.trim(), origin: 'setting' };
  }
  if (options.pythonExtension) {
    try {
      const python = await options.pythonExtension();
      if (python) {
        return { python, origin: 'pythonExtension' };
      }
    } catch (error) {
      attempts.push(`the Python extension gave no interpreter (${(error as Error).message})`);
    }
  }
  return { python: process.platform === 'win32' ? 'python' : 'python3', origin: 'path' };
}

/** Picks the first interpreter/package combination that can run the server: the bundle
 * first (its version is the extension's), except that an interpreter set in the settings
 * runs its own `lsp_server` when it has one (an override), then the checkout. */
export async function resolveServerLaunch(options: ResolveOptions): Promise<ServerLaunch> {
  const env = options.env ?? process.env;
  const probe = options.probe ?? probeServerPackage;
  const attempts: string[] = [];
  const interpreter = await chooseInterpreter(options, attempts);

  type Candidate = { python: string; origin: InterpreterOrigin; env: NodeJS.ProcessEnv; packageFrom: ServerLaunch['packageFrom'] };
  const own: Candidate = { ...interpreter, env, packageFrom: 'environment' };
  const candidates: Candidate[] = [];
  if (options.bundle) {
    const bundled: Candidate = { ...interpreter, env, packageFrom: 'bundle' };
    candidates.push(...(interpreter.origin === 'setting' ? [own, bundled] : [bundled, own]));
  } else {
    candidates.push(own);
  }
  if (options.checkout) {
    const pythonPath = [options.checkout, env.PYTHONPATH].filter(Boolean).join(path.delimiter);
    candidates.push({ ...interpreter, env: { ...env, PYTHONPATH: pythonPath }, packageFrom: 'checkout' });
    const venv = venvPython(options.checkout);
    if (interpreter.origin !== 'setting' && existsSync(venv) && venv !== interpreter.python) {
      candidates.push({ python: venv, origin: 'checkoutVenv', env, packageFrom: 'environment' });
    }
  }
  const tooOld = new Set<string>();
  for (const candidate of candidates) {
    if (tooOld.has(candidate.python)) {
      continue; // an interpreter too old for the bundle is too old for any server
    }
    const launcher = candidate.packageFrom === 'bundle' ? options.bundle : undefined;
    try {
      const version = await probe(candidate.python, candidate.env, launcher);
      return {
        command: candidate.python,
        args: launcher ? ['-I', launcher] : ['-m', 'lsp_server'],
        env: candidate.env,
        origin: candidate.origin,
        packageFrom: candidate.packageFrom,
        version,
      };
    } catch (error) {
      const reason = (error as Error).message;
      if (/needs Python \d+\.\d+ or newer/.test(reason)) {
        tooOld.add(candidate.python);
      }
      const said = candidate.packageFrom === 'checkout' ? `${reason} with the checkout ${options.checkout} on PYTHONPATH` : reason;
      if (!attempts.includes(said)) {
        attempts.push(said); // each reason once
      }
    }
  }
  throw new ServerNotFoundError(attempts);
}
