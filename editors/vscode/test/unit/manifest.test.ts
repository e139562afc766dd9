import { strict as assert } from 'assert';
import { readFileSync } from 'fs';
import * as path from 'path';
import { PaletteCommand } from '../../src/commands';

// out/test/unit → the extension folder.
const manifest = JSON.parse(readFileSync(path.join(__dirname, '..', '..', '..', 'package.json'), 'utf8'));

describe('package.json', () => {
  it('activates on every command it contributes and where .handoff exists', () => {
    assert.ok(manifest.activationEvents.includes('workspaceContains:.handoff'));
    // VS Code 1.74+ activates an extension on each command it contributes
    // (contributes-based activation): the engine floor must allow it.
    const floor = /^\^?(\d+)\.(\d+)/.exec(manifest.engines.vscode);
    assert.ok(floor && (Number(floor[1]) > 1 || Number(floor[2]) >= 74), manifest.engines.vscode);
    const contributed = manifest.contributes.commands.map((c: { command: string }) => c.command).sort();
    assert.deepEqual(contributed, Object.values(PaletteCommand).sort());
  });
});

describe('package.json views', () => {
  it('ships the Handoff view\'s icon, and each view item menu names a contributed command', () => {
    const root = path.join(__dirname, '..', '..', '..');
    const shipped = readFileSync(path.join(root, '.vscodeignore'), 'utf8')
      .split('\n')
      .filter((l) => l.startsWith('!'))
      .map((l) => l.slice(1));
    for (const container of manifest.contributes.viewsContainers.activitybar) {
      assert.ok(shipped.includes(container.icon), `${container.icon} is left out of the .vsix`);
      readFileSync(path.join(root, container.icon)); // exists
    }
    const commands = new Set(manifest.contributes.commands.map((c: { command: string }) => c.command));
    for (const item of manifest.contributes.menus['view/item/context']) {
      assert.ok(commands.has(item.command), item.command);
    }
  });
});

describe('package.json settings and commands', () => {
  it('orders the settings with Server: Python and the provider first', () => {
    const properties = manifest.contributes.configuration.properties as Record<string, { order?: number }>;
    const ordered = Object.entries(properties).sort(([, a], [, b]) => (a.order ?? 1e9) - (b.order ?? 1e9)).map(([key]) => key);
    assert.deepEqual(ordered.slice(0, 2), ['handoff.server.python', 'handoff.generation.provider']);
    for (const [key, value] of Object.entries(properties)) {
      assert.equal(typeof value.order, 'number', `${key} has no order`);
    }
  });

  it('puts every command in the "Handoff" category, with no title repeating it', () => {
    for (const command of manifest.contributes.commands as { command: string; title: string; category?: string }[]) {
      assert.equal(command.category, 'Handoff', command.command);
      assert.ok(!/^Handoff\b/.test(command.title), `"Handoff: ${command.title}"`);
    }
  });
});
