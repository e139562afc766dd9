/** The preview pane's documents: `handoff-preview:` paths ending in `.md`, each naming one
 * `handoff.report`, and the Markdown rendered for them (server refusals included). */

import type { HandoffServer, ReportView } from './commands';
import { toCommandError } from './errors';
import { shortDigest } from './inputs';
import { ContinuityData, PreparedHandoff, REVISION_RE, ReportResult, ServerCommand } from './protocol';
import type { CancellationTokenLike } from './ui';

export const PREVIEW_SCHEME = 'handoff-preview';

/** The path of a preview document; the file name becomes the editor tab's title. */
export function previewPath(view: ReportView): string {
  if (view.kind === 'source') {
    return `/source/${view.source.replace(/\//g, '-')}.md`;
  }
  if (view.kind !== 'handoff' && view.kind !== 'continue') {
    return `/${view.kind}.md`;
  }
  if ('latest' in view) {
    // Titled as latest (it follows the head), never as the revision it shows now.
    return `/continue-latest/${encodeURIComponent(view.latest)}/${view.latest.replace(/\//g, '-')} · continue latest.md`;
  }
  if ('revision' in view) {
    // The file name is the tab's title, and tabs are found by it: Continue and the
    // handoff of one revision get different names (one tab each, never each other's).
    const m = REVISION_RE.exec(view.revision);
    const name = m ? `${m[1]}@${m[2]}` : encodeURIComponent(view.revision);
    return view.kind === 'continue' ? `/continue/${name} · continue.md` : `/handoff/${name}.md`;
  }
  // The full digest names the folder (the lookup key); the file name, the tab's title,
  // is the scope and the short digest.
  const hex = view.prepared.digest.replace(/^sha256:/, '');
  const what = view.kind === 'continue' ? 'continue from prepared' : 'prepared';
  const root = view.kind === 'continue' ? 'continue-prepared' : 'prepared';
  return `/${root}/${hex}/${view.prepared.scope.replace(/\//g, '-')} · ${what} ${shortDigest(view.prepared.digest)}.md`;
}

/** Back from a path to the report it shows; prepared handoffs are looked up by digest. */
export function viewFromPath(
  p: string,
  lookupPrepared: (digest: string) => PreparedHandoff | undefined,
): ReportView | { missingPrepared: string } | undefined {
  if (p === '/continuity.md') {
    return { kind: 'continuity' };
  }
  if (p === '/history.md') {
    return { kind: 'history' };
  }
  if (p === '/lineage.md') {
    return { kind: 'lineage' };
  }
  let m = /^\/source\/source-([A-Za-z0-9_-]{1,64})\.md$/.exec(p);
  if (m) {
    return { kind: 'source', source: `source/${m[1]}` };
  }
  m = /^\/handoff\/([A-Za-z0-9_-]{1,64})@([1-9][0-9]{0,8})\.md$/.exec(p);
  if (m) {
    return { kind: 'handoff', revision: `handoff/${m[1]}@${m[2]}` };
  }
  m = /^\/continue\/([A-Za-z0-9_-]{1,64})@([1-9][0-9]{0,8}) · continue\.md$/.exec(p);
  if (m) {
    return { kind: 'continue', revision: `handoff/${m[1]}@${m[2]}` };
  }
  m = /^\/continue-latest\/([^/]+)\/[^/]+\.md$/.exec(p);
  if (m) {
    return { kind: 'continue', latest: decodeURIComponent(m[1]) };
  }
  m = /^\/(prepared|continue-prepared)\/([0-9a-f]{64})(?:\.md|\/[^/]+\.md)$/.exec(p);
  if (m) {
    const digest = `sha256:${m[2]}`;
    const prepared = lookupPrepared(digest);
    if (!prepared) {
      return { missingPrepared: digest };
    }
    return m[1] === 'prepared' ? { kind: 'handoff', prepared } : { kind: 'continue', prepared };
  }
  return undefined;
}

/** The `handoff.report` params for a view. Rendered for VS Code: cited files link to
 * `/path#L60`, which the Markdown preview resolves against the workspace folder and
 * opens at the line (it renders no anchor for a `file:` link). */
export function reportParams(view: ReportView): Record<string, unknown> {
  const render = 'vscode';
  const scoped = 'scope' in view && view.scope ? { scope: view.scope } : {};
  if (view.kind === 'continue') {
    if ('latest' in view) {
      return { mode: 'latest', scope: view.latest, render };
    }
    return 'revision' in view
      ? { mode: 'exact', revision: view.revision, ...scoped, render }
      : { mode: 'prepared', prepared: view.prepared, scope: view.prepared.scope, render };
  }
  if (view.kind === 'source') {
    return { kind: 'source', source: view.source, ...scoped, render };
  }
  if (view.kind !== 'handoff') {
    return { kind: view.kind, render };
  }
  return 'revision' in view
    ? { kind: 'handoff', revision: view.revision, ...scoped, render }
    : { kind: 'handoff', prepared: view.prepared, scope: view.prepared.scope, render };
}

/** What a preview's URI carries besides its path: the revision's scope when it is not the
 * default one, and the workspace folder in a multi-root window. */
export interface PreviewPlace {
  scope?: string;
  folder?: string;
}

export function previewQuery(view: ReportView, folder?: string): string {
  const q = new URLSearchParams();
  if ('scope' in view && view.scope && ('revision' in view || view.kind === 'source')) {
    q.set('scope', view.scope);
  }
  if (folder) {
    q.set('folder', folder);
  }
  return q.toString();
}

export function placeOf(query: string): PreviewPlace {
  const q = new URLSearchParams(query);
  return { scope: q.get('scope') ?? undefined, folder: q.get('folder') ?? undefined };
}

/** A preview document's path as `previewPath` made it: in a multi-root window the
 * file name starts with the folder's name (the `name` in the query), taken off here. */
export function viewPathOf(path: string, query: string): string {
  const name = new URLSearchParams(query).get('name');
  return name ? path.replace(`/${name} · `, '/') : path;
}

/** The scope a preview shows: the one its URI or its prepared value names; undefined
 * for the server's default scope. */
export function scopeOfView(view: ReturnType<typeof viewFromPath>, place: PreviewPlace): string | undefined {
  if (view && 'latest' in view) {
    return view.latest;
  }
  if (view && 'prepared' in view) {
    return view.prepared.scope;
  }
  return place.scope;
}

/** A refusal rendered into the pane instead of the report. */
export function failureMarkdown(title: string, message: string, code: string): string {
  return `# ${title}\n\n> **The Handoff server could not render this view** (\`${code}\`)\n>\n> ${message.replace(/\n/g, '\n> ')}\n`;
}

/** The Markdown for one preview path; never rejects (failures become Markdown). */
export async function renderPreview(
  server: HandoffServer,
  p: string,
  lookupPrepared: (digest: string) => PreparedHandoff | undefined,
  token?: CancellationTokenLike,
  committedAs?: (digest: string) => string | undefined,
  place: PreviewPlace = {},
): Promise<string> {
  const path = viewFromPath(p, lookupPrepared);
  const found: typeof path = path && place.scope && ('revision' in path || ('kind' in path && path.kind === 'source')) ? { ...path, scope: place.scope } : path;
  // A prepared handoff committed since its tab opened shows as the revision it became.
  const revision = found && !('missingPrepared' in found) && found.kind === 'handoff' && 'prepared' in found ? committedAs?.(found.prepared.digest) : undefined;
  const view: typeof found = revision ? { kind: 'handoff', revision } : found;
  if (view === undefined) {
    return failureMarkdown('Handoff', `There is no Handoff view at ${p}.`, 'invalid_params');
  }
  if ('missingPrepared' in view) {
    return failureMarkdown(
      `Prepared ${shortDigest(view.missingPrepared)}`,
      'This prepared handoff is no longer kept in this editor session (it was committed, or the window was reloaded). Load it again from its file with "Handoff: Load Prepared Handoff".',
      'invalid_prepared',
    );
  }
  try {
    // Continue's view is the server's too (templates/continue.md.j2), not built here.
    const command = view.kind === 'continue' ? ServerCommand.continue : ServerCommand.report;
    const params = { ...reportParams(view), ...(place.folder ? { workspace: place.folder } : {}) };
    const result = await server.execute<ReportResult>(command, params, { token });
    if (revision && found && !('missingPrepared' in found) && found.kind === 'handoff' && 'prepared' in found) {
      const [heading, ...rest] = result.markdown.split('\n');
      const note = `> Prepared ${shortDigest(found.prepared.digest)} was committed as ${revision}; this is that revision.`;
      return [heading, '', note, ...rest].join('\n');
    }
    return result.markdown;
  } catch (error) {
    const failure = toCommandError(error);
    const title =
      view.kind === 'handoff' || view.kind === 'continue'
        ? ('latest' in view ? `Continue (latest) in ${view.latest}` : 'revision' in view ? view.revision : `Prepared ${shortDigest(view.prepared.digest)}`)
        : view.kind === 'source'
          ? `Source ${view.source}`
          : `Handoff ${view.kind}`;
    return failureMarkdown(title, failure.message, failure.code);
  }
}

/** The status bar's text and tooltip for a scope's continuity. */
export function statusText(scope: string, data: Pick<ContinuityData, 'head' | 'transfer' | 'outcome'>): { text: string; tooltip: string } {
  const head = data.head ? data.head.replace(/^handoff\/[^@]*/, '') : 'no revision';
  const transfer = data.transfer === 'none' ? '' : ` · ${data.transfer.replace(/_/g, ' ')}`;
  return {
    text: `$(arrow-swap) ${scope} · ${head}${transfer}`,
    tooltip: [
      `Handoff scope: ${scope}`,
      `Head: ${data.head ?? 'none committed'}`,
      `Transfer: ${data.transfer.replace(/_/g, ' ')}`,
      `Outcome: ${data.outcome}`,
      '',
      'Click to show the continuity report.',
    ].join('\n'),
  };
}
