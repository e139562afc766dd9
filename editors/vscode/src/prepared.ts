/** Prepared handoffs the user has not committed yet: kept for the editor session, and
 * saved to / loaded from JSON files so they survive it. */

import { promises as fs } from 'fs';
import { isPreparedHandoff, PreparedHandoff } from './protocol';

export class PreparedShelf {
  private readonly byDigest = new Map<string, PreparedHandoff>();

  /** Newest first. */
  list(): PreparedHandoff[] {
    return [...this.byDigest.values()].reverse();
  }

  get(digest: string): PreparedHandoff | undefined {
    return this.byDigest.get(digest);
  }

  /** Keeps ``prepared`` (re-adding one moves it to the front). */
  add(prepared: PreparedHandoff): void {
    this.byDigest.delete(prepared.digest);
    this.byDigest.set(prepared.digest, prepared);
  }

  /** Forgets a prepared handoff once it is committed. */
  remove(digest: string): void {
    this.byDigest.delete(digest);
  }

  get size(): number {
    return this.byDigest.size;
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
