import { strict as assert } from 'assert';
import { existsSync, promises as fs } from 'fs';
import * as os from 'os';
import * as path from 'path';
import { expandPythonSetting, findBundle, findCheckout, probeServerPackage, resolveServerLaunch, ServerNotFoundError } from '../../src/python';

const extensionRoot = path.resolve(__dirname, '..', '..', '..');
const checkout = findCheckout(extensionRoot);
const venvPython = checkout ? path.join(checkout, '.venv', 'bin', 'python') : '';

describe('server interpreter resolution', function () {
  this.timeout(60_000);

  it('finds the repository checkout the extension is built in', () => {
    assert.ok(checkout, `no lsp_server checkout above ${extensionRoot}`);
    assert.ok(existsSync(path.join(checkout, 'lsp_server', '__init__.py')));
  });

  it('prefers the setting, then the Python extension, then python3 on PATH', async () => {
    const tried: string[] = [];
    const probe = async (python: string) => {
      tried.push(python);
      return '9.9.9';
    };
    const fromSetting = await resolveServerLaunch({ settingPython: '/opt/py/bin/python', pythonExtension: async () => '/ext/python', probe });
    assert.equal(fromSetting.command, '/opt/py/bin/python');
    assert.equal(fromSetting.origin, 'setting');
    assert.deepEqual(fromSetting.args, ['-m', 'lsp_server']);
    const fromExtension = await resolveServerLaunch({ settingPython: '', pythonExtension: async () => '/ext/python', probe });
    assert.equal(fromExtension.origin, 'pythonExtension');
    assert.equal(fromExtension.command, '/ext/python');
    const fromPath = await resolveServerLaunch({ pythonExtension: async () => undefined, probe });
    assert.equal(fromPath.origin, 'path');
    assert.equal(fromPath.command, process.platform === 'win32' ? 'python' : 'python3');
    assert.deepEqual(tried, ['/opt/py/bin/python', '/ext/python', fromPath.command]);
  });

  it('falls back to the checkout on PYTHONPATH, then to its .venv, when the interpreter lacks the package', async () => {
    const fakeCheckout = await fs.mkdtemp(path.join(os.tmpdir(), 'handoff-checkout-'));
    await fs.mkdir(path.join(fakeCheckout, 'editors', 'vscode'), { recursive: true });
    await fs.mkdir(path.join(fakeCheckout, 'lsp_server'));
    await fs.writeFile(path.join(fakeCheckout, 'lsp_server', '__init__.py'), '');
    await fs.writeFile(path.join(fakeCheckout, 'pyproject.toml'), '');
    await fs.mkdir(path.join(fakeCheckout, '.venv', 'bin'), { recursive: true });
    const fakeVenv = path.join(fakeCheckout, '.venv', 'bin', 'python');
    await fs.writeFile(fakeVenv, '');
    assert.equal(findCheckout(path.join(fakeCheckout, 'editors', 'vscode')), fakeCheckout);

    const seen: { python: string; pythonPath?: string }[] = [];
    const probe = async (python: string, env: NodeJS.ProcessEnv) => {
      seen.push({ python, pythonPath: env.PYTHONPATH });
      if (python === fakeVenv) {
        return '0.1.0';
      }
      throw new Error(`${python} cannot import lsp_server`);
    };
    const launch = await resolveServerLaunch({ checkout: fakeCheckout, env: { PATH: process.env.PATH }, probe });
    assert.equal(launch.origin, 'checkoutVenv');
    assert.equal(launch.command, fakeVenv);
    assert.deepEqual(
      seen.map((s) => s.pythonPath),
      [undefined, fakeCheckout, undefined],
    );
    // An explicit setting is never swapped for the checkout's .venv.
    await assert.rejects(resolveServerLaunch({ settingPython: '/opt/py/bin/python', checkout: fakeCheckout, probe }), ServerNotFoundError);
  });

  it('runs the real server module with the repository .venv', async function () {
    if (!existsSync(venvPython)) {
      this.skip(); // `uv sync` has not run in this checkout
    }
    const launch = await resolveServerLaunch({ settingPython: venvPython, checkout });
    assert.equal(launch.packageFrom, 'environment');
    assert.match(launch.version, /^\d+\.\d+/);
  });

  it('explains every failed attempt when nothing can run the server', async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'handoff-py-'));
    const fake = path.join(dir, 'python');
    await fs.writeFile(fake, "#!/bin/sh\necho \"ModuleNotFoundError: No module named 'lsp_server'\" >&2\nexit 1\n", { mode: 0o755 });
    await assert.rejects(
      resolveServerLaunch({ settingPython: path.join(dir, 'missing-python') }),
      (error: unknown) => {
        assert.ok(error instanceof ServerNotFoundError);
        assert.match(error.message, /missing-python was not found/);
        assert.match(error.message, /handoff\.server\.python/);
        return true;
      },
    );
    await assert.rejects(resolveServerLaunch({ settingPython: fake, checkout: dir }), (error: unknown) => {
      assert.ok(error instanceof ServerNotFoundError);
      assert.equal(error.attempts.length, 2, error.attempts.join('\n'));
      assert.match(error.attempts[0], /cannot import lsp_server$/);
      assert.match(error.attempts[1], /on PYTHONPATH/);
      return true;
    });
  });

  it('names a missing dependency of the package', async function () {
    if (!checkout) {
      this.skip();
    }
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'handoff-py-'));
    const fake = path.join(dir, 'python');
    await fs.writeFile(fake, "#!/bin/sh\necho \"ModuleNotFoundError: No module named 'pygls'\" >&2\nexit 1\n", { mode: 0o755 });
    await assert.rejects(probeServerPackage(fake, process.env), /has lsp_server but not its dependency pygls/);
  });

  it('with no setting the bundled server comes first; a set interpreter runs its own lsp_server first', async () => {
    const seen: string[] = [];
    const probe = async (python: string, _env: NodeJS.ProcessEnv, launcher?: string) => {
      seen.push(`${python} ${launcher ?? '-m lsp_server'}`);
      return '1.0.0';
    };
    const bundled = await resolveServerLaunch({ pythonExtension: async () => undefined, bundle: '/ext/bundled/launch.py', probe });
    assert.equal(bundled.packageFrom, 'bundle');
    assert.deepEqual(bundled.args, ['-I', '/ext/bundled/launch.py']);
    const own = await resolveServerLaunch({ settingPython: '/opt/py/bin/python', bundle: '/ext/bundled/launch.py', probe });
    assert.equal(own.packageFrom, 'environment');
    assert.deepEqual(own.args, ['-m', 'lsp_server']);
    // The set interpreter without the package falls back to the bundle.
    const fallback = await resolveServerLaunch({
      settingPython: '/opt/py/bin/python',
      bundle: '/ext/bundled/launch.py',
      probe: async (python, env, launcher) => {
        if (!launcher) {
          throw new Error(`${python} cannot import lsp_server`);
        }
        return probe(python, env, launcher);
      },
    });
    assert.equal(fallback.packageFrom, 'bundle');
    assert.equal(fallback.command, '/opt/py/bin/python');
  });

  it('runs the real bundled server with python3 from PATH and no setting (npm run bundle:server)', async () => {
    const bundle = findBundle(extensionRoot);
    assert.ok(bundle, 'bundled/launch.py with bundled/libs/lsp_server: run npm run bundle:server');
    const launch = await resolveServerLaunch({ pythonExtension: async () => undefined, bundle });
    assert.equal(launch.origin, 'path');
    assert.equal(launch.packageFrom, 'bundle');
    assert.match(launch.version, /^\d+\.\d+/);
  });

  it('the bundle leaves the PostgreSQL driver out (a team store uses handoff.server.python)', async () => {
    const bundled = path.join(extensionRoot, 'bundled');
    const tops = [
      ...(await fs.readdir(path.join(bundled, 'libs'))),
      ...(await Promise.all((await fs.readdir(path.join(bundled, 'native'))).map((tag) => fs.readdir(path.join(bundled, 'native', tag))))).flat(),
    ];
    assert.ok(tops.includes('lsp_server') && tops.includes('orjson'), tops.join(', '));
    assert.deepEqual(tops.filter((name) => name.toLowerCase().startsWith('psycopg')), []);
  });

  it('a bundle without native packages for this Python says which versions it has', async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'handoff-bundle-'));
    await fs.mkdir(path.join(dir, 'bundled', 'libs', 'lsp_server'), { recursive: true });
    await fs.mkdir(path.join(dir, 'bundled', 'native', 'cp399'), { recursive: true });
    await fs.copyFile(path.join(extensionRoot, 'bundled', 'launch.py'), path.join(dir, 'bundled', 'launch.py'));
    const bundle = findBundle(dir);
    assert.ok(bundle);
    await assert.rejects(
      resolveServerLaunch({ pythonExtension: async () => undefined, bundle }),
      (error: unknown) => {
        assert.ok(error instanceof ServerNotFoundError);
        assert.match(error.attempts[0], /cannot run the bundled server: this Handoff extension bundles its server for cp399, not for cp3\d+/);
        return true;
      },
    );
  });

  it('expands variables in the configured path', () => {
    assert.equal(expandPythonSetting('${workspaceFolder}/.venv/bin/python', '/w'), '/w/.venv/bin/python');
    assert.equal(expandPythonSetting('.venv/bin/python', '/w'), path.join('/w', '.venv/bin/python'));
    assert.equal(expandPythonSetting('~/py/bin/python', undefined), path.join(os.homedir(), 'py/bin/python'));
    assert.equal(expandPythonSetting('${env:PYROOT}/bin/python', '/w', { PYROOT: '/opt/py' }), '/opt/py/bin/python');
    assert.equal(expandPythonSetting('python3.11', '/w'), 'python3.11');
  });
});

describe('a start that fails', () => {
  it('says an interpreter too old once, with its version, and tries nothing else with it', async () => {
    const probed: string[] = [];
    const probe = async (python: string, _env: NodeJS.ProcessEnv, launcher?: string) => {
      probed.push(`${python} ${launcher ? 'bundle' : 'own'}`);
      throw new Error(launcher ? `${python} cannot run the bundled server: Handoff needs Python 3.11 or newer; ${python} is 3.8.10` : `${python} cannot import lsp_server`);
    };
    await assert.rejects(
      resolveServerLaunch({ pythonExtension: async () => '/usr/bin/python3', bundle: '/ext/bundled/launch.py', probe }),
      (error: Error) => {
        assert.equal(
          error.message,
          'Handoff cannot start its language server: /usr/bin/python3 cannot run the bundled server: Handoff needs Python 3.11 or newer; /usr/bin/python3 is 3.8.10. Install Python 3.11 or newer, or set "handoff.server.python" to one.',
        );
        return true;
      },
    );
    assert.deepEqual(probed, ['/usr/bin/python3 bundle']);
  });
});
