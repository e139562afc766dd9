import { strict as assert } from 'assert';
import { ResponseError } from 'vscode-jsonrpc';
import { placeOf, previewPath, previewQuery, renderPreview, reportParams, statusText, viewFromPath } from '../../src/preview';
import { serverSettings } from '../../src/settings';
import { preparedFixture, RecordingServer, REVISION } from './fakes';

describe('preview pane documents', () => {
  it('names every view with a .md path and maps it back', () => {
    const prepared = preparedFixture();
    const lookup = (digest: string) => (digest === prepared.digest ? prepared : undefined);
    for (const view of [
      { kind: 'continuity' as const },
      { kind: 'history' as const },
      { kind: 'lineage' as const },
      { kind: 'handoff' as const, revision: REVISION },
      { kind: 'handoff' as const, prepared },
      { kind: 'continue' as const, revision: REVISION },
      { kind: 'continue' as const, prepared },
      { kind: 'continue' as const, latest: 'feature/x' },
    ]) {
      const p = previewPath(view);
      assert.match(p, /\.md$/);
      assert.deepEqual(viewFromPath(p, lookup), view);
    }
    assert.equal(previewPath({ kind: 'handoff', revision: REVISION }), '/handoff/ec6bd8c4c24e@1.md');
    // A prepared handoff: the digest names the folder, the title is scope · short digest.
    const hex = prepared.digest.replace(/^sha256:/, '');
    assert.equal(previewPath({ kind: 'handoff', prepared }), `/prepared/${hex}/${prepared.scope} · prepared ${hex.slice(0, 12)}.md`);
    assert.deepEqual(viewFromPath(`/prepared/${hex}.md`, lookup), { kind: 'handoff', prepared });
  });

  it('titles a latest pane as latest, apart from an exact pane of the revision it shows now', () => {
    assert.equal(previewPath({ kind: 'continue', latest: 'feature/x' }), '/continue-latest/feature%2Fx/feature-x · continue latest.md');
    assert.equal(previewPath({ kind: 'continue', revision: REVISION }), '/continue/ec6bd8c4c24e@1 · continue.md');
    assert.deepEqual(reportParams({ kind: 'continue', latest: 'feature/x' }), { mode: 'latest', scope: 'feature/x', render: 'vscode' });
  });

  it('keeps a revision\'s scope and the folder in the URI query, and asks in them', async () => {
    const view = { kind: 'handoff' as const, revision: REVISION, scope: 'other' };
    const query = previewQuery(view, 'file:///w/beta');
    assert.deepEqual(placeOf(query), { scope: 'other', folder: 'file:///w/beta' });
    assert.equal(previewQuery({ kind: 'continuity' }), '');
    const server = new RecordingServer({ 'handoff.report': () => ({ kind: 'handoff', scope: 'other', markdown: '# Handoff', data: {} }) });
    await renderPreview(server, previewPath(view), () => undefined, undefined, undefined, placeOf(query));
    assert.deepEqual(server.paramsOf('handoff.report'), { kind: 'handoff', revision: REVISION, scope: 'other', render: 'vscode', workspace: 'file:///w/beta' });
  });

  it('asks the server for the report of the view, rendered for VS Code (links the preview opens)', () => {
    const prepared = preparedFixture();
    const render = 'vscode';
    assert.deepEqual(reportParams({ kind: 'continuity' }), { kind: 'continuity', render });
    assert.deepEqual(reportParams({ kind: 'lineage' }), { kind: 'lineage', render });
    assert.deepEqual(reportParams({ kind: 'handoff', revision: REVISION }), { kind: 'handoff', revision: REVISION, render });
    assert.deepEqual(reportParams({ kind: 'handoff', prepared }), { kind: 'handoff', prepared, scope: 'openapi-client', render });
  });

  it('shows what Continue selected as the server renders it (handoff.continue with render)', async () => {
    const prepared = preparedFixture();
    const lookup = (digest: string) => (digest === prepared.digest ? prepared : undefined);
    const server = new RecordingServer({
      'handoff.continue': (p) => ({ markdown: `# Continue (${p.mode}) → ${p.revision ?? 'prepared handoff'}\n` }),
    });
    assert.equal(previewPath({ kind: 'continue', revision: REVISION }), '/continue/ec6bd8c4c24e@1 · continue.md');
    // Continue and the handoff of one revision: two names, so two tabs.
    assert.equal(previewPath({ kind: 'handoff', revision: REVISION }), '/handoff/ec6bd8c4c24e@1.md');
    const text = await renderPreview(server, '/continue/ec6bd8c4c24e@1 · continue.md', lookup);
    assert.equal(text, `# Continue (exact) → ${REVISION}\n`);
    assert.deepEqual(server.paramsOf('handoff.continue'), { mode: 'exact', revision: REVISION, render: 'vscode' });
    const fromPrepared = await renderPreview(server, previewPath({ kind: 'continue', prepared }), lookup);
    assert.equal(fromPrepared, '# Continue (prepared) → prepared handoff\n');
  });

  it('renders the server Markdown, and a refusal as Markdown instead of failing', async () => {
    const server = new RecordingServer({
      'handoff.report': (p) => {
        if (p.kind === 'continuity') {
          return { markdown: '# Work continuity: openapi-client\n' };
        }
        throw new ResponseError(-32803, `There is no committed revision ${p.revision}.`, { code: 'revision_not_found' });
      },
    });
    assert.equal(await renderPreview(server, '/continuity.md', () => undefined), '# Work continuity: openapi-client\n');
    const refused = await renderPreview(server, '/handoff/gone@9.md', () => undefined);
    assert.match(refused, /^# handoff\/gone@9/);
    assert.match(refused, /`revision_not_found`/);
    assert.match(refused, /There is no committed revision handoff\/gone@9\./);
  });

  it('a prepared preview committed since it opened shows the revision, not "not committed"', async () => {
    const prepared = preparedFixture();
    const server = new RecordingServer({
      'handoff.report': (p) =>
        p.revision ? { markdown: `# Handoff ${p.revision}\n\nbody\n` } : { markdown: '# Handoff (prepared, not committed)\n\nbody\n' },
    });
    const path = previewPath({ kind: 'handoff', prepared });
    const lookup = () => prepared;
    assert.match(await renderPreview(server, path, lookup, undefined, () => undefined), /^# Handoff \(prepared, not committed\)/);
    const after = await renderPreview(server, path, lookup, undefined, (d) => (d === prepared.digest ? REVISION : undefined));
    assert.equal(after, `# Handoff ${REVISION}\n\n> Prepared 5b370b11276f was committed as ${REVISION}; this is that revision.\n\nbody\n`);
    assert.deepEqual(server.calls.at(-1)?.params, { kind: 'handoff', revision: REVISION, render: 'vscode' });
  });

  it('explains a prepared preview that is no longer kept', async () => {
    const server = new RecordingServer({});
    const text = await renderPreview(server, `/prepared/${'a'.repeat(64)}.md`, () => undefined);
    assert.match(text, /no longer kept/);
    assert.equal(server.calls.length, 0);
  });

  it('puts scope, head and transfer in the status bar', () => {
    const s = statusText('openapi-client', { head: REVISION, transfer: 'needs_clarification', outcome: 'none' });
    assert.equal(s.text, '$(arrow-swap) openapi-client · @1 · needs clarification');
    assert.match(s.tooltip, /Head: handoff\/ec6bd8c4c24e@1/);
    assert.equal(statusText('main', { head: null, transfer: 'none', outcome: 'none' }).text, '$(arrow-swap) main · no revision');
  });
});

describe('server settings', () => {
  it('sends only what is set, in the shape the server reads', () => {
    const values: Record<string, unknown> = {
      scope: '',
      stateFolder: '.handoff',
      logLevel: 'debug',
      'generation.provider': 'openai',
      'generation.startSession': true, // no longer a setting of the extension: never sent
      'generation.maxPromptTokens': 8000,
      'generation.openai.baseUrl': 'http://127.0.0.1:11434/v1',
      'generation.openai.apiKeyEnv': 'OLLAMA_KEY',
      'generation.command.argv': [],
      'server.python': '/usr/bin/python3',
    };
    assert.deepEqual(
      serverSettings((key) => values[key] as never),
      {
        stateFolder: '.handoff',
        logLevel: 'debug',
        generation: {
          provider: 'openai',
          maxPromptTokens: 8000,
          openai: { baseUrl: 'http://127.0.0.1:11434/v1', apiKeyEnv: 'OLLAMA_KEY' },
          anthropic: {},
          command: {},
        },
      },
    );
  });
});
