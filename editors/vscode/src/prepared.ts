/** Prepared handoffs the user has not committed yet: kept in the workspace's state (so a
 * reload keeps them and their previews), and saved to / loaded from JSON files. */

import { promises as fs } from 'fs';
import { isPreparedHandoff, PreparedHandoff } from './protocol';

/** Where the shelf is kept across reloads (VS Code's `Memento`: `workspaceState`). */
export interface ShelfStore {
  get<T>(key: string): T | undefined;
  update(key: string, value: unknown): Thenable<void> | Promise<void>;
}

type Entry = { prepared: PreparedHandoff; committedAs?: string };

/** The key the shelf is kept under, and how many prepared handoffs it keeps. */
export const SHELF_KEY = 'handoff.preparedShelf';
export const SHELF_SIZE = 30;

export class PreparedShelf {
  /** Every prepared handoff seen, by digest, with the revision it became. */
  private readonly byDigest = new Map<string, Entry>();

  constructor(private readonly store?: ShelfStore) {
    const kept = store?.get<Entry[]>(SHELF_KEY);
    for (const entry of Array.isArray(kept) ? kept : []) {
      if (entry && isPreparedHandoff(entry.prepared)) {
        this.byDigest.set(entry.prepared.digest, { prepared: entry.prepared, committedAs: typeof entry.committedAs === 'string' ? entry.committedAs : undefined });
      }
    }
  }

  private save(): void {
    while (this.byDigest.size > SHELF_SIZE) {
      this.byDigest.delete(this.byDigest.keys().next().value as string);
    }
    void this.store?.update(SHELF_KEY, [...this.byDigest.values()]);
  }

  /** The ones not committed yet, newest first. */
  list(): PreparedHandoff[] {
    return [...this.byDigest.values()]
      .filter((e) => e.committedAs === undefined)
      .map((e) => e.prepared)
      .reverse();
  }

  /** Any prepared handoff of this session, committed or not (previews still show it). */
  get(digest: string): PreparedHandoff | undefined {
    return this.byDigest.get(digest)?.prepared;
  }

  /** Keeps ``prepared`` (re-adding one moves it to the front and offers it again). */
  add(prepared: PreparedHandoff): void {
    this.byDigest.delete(prepared.digest);
    this.byDigest.set(prepared.digest, { prepared });
    this.save();
  }

  /** Stops offering a prepared handoff once it is committed. */
  markCommitted(digest: string, revision: string): void {
    const entry = this.byDigest.get(digest);
    if (entry) {
      entry.committedAs = revision;
      this.save();
    }
  }

  committedAs(digest: string): string | undefined {
    return this.byDigest.get(digest)?.committedAs;
  }

  /** How many are waiting to be committed. */
  get size(): number {
    return this.list().length;
  }
}

/** Reads a prepared handoff from a JSON file: the object itself or a whole prepare result. */
export async function readPreparedFile(path: string): Promise<PreparedHandoff> {
  let raw: string;
  try {
    raw = await fs.readFile(path, 'utf8');
  } catch (error) {
    throw new Error(`Cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? String(error)}.`);
  }
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    throw new Error(`${path} is not JSON.`);
  }
  if (typeof value === 'object' && value !== null && 'prepared' in value && !('digest' in value)) {
    value = (value as { prepared: unknown }).prepared;
  }
  if (!isPreparedHandoff(value)) {
    throw new Error(`${path} does not hold a prepared handoff (an object with scope, content and a sha256 digest).`);
  }
  return value;
}

/** Writes a prepared handoff unchanged, so the server's digest still matches it. */
export async function writePreparedFile(path: string, prepared: PreparedHandoff): Promise<void> {
  const tmp = `${path}.${process.pid}.tmp`;
  await fs.writeFile(tmp, JSON.stringify(prepared, null, 2) + '\n', 'utf8');
  await fs.rename(tmp, path);
}
