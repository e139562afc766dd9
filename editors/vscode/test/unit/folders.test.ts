import { strict as assert } from 'assert';
import { FolderChoice, folderOf, FolderRef, folderServer } from '../../src/folders';
import { RecordingServer } from './fakes';

const A: FolderRef = { uri: 'file:///w/a', name: 'a', path: '/w/a' };
const B: FolderRef = { uri: 'file:///w/b', name: 'b', path: '/w/b' };
const NESTED: FolderRef = { uri: 'file:///w/a/sub', name: 'sub', path: '/w/a/sub' };

describe('workspace folders (multi-root)', () => {
  it('finds the innermost folder of a file, and none for a file outside them', () => {
    assert.equal(folderOf([A, B, NESTED], '/w/a/sub/x.py'), NESTED);
    assert.equal(folderOf([A, B], '/w/a/x.py'), A);
    assert.equal(folderOf([A, B], '/w/ab/x.py'), undefined);
    assert.equal(folderOf([A, B], undefined), undefined);
  });

  it('acts on the active editor\'s folder; with none, asks once and keeps the answer', async () => {
    let active: string | undefined = '/w/b/x.py';
    const asked: number[] = [];
    const choice = new FolderChoice(() => [A, B], () => active, async (folders) => {
      asked.push(folders.length);
      return A;
    });
    assert.equal(await choice.current(), B);
    active = undefined;
    assert.equal(await choice.current(), A);
    assert.equal(await choice.current(), A);
    assert.deepEqual(asked, [2]);
    assert.equal(choice.peek(), A);
  });

  it('never asks with one folder, and a dismissed question runs nothing', async () => {
    const one = new FolderChoice(() => [A], () => undefined, async () => assert.fail('asked'));
    assert.equal(await one.current(), A);
    const server = new RecordingServer({ 'handoff.report': () => ({}) });
    await folderServer(server, one).execute('handoff.report', { kind: 'continuity' });
    assert.deepEqual(server.paramsOf('handoff.report'), { kind: 'continuity' }, 'one folder: no workspace key');
    const dismissed = new FolderChoice(() => [A, B], () => undefined, async () => undefined);
    await assert.rejects(folderServer(server, dismissed).execute('handoff.report', { kind: 'history' }), /No workspace folder was chosen/);
    assert.equal(server.calls.length, 1);
  });

  it('sends each command to the folder it runs in (a view item\'s folder pins it)', async () => {
    const choice = new FolderChoice(() => [A, B], () => '/w/a/x.py', async () => assert.fail('asked'));
    const server = new RecordingServer({ 'handoff.report': () => ({}) });
    const folded = folderServer(server, choice);
    await folded.execute('handoff.report', { kind: 'continuity' });
    assert.equal(server.paramsOf('handoff.report').workspace, A.uri);
    await choice.within(B, () => folded.execute('handoff.report', { kind: 'history' }));
    assert.equal(server.paramsOf('handoff.report').workspace, B.uri);
    assert.equal(choice.peek(), A, 'the active editor\'s folder again once the command is done');
    await folded.execute('handoff.report', { kind: 'lineage', workspace: B.uri });
    assert.equal(server.paramsOf('handoff.report').workspace, B.uri, 'a workspace already named is kept');
  });
});
