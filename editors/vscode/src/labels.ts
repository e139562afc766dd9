/** How the palette commands name things in pickers and messages: shortened titles,
 * relative times, the session picker's items, the agents offered and their terminals,
 * receipts. Free of `vscode`. */

import { inWords } from './inputs';
import { Agent, AGENT_LABELS, agentOf, AgentSession, SessionRef } from './protocol';
import type { PickItem } from './ui';

export function baseName(p: string): string {
  return p.split(/[\\/]/).pop() || p;
}

/** ``text`` on one line, at most ``max`` characters (an ellipsis when cut, at a word
 * boundary when there is one near the end). */
export function shorten(text: string, max = 60): string {
  const line = text.replace(/\s+/g, ' ').trim();
  if (line.length <= max) {
    return line;
  }
  const cut = line.slice(0, max - 1);
  const space = cut.lastIndexOf(' ');
  return `${space > max * 0.6 ? cut.slice(0, space) : cut}…`;
}

/** "just now", "12 min ago", "3 h ago", "yesterday", "4 days ago", else the date. */
export function relativeTime(iso: string, now: Date = new Date()): string {
  const then = Date.parse(iso);
  if (Number.isNaN(then)) {
    return iso;
  }
  const minutes = Math.floor((now.getTime() - then) / 60_000);
  if (minutes < 1) {
    return 'just now';
  }
  if (minutes < 60) {
    return `${minutes} min ago`;
  }
  const hours = Math.floor(minutes / 60);
  if (hours < 24) {
    return `${hours} h ago`;
  }
  const days = Math.floor(hours / 24);
  if (days === 1) {
    return 'yesterday';
  }
  if (days < 30) {
    return `${days} days ago`;
  }
  return new Date(then).toISOString().slice(0, 10);
}

/** A session's title as the picker's label: short enough (44 characters) that the agent,
 * message count and time after it are not cut off in a default-width quick pick. */
export function sessionLabel(session: AgentSession): string {
  return shorten(session.title || baseName(session.path), SESSION_LABEL_CHARS);
}
const SESSION_LABEL_CHARS = 44;

function sessionDescription(session: AgentSession, now: Date): string {
  const agent = agentOf(session);
  const parts = [
    agent ? AGENT_LABELS[agent] : session.format,
    session.messageCount === 1 ? '1 message' : `${session.messageCount} messages`,
    relativeTime(session.updatedAt, now),
  ];
  if (session.startedFrom) {
    parts.push('started from a handoff');
  }
  if (session.canHandOff === false) {
    parts.push('nothing to hand off yet');
  }
  return parts.join(' · ');
}

/** The Generate session picker: the title shortened; agent · messages · relative time;
 * the path as detail; sessions that cannot be handed off last (the server's order kept
 * otherwise). */
export function sessionItems(sessions: AgentSession[], now: Date = new Date()): PickItem<AgentSession>[] {
  const ordered = [...sessions.filter((s) => s.canHandOff !== false), ...sessions.filter((s) => s.canHandOff === false)];
  return ordered.map((s) => ({ label: sessionLabel(s), description: sessionDescription(s, now), detail: s.path, value: s }));
}

/** The integrated terminal a started agent runs in. */
export function terminalName(agent: Agent): string {
  return `Handoff: ${agent === 'omp' ? 'omp' : (AGENT_LABELS[agent] ?? agent)}`;
}

/** The agents offered, the source session's first (the default). */
export function agentChoices(source: SessionRef | undefined): { agent: Agent; isDefault: boolean }[] {
  const first = agentOf(source);
  const offered: Agent[] = ['pi', 'claude', 'codex', 'opencode', 'gemini', 'qwen'];
  const order = first ? [first, ...offered.filter((a) => a !== first)] : offered;
  return order.map((agent) => ({ agent, isDefault: agent === first }));
}

/** An acknowledgement receipt as Record Outcome offers it: "accepted acknowledgement of
 * handoff/…@1" (not "accepted of …"). */
export function receiptDescription(status: string, target: string): string {
  return `${inWords(status)} acknowledgement of ${target}`;
}
