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
