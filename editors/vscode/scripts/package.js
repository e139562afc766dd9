// Packages one platform-specific .vsix: the server bundled for the target
// (scripts/bundle_server.py), then `vsce package --target`. The target is
// HANDOFF_VSIX_TARGET (linux-x64, darwin-arm64, win32-x64, …) or this machine's.
const { execFileSync } = require('child_process');
const path = require('path');

const arch = { x64: 'x64', arm64: 'arm64' }[process.arch] ?? process.arch;
const target = process.env.HANDOFF_VSIX_TARGET || `${process.platform}-${arch}`;
const out = process.env.HANDOFF_VSIX_OUT || 'handoff-vscode.vsix';
const root = path.resolve(__dirname, '..');
const run = (cmd, args) => execFileSync(cmd, args, { cwd: root, stdio: 'inherit' });

run('uv', ['run', '--frozen', 'python', 'scripts/bundle_server.py', '--target', target]);
run(path.join(root, 'node_modules', '.bin', 'vsce'), [
  'package', '--no-dependencies', '--allow-missing-repository', '--no-rewrite-relative-links',
  '--target', target, '--out', out,
]);
