/** Links in the Handoff previews that VS Code's Markdown preview cannot follow by itself:
 * cited lines to open selected (`/path?lines=12-20#L12`, as the server renders them for
 * VS Code) and `source/<id>` records to show. A markdown-it plugin (`handoffLinks`)
 * rewrites them, in Handoff previews only, into links relative to the preview's own
 * `handoff-preview:` document: the preview resolves such a link to a `handoff-preview:`
 * path under `/open/` and opens it in an editor, where the extension sees it and opens
 * what it names instead (`vscodeViews.ts`). Free of `vscode`. */

export const OPEN_ROOT = '/open/';
/** A store record's reference, as the server spells it. */
export const SOURCE_REF = /^source\/[A-Za-z0-9_-]{1,64}$/;

/** What a link of a preview opens. ``folder``: the workspace folder (URI) of the preview
 * it was in, when the preview names one (a multi-root window). */
export type LinkTarget =
  | { kind: 'lines'; path: string; lines: [number, number]; folder?: string }
  | { kind: 'source'; source: string; scope?: string; folder?: string };

/** Where a preview's links are rendered: its document's path, and the folder and scope
 * it shows (undefined: the window's folder, the server's default scope). */
export interface LinkPlace {
  docPath: string;
  folder?: string;
  scope?: string;
}

/** A workspace-relative path that stays in the workspace. */
function relativePath(p: string): boolean {
  return p.length > 0 && !p.startsWith('/') && !/^[A-Za-z]:/.test(p) && !p.replace(/\\/g, '/').split('/').includes('..');
}

/** What the link says, for its stand-in tab and its tooltip. */
export function linkTitle(target: LinkTarget): string {
  if (target.kind === 'source') {
    return `Showing ${target.source}`;
  }
  const [first, last] = target.lines;
  return `Opening ${target.path}, ${first === last ? `line ${first}` : `lines ${first}–${last}`}`;
}

/** The `handoff-preview:` path that stands for ``target``: `/open/<params>/<name>`, the
 * params as base64url JSON (no `/`, nothing a URI parser decodes), the name what the
 * stand-in's tab shows (with no extension a language would claim). */
export function openPath(target: LinkTarget): string {
  const name =
    target.kind === 'source'
      ? target.source.replace('/', ' ')
      : `${target.path.split('/').pop()} · ${target.lines[0] === target.lines[1] ? `line ${target.lines[0]}` : `lines ${target.lines[0]}–${target.lines[1]}`}`;
  return `${OPEN_ROOT}${Buffer.from(JSON.stringify(target)).toString('base64url')}/${name}`;
}

/** Back from an `/open/` path to what it opens; undefined for any other path or for
 * params that are not one of ours. */
export function targetOfPath(path: string): LinkTarget | undefined {
  const m = /^\/open\/([A-Za-z0-9_-]+)\/[^/]*$/.exec(path);
  if (!m) {
    return undefined;
  }
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(m[1], 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) {
    return undefined;
  }
  const v = value as Record<string, unknown>;
  const folder = typeof v.folder === 'string' ? { folder: v.folder } : {};
  if (v.kind === 'source' && typeof v.source === 'string' && SOURCE_REF.test(v.source)) {
    return { kind: 'source', source: v.source, ...(typeof v.scope === 'string' ? { scope: v.scope } : {}), ...folder };
  }
  const lines = v.lines;
  if (
    v.kind === 'lines' &&
    typeof v.path === 'string' &&
    relativePath(v.path) &&
    Array.isArray(lines) &&
    lines.length === 2 &&
    lines.every((n) => Number.isInteger(n) && n > 0) &&
    lines[0] <= lines[1]
  ) {
    return { kind: 'lines', path: v.path, lines: [lines[0], lines[1]], ...folder };
  }
  return undefined;
}

/** ``to`` as a link relative to the document at ``from`` (both absolute paths), each
 * segment percent-encoded. */
export function relativeLink(from: string, to: string): string {
  const up = from.split('/').length - 2; // the folders the document is in
  return '../'.repeat(Math.max(0, up)) + to.replace(/^\//, '').split('/').map(encodeURIComponent).join('/');
}

/** The cited lines of a server link (`/path?lines=12-20#L12`), if it is one. */
export function citedLines(href: string): { path: string; lines: [number, number] } | undefined {
  const m = /^\/([^?#]+)\?lines=([1-9][0-9]{0,8})-([1-9][0-9]{0,8})#L[0-9]+$/.exec(href);
  if (!m) {
    return undefined;
  }
  let path: string;
  try {
    path = decodeURIComponent(m[1]);
  } catch {
    return undefined;
  }
  const lines: [number, number] = [Number(m[2]), Number(m[3])];
  return relativePath(path) && lines[0] <= lines[1] ? { path, lines } : undefined;
}

/** The link a Handoff preview shows for a server link, or undefined to leave it be. */
export function rewriteHref(href: string | null | undefined, place: LinkPlace): string | undefined {
  const cited = href ? citedLines(href) : undefined;
  if (!cited) {
    return undefined;
  }
  return relativeLink(place.docPath, openPath({ kind: 'lines', ...cited, ...(place.folder ? { folder: place.folder } : {}) }));
}

/** The link for a `source/<id>` code span of a Handoff preview, or undefined. */
export function sourceHref(code: string, place: LinkPlace): string | undefined {
  if (!SOURCE_REF.test(code)) {
    return undefined;
  }
  const target: LinkTarget = { kind: 'source', source: code, ...(place.scope ? { scope: place.scope } : {}), ...(place.folder ? { folder: place.folder } : {}) };
  return relativeLink(place.docPath, openPath(target));
}

function attribute(value: string): string {
  return value.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');
}

/** The parts of markdown-it the plugin uses. */
interface Token {
  type: string;
  content: string;
  attrGet(name: string): string | null;
  attrSet(name: string, value: string): void;
}
type Rule = (tokens: Token[], idx: number, options: unknown, env: unknown, self: Renderer) => string;
interface Renderer {
  rules: Record<string, Rule | undefined>;
  renderToken(tokens: Token[], idx: number, options: unknown): string;
}
export interface MarkdownItLike {
  renderer: Renderer;
}

/** Is the token at ``idx`` inside a link (between a `link_open` and its `link_close`)? */
function insideLink(tokens: Token[], idx: number): boolean {
  let depth = 0;
  for (let i = idx - 1; i >= 0; i--) {
    if (tokens[i].type === 'link_close') {
      depth--;
    } else if (tokens[i].type === 'link_open') {
      depth++;
    }
  }
  return depth > 0;
}

/** The markdown-it plugin: in the documents ``placeOf`` knows (the Handoff previews;
 * it gets the render env, whose `currentDocument` VS Code's preview sets), cited lines
 * link to their stand-in and each `source/<id>` code span becomes a link to its record.
 * Every other document renders as before. */
export function handoffLinks<T extends MarkdownItLike>(md: T, placeOf: (env: unknown) => LinkPlace | undefined): T {
  const rules = md.renderer.rules;
  const linkOpen = rules.link_open;
  rules.link_open = (tokens, idx, options, env, self) => {
    const place = placeOf(env);
    const href = place ? rewriteHref(tokens[idx].attrGet('href'), place) : undefined;
    if (href) {
      // VS Code's preview follows `data-href` (its own renderer set it to the original).
      tokens[idx].attrSet('href', href);
      tokens[idx].attrSet('data-href', href);
    }
    return linkOpen ? linkOpen(tokens, idx, options, env, self) : self.renderToken(tokens, idx, options);
  };
  const codeInline = rules.code_inline;
  rules.code_inline = (tokens, idx, options, env, self) => {
    const html = codeInline ? codeInline(tokens, idx, options, env, self) : self.renderToken(tokens, idx, options);
    const place = placeOf(env);
    const href = place && !insideLink(tokens, idx) ? sourceHref(tokens[idx].content, place) : undefined;
    if (!href) {
      return html;
    }
    const a = attribute(href);
    return `<a href="${a}" data-href="${a}" title="${attribute(`Show ${tokens[idx].content}`)}">${html}</a>`;
  };
  return md;
}
