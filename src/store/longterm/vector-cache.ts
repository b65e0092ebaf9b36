/**
 * PostgreSQL's dense vectors, kept in the process per user and kind (MEMORY_STORE=postgres with
 * EMBEDDING_MODEL). Scored in SQL, a search multiplied every element of every vector of the user
 * through unnest: 0.86 s over 20,000 facts of 384 dimensions. Here a search reads only the vectors
 * written since its last read — each write numbers its vectors from one sequence, under the user's
 * write lock, so a user's numbers commit in order — and scores them in the process (nearestOf).
 * Bounded by the floats held, least recently used first; a user and kind larger than the bound alone
 * is left to SQL.
 */
import type { MemoryKind } from '../../longterm/contract';

/** How many floats a process keeps at most: 64 MB, e.g. 40,000 vectors of 384 dimensions. */
export const VECTOR_CACHE_FLOATS = 16_000_000;

/** Users and kinds known at most, those too large included. */
const MAX_KEYS = 10_000;

/** Rows read per statement while catching up. */
const PAGE_ROWS = 2_000;

export interface VectorQueryable {
  query<R extends object>(text: string, values: unknown[]): Promise<{ rows: R[] }>;
}

interface Held {
  /** The highest vector number read. */
  upTo: number;
  vectors: Map<string, Float32Array>;
  /** Each vector's number: a later read of the same record keeps the newer. */
  numbers: Map<string, number>;
  floats: number;
}

/** Marks a user and kind with more vectors than the bound: searched in SQL. */
const TOO_LARGE = 'too large';

export class VectorCache {
  /** In order of use, least recent first. */
  private readonly held = new Map<string, Held | typeof TOO_LARGE>();
  private floats = 0;

  constructor(private readonly maxFloats = VECTOR_CACHE_FLOATS) {}

  /** The user's vectors of `kind`, up to date as `db` sees them; undefined when they are too many to keep. */
  async read(db: VectorQueryable, userId: string, kind: MemoryKind): Promise<ReadonlyMap<string, Float32Array> | undefined> {
    const key = `${userId}\u0000${kind}`;
    const found = this.held.get(key);
    if (found === TOO_LARGE) return undefined;
    const entry = found ?? { upTo: 0, vectors: new Map(), numbers: new Map(), floats: 0 };
    this.held.delete(key);
    this.held.set(key, entry);
    for (;;) {
      const { rows } = await db.query<{ id: string; n: string; bin: Buffer }>(
        `SELECT id, vector_n::text AS n, array_send(embedding) AS bin FROM longterm_records
          WHERE user_id = $1 AND kind = $2 AND vector_n > $3 ORDER BY vector_n LIMIT ${PAGE_ROWS}`,
        [userId, kind, entry.upTo],
      );
      for (const row of rows) this.put(key, entry, row.id, Number(row.n), floatsOf(row.bin));
      if (entry.floats > this.maxFloats) {
        this.drop(key);
        this.held.set(key, TOO_LARGE);
        return undefined;
      }
      this.evictFor(key);
      if (rows.length < PAGE_ROWS) return entry.vectors;
    }
  }

  /** Forgets what is held of a user (its records moved to another id). */
  forget(userId: string): void {
    for (const key of [...this.held.keys()]) if (key.startsWith(`${userId}\u0000`)) this.drop(key);
  }

  private put(key: string, entry: Held, id: string, n: number, vector: Float32Array): void {
    entry.upTo = Math.max(entry.upTo, n);
    if ((entry.numbers.get(id) ?? -1) >= n) return; // a concurrent read brought a newer one
    const before = entry.vectors.get(id)?.length ?? 0;
    entry.vectors.set(id, vector);
    entry.numbers.set(id, n);
    entry.floats += vector.length - before;
    // An entry evicted while this read went on is this read's alone: no longer counted.
    if (this.held.get(key) === entry) this.floats += vector.length - before;
  }

  private drop(key: string): void {
    const entry = this.held.get(key);
    if (entry && entry !== TOO_LARGE) this.floats -= entry.floats;
    this.held.delete(key);
  }

  /** Evicts the least recently used until the floats held fit, and the users and kinds known, `keep` last. */
  private evictFor(keep: string): void {
    for (const key of this.held.keys()) {
      if (this.floats <= this.maxFloats && this.held.size <= MAX_KEYS) return;
      if (key !== keep) this.drop(key);
    }
  }
}

/** A real[] as array_send writes it (one dimension): a header, then each element's length and big-endian float4. */
export function floatsOf(bin: Buffer): Float32Array {
  const dims = bin.readInt32BE(0);
  if (dims === 0) return new Float32Array(0);
  if (dims !== 1) throw new Error(`a vector of ${dims} dimensions`);
  const length = bin.readInt32BE(12);
  const out = new Float32Array(length);
  let at = 20;
  for (let i = 0; i < length; i++) {
    const size = bin.readInt32BE(at);
    out[i] = size === 4 ? bin.readFloatBE(at + 4) : NaN;
    at += 4 + Math.max(0, size);
  }
  return out;
}
