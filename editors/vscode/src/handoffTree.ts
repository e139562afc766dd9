/** The Handoff view's tree, free of `vscode`: scopes, each opening (when expanded) to its
 * head and revisions (acknowledgements and outcome), the drafts, the workspace's agent
 * sessions and the lineage, each node with what it shows and the command a click or its
 * menu runs; in a multi-root window, one such tree per workspace folder. */

import type { FolderRef } from './folders';
import { AgentSession, HistoryRevision, SessionsResult } from './protocol';

export interface ScopeInfo {
  scope: string;
  head: string | null;
  records?: number;
  updatedAt?: string;
}

export interface ScopesResult {
  scopes: ScopeInfo[];
  current: string;
}

/** What the tree is read from (the server, the state folder). ``folder`` is the URI of
 * the workspace folder asked about (undefined: the window's only folder). */
export interface TreeSource {
  /** The workspace folders; with more than one, each is a node of its own. */
  folders(): readonly FolderRef[];
  scopes(folder?: string): Promise<ScopesResult>;
  /** One scope's head and revisions, read when its node is expanded. */
  history(scope: string, folder?: string): Promise<{ head: string | null; revisions: HistoryRevision[] }>;
  sessions(folder?: string): Promise<SessionsResult>;
  /** The saved drafts' paths, newest first. */
  drafts(folder?: string): Promise<string[]>;
}

type Section = 'scopes' | 'drafts' | 'sessions' | 'lineage';

export type TreeNode =
  | { kind: 'folder'; folder: FolderRef }
  | { kind: 'section'; section: Section; folder?: string }
  | { kind: 'scope'; scope: ScopeInfo; current: boolean; folder?: string }
  | { kind: 'revision'; revision: HistoryRevision; head: boolean; scope?: string; folder?: string }
  | { kind: 'draft'; path: string; folder?: string }
  | { kind: 'session'; session: AgentSession; folder?: string }
  | { kind: 'note'; text: string };

/** A node as the view shows it. `contextValue` selects its menu (package.json). */
export interface TreeItemView {
  label: string;
  description?: string;
  tooltip?: string;
  contextValue: string;
  collapsible: 'none' | 'collapsed' | 'expanded';
  icon?: string;
  command?: { command: string; title: string; arguments: unknown[] };
  /** A file the item stands for (drafts, sessions): shown as its resource. */
  file?: string;
}

const SECTIONS: { section: Section; label: string; icon: string }[] = [
  { section: 'scopes', label: 'Scopes', icon: 'git-branch' },
  { section: 'drafts', label: 'Drafts', icon: 'edit' },
  { section: 'sessions', label: 'Agent Sessions', icon: 'comment-discussion' },
  { section: 'lineage', label: 'Lineage', icon: 'type-hierarchy' },
];

function baseName(p: string): string {
  return p.split(/[\\/]/).pop() || p;
}

/** The acknowledgement and outcome state of a revision, in a few words. */
export function revisionState(r: HistoryRevision): string {
  const acks = r.acknowledgements ?? [];
  const last = acks[acks.length - 1];
  const ack = last ? last.status.replace(/_/g, ' ') : 'not acknowledged';
  return r.covered ? `${ack} · outcome recorded` : ack;
}

export async function childrenOf(node: TreeNode | undefined, source: TreeSource): Promise<TreeNode[]> {
  if (node === undefined) {
    const folders = source.folders();
    if (folders.length > 1) {
      return folders.map((folder) => ({ kind: 'folder', folder }));
    }
    return SECTIONS.map(({ section }) => ({ kind: 'section', section }));
  }
  if (node.kind === 'folder') {
    return SECTIONS.map(({ section }) => ({ kind: 'section', section, folder: node.folder.uri }));
  }
  const folder = 'folder' in node ? node.folder : undefined;
  if (node.kind === 'section' && node.section === 'scopes') {
    const { scopes, current } = await source.scopes(folder);
    const out: TreeNode[] = scopes.map((scope) => ({ kind: 'scope', scope, current: scope.scope === current, folder }));
    if (!scopes.some((s) => s.scope === current)) {
      out.unshift({ kind: 'scope', scope: { scope: current, head: null }, current: true, folder });
    }
    return out;
  }
  if (node.kind === 'scope') {
    const scope = node.scope.scope;
    const { head, revisions } = await source.history(scope, folder);
    if (revisions.length === 0) {
      return [{ kind: 'note', text: 'No revision yet: Prepare from a draft, then Commit.' }];
    }
    return revisions.map((revision) => ({ kind: 'revision', revision, head: revision.revision === head, scope, folder }));
  }
  if (node.kind === 'section' && node.section === 'drafts') {
    const drafts = await source.drafts(folder);
    return drafts.length ? drafts.map((path) => ({ kind: 'draft', path, folder })) : [{ kind: 'note', text: 'No draft: Generate from an agent session.' }];
  }
  if (node.kind === 'section' && node.section === 'sessions') {
    const { sessions, searched } = await source.sessions(folder);
    if (sessions.length === 0) {
      const where = searched?.length ? ` (looked in ${searched.join(', ')})` : '';
      return [{ kind: 'note', text: `No agent session of this workspace${where}.` }];
    }
    return sessions.map((session) => ({ kind: 'session', session, folder }));
  }
  return [];
}

export function itemOf(node: TreeNode): TreeItemView {
  switch (node.kind) {
    case 'folder':
      return { label: node.folder.name, description: node.folder.path, contextValue: 'folder', collapsible: 'expanded', icon: 'root-folder' };
    case 'section': {
      const s = SECTIONS.find((x) => x.section === node.section)!;
      if (node.section === 'lineage') {
        return {
          label: s.label,
          description: 'which session continued which',
          contextValue: 'lineage',
          collapsible: 'none',
          icon: s.icon,
          command: { command: 'handoffUi.showLineage', title: 'Show Lineage', arguments: [node] },
        };
      }
      return { label: s.label, contextValue: `section.${node.section}`, collapsible: 'expanded', icon: s.icon };
    }
    case 'scope':
      return {
        label: node.scope.scope,
        description: `${node.current ? 'current · ' : ''}${node.scope.head ? `head ${node.scope.head.replace(/^handoff\/[^@]+/, '')}` : 'no revision'}`,
        tooltip: node.scope.head ? `Head: ${node.scope.head}` : undefined,
        contextValue: node.current ? 'scope.current' : 'scope',
        collapsible: node.current ? 'expanded' : 'collapsed',
        icon: 'git-branch',
      };
    case 'revision': {
      const r = node.revision;
      const objective = r.content?.objective ?? '';
      return {
        // The state first: in a narrow side bar the objective is what is cut off.
        label: `@${r.number}${node.head ? ' (head)' : ''}`,
        description: objective ? `${revisionState(r)} · ${objective}` : revisionState(r),
        tooltip: `${r.revision}${r.committedAt ? `, committed ${r.committedAt}` : ''}\n${revisionState(r)}${objective ? `\n${objective}` : ''}`,
        contextValue: 'revision',
        collapsible: 'none',
        icon: r.covered ? 'pass' : (r.acknowledgements ?? []).length ? 'check' : 'circle-outline',
        command: { command: 'handoffUi.showHandoff', title: 'Show Handoff', arguments: [node] },
      };
    }
    case 'draft':
      return {
        label: baseName(node.path),
        contextValue: 'draft',
        collapsible: 'none',
        file: node.path,
        command: { command: 'vscode.open', title: 'Open Draft', arguments: [node.path] },
      };
    case 'session': {
      const s = node.session;
      const title = s.title ? s.title.replace(/\s+/g, ' ').slice(0, 60) : baseName(s.path);
      const started = s.startedFrom ? ' · started from a handoff' : '';
      return {
        label: title,
        description: `${s.format} · ${s.messageCount} messages${started}`,
        tooltip: s.path,
        contextValue: s.canHandOff === false ? 'session.empty' : 'session',
        collapsible: 'none',
        icon: 'comment',
      };
    }
    case 'note':
      return { label: node.text, contextValue: 'note', collapsible: 'none', icon: 'info' };
  }
}
