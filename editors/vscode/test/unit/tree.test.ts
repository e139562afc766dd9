import { strict as assert } from 'assert';
import { childrenOf, itemOf, revisionState, TreeNode, TreeSource } from '../../src/handoffTree';
import { HistoryRevision } from '../../src/protocol';

const R1: HistoryRevision = { revision: 'handoff/abc@1', number: 1, content: { objective: 'fix the client' }, acknowledgements: [], covered: false };
const R2: HistoryRevision = {
  revision: 'handoff/abc@2',
  number: 2,
  content: { objective: 'run the contract tests' },
  acknowledgements: [{ receipt: 'source/r1', status: 'accepted' }],
  covered: true,
};

const D1: HistoryRevision = { revision: 'handoff/def@1', number: 1, content: { objective: 'the other work' }, acknowledgements: [{ receipt: 'source/r9', status: 'declined' }], covered: false };

function source(over: Partial<TreeSource> = {}, asked: string[] = []): TreeSource {
  return {
    folders: () => [{ uri: 'file:///w', name: 'w', path: '/w' }],
    scopes: async () => ({ scopes: [{ scope: 'main', head: 'handoff/abc@2' }, { scope: 'other', head: 'handoff/def@1' }], current: 'main' }),
    history: async (scope, folder) => {
      asked.push(`${folder ?? ''}#${scope}`);
      return scope === 'other' ? { head: 'handoff/def@1', revisions: [D1] } : { head: 'handoff/abc@2', revisions: [R2, R1] };
    },
    sessions: async () => ({ sessions: [{ path: '/h/s.jsonl', format: 'pi', title: 'fix the parser', updatedAt: 'now', messageCount: 4 }] }),
    drafts: async () => ['/w/.handoff/drafts/20261205T120000Z-g2.md', '/w/.handoff/drafts/20261204T120000Z-g1.md'],
    ...over,
  };
}

describe('the Handoff view', () => {
  it('has scopes, drafts, agent sessions and lineage at the top', async () => {
    const top = await childrenOf(undefined, source());
    assert.deepEqual(top.map((n) => itemOf(n).label), ['Scopes', 'Drafts', 'Agent Sessions', 'Lineage']);
    assert.deepEqual(itemOf(top[3]).command, { command: 'handoffUi.showLineage', title: 'Show Lineage', arguments: [top[3]] });
  });

  it('shows the current scope open with its revisions, each with its acknowledgement and outcome', async () => {
    const [main, other] = await childrenOf({ kind: 'section', section: 'scopes' }, source());
    assert.deepEqual([itemOf(main).label, itemOf(main).description, itemOf(main).collapsible], ['main', 'current · head @2', 'expanded']);
    assert.equal(itemOf(other).contextValue, 'scope');
    const revisions = await childrenOf(main, source());
    const items = revisions.map(itemOf);
    assert.deepEqual(items.map((i) => [i.label, i.description, i.contextValue]), [
      ['@2 (head)', 'accepted · outcome recorded · run the contract tests', 'revision'],
      ['@1', 'not acknowledged · fix the client', 'revision'],
    ]);
    // A click shows the handoff; the node goes with the command (its menus use it too).
    assert.deepEqual(items[1].command, { command: 'handoffUi.showHandoff', title: 'Show Handoff', arguments: [revisions[1]] });
    assert.equal(revisionState({ ...R1, acknowledgements: [{ receipt: 's', status: 'needs_clarification' }] }), 'needs clarification');
  });

  it('opens every scope to its own head and revisions, read only when it is expanded', async () => {
    const asked: string[] = [];
    const src = source({}, asked);
    const [, other] = await childrenOf({ kind: 'section', section: 'scopes' }, src);
    assert.deepEqual([itemOf(other).collapsible, itemOf(other).description], ['collapsed', 'head @1']);
    assert.deepEqual(asked, [], 'no scope read before it is expanded');
    const revisions = await childrenOf(other, src);
    assert.deepEqual(asked, ['#other']);
    assert.deepEqual(revisions.map((n) => [itemOf(n).label, itemOf(n).description]), [['@1 (head)', 'declined · the other work']]);
    // Its revisions carry their scope: Continue, Acknowledge and Show ask in it.
    assert.equal((revisions[0] as { scope?: string }).scope, 'other');
  });

  it('in a multi-root window has one tree per folder, each asking the server about its own folder', async () => {
    const asked: string[] = [];
    const two = source({ folders: () => [{ uri: 'file:///w/a', name: 'a', path: '/w/a' }, { uri: 'file:///w/b', name: 'b', path: '/w/b' }] }, asked);
    const folders = await childrenOf(undefined, two);
    assert.deepEqual(folders.map((n) => [itemOf(n).label, itemOf(n).contextValue]), [['a', 'folder'], ['b', 'folder']]);
    const sections = await childrenOf(folders[1], two);
    assert.deepEqual(sections.map((n) => itemOf(n).label), ['Scopes', 'Drafts', 'Agent Sessions', 'Lineage']);
    const [main] = await childrenOf(sections[0], two);
    await childrenOf(main, two);
    assert.deepEqual(asked, ['file:///w/b#main']);
    assert.equal((main as { folder?: string }).folder, 'file:///w/b');
  });

  it('offers the current scope even before its first record, and says what to do', async () => {
    const empty = source({ scopes: async () => ({ scopes: [], current: 'feature/x' }), history: async () => ({ head: null, revisions: [] }) });
    const [scope] = await childrenOf({ kind: 'section', section: 'scopes' }, empty);
    assert.equal(itemOf(scope).description, 'current · no revision');
    const [note] = await childrenOf(scope, empty);
    assert.equal(itemOf(note).label, 'No revision yet: Prepare from a draft, then Commit.');
  });

  it('lists the drafts newest first as files, and the sessions with where it looked when there is none', async () => {
    const drafts = await childrenOf({ kind: 'section', section: 'drafts' }, source());
    assert.deepEqual(drafts.map((n) => [itemOf(n).label, itemOf(n).file, itemOf(n).contextValue]), [
      ['20261205T120000Z-g2.md', '/w/.handoff/drafts/20261205T120000Z-g2.md', 'draft'],
      ['20261204T120000Z-g1.md', '/w/.handoff/drafts/20261204T120000Z-g1.md', 'draft'],
    ]);
    const [session] = await childrenOf({ kind: 'section', section: 'sessions' }, source());
    assert.deepEqual([itemOf(session).label, itemOf(session).description, itemOf(session).contextValue], ['fix the parser', 'pi · 4 messages', 'session']);
    const none = source({ sessions: async () => ({ sessions: [], searched: ['/h/.pi/agent/sessions'] }) });
    const [note] = (await childrenOf({ kind: 'section', section: 'sessions' }, none)) as TreeNode[];
    assert.equal(itemOf(note).label, 'No agent session of this workspace (looked in /h/.pi/agent/sessions).');
  });
});
