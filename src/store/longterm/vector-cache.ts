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

  /**
   * The user's vectors of each of `kinds`, up to date as `db` sees them; undefined for a kind with too
   * many to keep. Every kind is read in one statement (a page of the rows numbered after what is held of
   * each, in number order), not one a kind: a search asks for up to four.
   */
  async read(db: VectorQueryable, userId: string, kinds: readonly MemoryKind[]): Promise<Map<MemoryKind, ReadonlyMap<string, Float32Array> | undefined>> {
    const out = new Map<MemoryKind, ReadonlyMap<string, Float32Array> | undefined>();
    const reading = new Map<MemoryKind, { key: string; entry: Held }>();
    for (const kind of new Set(kinds)) {
      const key = `${userId}\u0000${kind}`;
      const found = this.held.get(key);
      if (found === TOO_LARGE) {
        out.set(kind, undefined);
        continue;
      }
      const entry = found ?? { upTo: 0, vectors: new Map(), numbers: new Map(), floats: 0 };
      this.held.delete(key);
      this.held.set(key, entry);
      reading.set(kind, { key, entry });
    }
    while (reading.size > 0) {
      const asked = [...reading];
      // A page holds every row of a kind numbered up to its last row's number: each kind reads on from its own highest.
      // One index probe a kind (LATERAL): a join on the kinds scanned all the user's rows.
      const { rows } = await db.query<{ kind: MemoryKind; id: string; n: string; bin: Buffer }>(
        `SELECT r.kind, r.id, r.vector_n::text AS n, array_send(r.embedding) AS bin
           FROM unnest($2::text[], $3::bigint[]) AS s(kind, since)
           CROSS JOIN LATERAL (SELECT kind, id, vector_n, embedding FROM longterm_records
                                WHERE user_id = $1 AND kind = s.kind AND vector_n > s.since ORDER BY vector_n LIMIT ${PAGE_ROWS}) r
          ORDER BY r.vector_n LIMIT ${PAGE_ROWS}`,
        [userId, asked.map(([kind]) => kind), asked.map(([, { entry }]) => entry.upTo)],
      );
      for (const row of rows) {
        const target = reading.get(row.kind);
        if (target) this.put(target.key, target.entry, row.id, Number(row.n), floatsOf(row.bin));
      }
      for (const [kind, { key, entry }] of asked) {
        if (entry.floats <= this.maxFloats) continue;
        this.drop(key);
        this.held.set(key, TOO_LARGE);
        out.set(kind, undefined);
        reading.delete(kind);
      }
      this.evictFor(new Set([...reading.values()].map((r) => r.key)));
      if (rows.length < PAGE_ROWS) break;
    }
    for (const [kind, { entry }] of reading) out.set(kind, entry.vectors);
    return out;
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

  /** Evicts the least recently used until the floats held fit, and the users and kinds known, those being read last. */
  private evictFor(keep: ReadonlySet<string>): void {
    for (const key of this.held.keys()) {
      if (this.floats <= this.maxFloats && this.held.size <= MAX_KEYS) return;
      if (!keep.has(key)) this.drop(key);
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
