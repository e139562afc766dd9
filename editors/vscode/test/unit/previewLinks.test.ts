import { strict as assert } from 'assert';
import { previewPath, reportParams, scopeOfView, viewFromPath, viewPathOf } from '../../src/preview';
import { citedLines, handoffLinks, LinkPlace, linkTitle, openPath, relativeLink, rewriteHref, sourceHref, targetOfPath } from '../../src/previewLinks';
import { preparedFixture, REVISION } from './fakes';

// The markdown-it VS Code's Markdown preview runs (a dev dependency: only the tests load it).
const MarkdownIt = require('markdown-it');

const SOURCE = 'source/3f9c0a1b2c3d4e5f6a7b';

/** A markdown-it as VS Code's preview makes it: the plugins first, then its own link
 * renderer around theirs, which sets `data-href` to the link's target before they run. */
function previewEngine(placeOf: (env: unknown) => LinkPlace | undefined) {
  const md = handoffLinks(new MarkdownIt({ html: true }), placeOf);
  const inner = md.renderer.rules.link_open;
  md.renderer.rules.link_open = (tokens: { attrGet(n: string): string; attrSet(n: string, v: string): void }[], idx: number, options: unknown, env: unknown, self: unknown) => {
    tokens[idx].attrSet('data-href', tokens[idx].attrGet('href'));
    return inner(tokens, idx, options, env, self);
  };
  return md;
}

/** The `a` elements of rendered HTML: href, data-href and their text. */
function anchors(html: string): { href: string; dataHref: string; text: string }[] {
  return [...html.matchAll(/<a href="([^"]*)"(?: data-href="([^"]*)")?[^>]*>(.*?)<\/a>/g)].map((m) => ({ href: m[1], dataHref: m[2], text: m[3] }));
}

/** Where a link leads from the document at ``docPath``, as the Markdown preview resolves a
 * relative link (against the document's folder, `..` stopping at the root). */
function resolve(docPath: string, href: string): string {
  const parts = docPath.split('/').slice(0, -1);
  for (const segment of href.split('/').map(decodeURIComponent)) {
    if (segment === '..') {
      parts.length = Math.max(1, parts.length - 1);
    } else {
      parts.push(segment);
    }
  }
  return parts.join('/');
}

describe('preview links', () => {
  it('names what a link opens in a path of its own and reads it back, refusing any other', () => {
    const lines = { kind: 'lines' as const, path: 'client/pets client.py', lines: [12, 20] as [number, number], folder: 'file:///w/beta' };
    const record = { kind: 'source' as const, source: SOURCE, scope: 'feature/x' };
    for (const target of [lines, record, { kind: 'lines' as const, path: 'a.md', lines: [3, 3] as [number, number] }]) {
      const p = openPath(target);
      assert.match(p, /^\/open\/[A-Za-z0-9_-]+\/[^/]+$/);
      assert.deepEqual(targetOfPath(p), target);
    }
    // The stand-in's name says what opens, with no extension a language would claim.
    assert.match(openPath(lines), /\/pets client\.py · lines 12–20$/);
    assert.equal(linkTitle(lines), 'Opening client/pets client.py, lines 12–20');
    assert.equal(linkTitle({ kind: 'lines', path: 'a.py', lines: [3, 3] }), 'Opening a.py, line 3');
    assert.equal(linkTitle(record), `Showing ${SOURCE}`);
    const forged = (value: unknown) => `/open/${Buffer.from(JSON.stringify(value)).toString('base64url')}/x`;
    for (const bad of [
      { kind: 'lines', path: '../outside.py', lines: [1, 2] },
      { kind: 'lines', path: '/etc/passwd', lines: [1, 2] },
      { kind: 'lines', path: 'a.py', lines: [5, 2] },
      { kind: 'lines', path: 'a.py', lines: [0, 2] },
      { kind: 'source', source: 'handoff/x@1' },
      { kind: 'command', command: 'x' },
    ]) {
      assert.equal(targetOfPath(forged(bad)), undefined, JSON.stringify(bad));
    }
    assert.equal(targetOfPath('/open/not-json!/x'), undefined);
    assert.equal(targetOfPath('/continuity.md'), undefined);
  });

  it('reads the cited lines of the server\'s VS Code links, and nothing else', () => {
    assert.deepEqual(citedLines('/client/pets%20client.py?lines=4-6#L4'), { path: 'client/pets client.py', lines: [4, 6] });
    assert.deepEqual(citedLines('/a.py?lines=7-7#L7'), { path: 'a.py', lines: [7, 7] });
    for (const href of ['/a.py#L4', '/a.py', 'file:///w/a.py?lines=1-2#L1', '/a.py?lines=6-4#L6', '/../a.py?lines=1-2#L1', 'https://x/?lines=1-2#L1']) {
      assert.equal(citedLines(href), undefined, href);
    }
  });

  it('links relative to the preview\'s document, reaching its stand-in path from any depth', () => {
    for (const docPath of ['/continuity.md', '/handoff/ec6bd8c4c24e@1.md', '/continue-latest/feature%2Fx/feature-x · continue latest.md']) {
      const href = rewriteHref('/client/pets_client.py?lines=4-6#L4', { docPath });
      assert.ok(href && !href.startsWith('/') && !/^[a-z-]+:/i.test(href), href);
      assert.deepEqual(targetOfPath(resolve(docPath, href)), { kind: 'lines', path: 'client/pets_client.py', lines: [4, 6] });
    }
    assert.equal(relativeLink('/a/b/c.md', '/open/x/y z'), '../../open/x/y%20z');
    assert.equal(rewriteHref('/client/pets_client.py#L4', { docPath: '/continuity.md' }), undefined);
    // A record of the preview's scope and folder.
    const place = { docPath: '/handoff/x@1.md', scope: 'docs', folder: 'file:///w/beta' };
    assert.deepEqual(targetOfPath(resolve(place.docPath, sourceHref(SOURCE, place)!)), { kind: 'source', source: SOURCE, scope: 'docs', folder: 'file:///w/beta' });
    assert.equal(sourceHref('source/has space', place), undefined);
    assert.equal(sourceHref('handoff/x@1', place), undefined);
  });

  it('rewrites the links of a Handoff preview as VS Code\'s preview renders it, and no other document', () => {
    const markdown = [
      '- evidence: [client/pets_client.py](/client/pets_client.py?lines=4-6#L4) (lines 4–6)',
      '- evidence: [client/pets_client.py](/client/pets_client.py) sha256 `86dc03602dcf`',
      `- evidence: \`${SOURCE}\`: Work Contract: do X`,
      `- [\`${SOURCE}\`](https://example.com/)`,
    ].join('\n');
    const docPath = '/handoff/ec6bd8c4c24e@1.md';
    const ours = { currentDocument: { scheme: 'handoff-preview', path: docPath } };
    const md = previewEngine((env) => ((env as typeof ours).currentDocument.scheme === 'handoff-preview' ? { docPath, scope: 'docs' } : undefined));
    const [lines, whole, record, already] = anchors(md.render(markdown, ours));
    assert.equal(lines.href, lines.dataHref);
    assert.deepEqual(targetOfPath(resolve(docPath, lines.href)), { kind: 'lines', path: 'client/pets_client.py', lines: [4, 6] });
    assert.equal(lines.text, 'client/pets_client.py');
    assert.deepEqual([whole.href, whole.dataHref], ['/client/pets_client.py', '/client/pets_client.py']);
    assert.deepEqual(targetOfPath(resolve(docPath, record.dataHref)), { kind: 'source', source: SOURCE, scope: 'docs' });
    assert.equal(record.text, `<code>${SOURCE}</code>`);
    // A code span inside a link stays that link's (no link in a link); a hash is no record.
    assert.equal(already.href, 'https://example.com/');
    assert.equal(anchors(md.render(markdown, ours)).length, 4);
    // Any other Markdown document renders exactly as without the plugin.
    const other = { currentDocument: { scheme: 'file', path: '/w/README.md' } };
    const plain = new MarkdownIt({ html: true });
    const bare = plain.renderer.rules.link_open;
    plain.renderer.rules.link_open = (tokens: { attrGet(n: string): string; attrSet(n: string, v: string): void }[], idx: number, options: unknown, env: unknown, self: { renderToken(...a: unknown[]): string }) => {
      tokens[idx].attrSet('data-href', tokens[idx].attrGet('href'));
      return bare ? bare(tokens, idx, options, env, self) : self.renderToken(tokens, idx, options);
    };
    assert.equal(md.render(markdown, other), plain.render(markdown, other));
  });

  it('shows a record as a preview of its own, in its scope', () => {
    const view = { kind: 'source' as const, source: SOURCE, scope: 'docs' };
    const p = previewPath(view);
    assert.equal(p, `/source/${SOURCE.replace('/', '-')}.md`);
    assert.deepEqual(viewFromPath(p, () => undefined), { kind: 'source', source: SOURCE });
    assert.deepEqual(reportParams(view), { kind: 'source', source: SOURCE, scope: 'docs', render: 'vscode' });
    assert.deepEqual(reportParams({ kind: 'source', source: SOURCE }), { kind: 'source', source: SOURCE, render: 'vscode' });
  });

  it('knows the scope and the view of a preview\'s document (a multi-root title included)', () => {
    const prepared = preparedFixture();
    const lookup = (digest: string) => (digest === prepared.digest ? prepared : undefined);
    assert.equal(viewPathOf('/handoff/site · ec6bd8c4c24e@1.md', 'folder=file%3A%2F%2F%2Fw%2Fsite&name=site'), '/handoff/ec6bd8c4c24e@1.md');
    assert.equal(scopeOfView(viewFromPath(previewPath({ kind: 'continue', latest: 'feature/x' }), lookup), {}), 'feature/x');
    assert.equal(scopeOfView(viewFromPath(previewPath({ kind: 'handoff', prepared }), lookup), {}), prepared.scope);
    assert.equal(scopeOfView(viewFromPath(previewPath({ kind: 'handoff', revision: REVISION }), lookup), { scope: 'docs' }), 'docs');
    assert.equal(scopeOfView(viewFromPath('/continuity.md', lookup), {}), undefined);
  });
});
