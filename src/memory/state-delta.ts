/**
 * How storage keeps states small: a state is stored as one splice of its
 * parent's chunk id list, with a full snapshot now and then, so bytes stored
 * grow with changes, not with states × size. Pure (no I/O, no Node built-ins).
 *
 * Snapshot policy: a thread's first state is a snapshot; after that a state is
 * a snapshot when the ids written as splices since the last snapshot would
 * exceed that snapshot's length (at least MIN_SNAPSHOT_INTERVAL). Each id
 * written pays for at most one id of a later snapshot, so snapshots cost O(1)
 * amortized per operation, and materializing walks at most about one
 * snapshot's length of splices.
 */
import type { MemoryState } from './model';

/** Replace `remove` ids at index `at` with `insert`. */
export interface Splice {
  at: number;
  remove: number;
  insert: string[];
}

/** A state as stored: exactly one of `snapshot` (full id list) and `splice` (against the parent) is set. */
export interface StoredState extends Omit<MemoryState, 'chunkIds'> {
  snapshot: string[] | null;
  splice: Splice | null;
}

/** A materialized id list plus what the snapshot policy needs to encode its child. */
export interface Materialized {
  chunkIds: readonly string[];
  /** Length of the snapshot this state's chain starts from. */
  snapshotLength: number;
  /** Cost of the splices applied since that snapshot (see `spliceCost`). */
  writtenSinceSnapshot: number;
}

/** Small threads still get a few splices between snapshots instead of one every other state. */
export const MIN_SNAPSHOT_INTERVAL = 16;

/** The one splice turning `prev` into `next`, found by trimming their common prefix and suffix. */
export function diffChunkIds(prev: readonly string[], next: readonly string[]): Splice {
  let start = 0;
  const shorter = Math.min(prev.length, next.length);
  while (start < shorter && prev[start] === next[start]) start++;
  let endPrev = prev.length;
  let endNext = next.length;
  while (endPrev > start && endNext > start && prev[endPrev - 1] === next[endNext - 1]) {
    endPrev--;
    endNext--;
  }
  return { at: start, remove: endPrev - start, insert: next.slice(start, endNext) };
}

/** A new list with the splice applied; `ids` is left untouched. */
export function applySplice(ids: readonly string[], splice: Splice): string[] {
  const out = ids.slice();
  spliceInPlace(out, splice);
  return out;
}

function spliceInPlace(ids: string[], splice: Splice): void {
  if (splice.at < 0 || splice.remove < 0 || splice.at + splice.remove > ids.length) {
    throw new Error(`splice {at: ${splice.at}, remove: ${splice.remove}} does not fit a list of ${ids.length} ids`);
  }
  ids.splice(splice.at, splice.remove, ...splice.insert);
}

/** Every splice costs at least 1, so a run of pure deletions still reaches a snapshot. */
export function spliceCost(splice: Splice): number {
  return 1 + splice.insert.length;
}

/**
 * Encodes `next` against its parent's materialized list (`base`; null for a
 * thread's first state or a parent in another thread) per the snapshot policy.
 */
export function encodeState(base: Materialized | null, next: readonly string[]): { snapshot: string[] | null; splice: Splice | null; materialized: Materialized } {
  if (base) {
    const splice = diffChunkIds(base.chunkIds, next);
    const written = base.writtenSinceSnapshot + spliceCost(splice);
    // A splice as large as the state itself is no saving either.
    if (written <= Math.max(base.snapshotLength, MIN_SNAPSHOT_INTERVAL) && splice.insert.length < next.length) {
      return { snapshot: null, splice, materialized: { chunkIds: next.slice(), snapshotLength: base.snapshotLength, writtenSinceSnapshot: written } };
    }
  }
  return { snapshot: next.slice(), splice: null, materialized: { chunkIds: next.slice(), snapshotLength: next.length, writtenSinceSnapshot: 0 } };
}

/**
 * Materializes the last state of `chain` (oldest first). The chain starts at a
 * snapshot, or continues from `base`, the already materialized parent of its first entry.
 */
export function materialize(chain: readonly Pick<StoredState, 'snapshot' | 'splice'>[], base?: Materialized): Materialized {
  let ids: string[] | undefined = base ? base.chunkIds.slice() : undefined;
  let snapshotLength = base?.snapshotLength ?? 0;
  let written = base?.writtenSinceSnapshot ?? 0;
  for (const entry of chain) {
    if (entry.snapshot) {
      ids = entry.snapshot.slice();
      snapshotLength = ids.length;
      written = 0;
    } else if (entry.splice) {
      if (!ids) throw new Error('a state chain must start at a snapshot or from a materialized base');
      spliceInPlace(ids, entry.splice);
      written += spliceCost(entry.splice);
    } else {
      throw new Error('a stored state has neither a snapshot nor a splice');
    }
  }
  if (!ids) throw new Error('cannot materialize an empty state chain');
  return { chunkIds: ids, snapshotLength, writtenSinceSnapshot: written };
}

export function toStoredState(state: MemoryState, delta: { snapshot: string[] | null; splice: Splice | null }): StoredState {
  const { chunkIds: _ids, ...rest } = state;
  void _ids;
  return { ...rest, snapshot: delta.snapshot, splice: delta.splice };
}

export function fromStoredState(stored: StoredState, chunkIds: readonly string[]): MemoryState {
  const { snapshot: _s, splice: _p, ...rest } = stored;
  void _s;
  void _p;
  return { ...rest, chunkIds: chunkIds.slice() };
}

/**
 * A bounded map, least recently used evicted first. Backends cache materialized
 * states in it: states are immutable, so entries never go stale (only heads move).
 */
export class LruCache<V> {
  private readonly entries = new Map<string, V>();
  constructor(private readonly capacity: number) {}

  get(key: string): V | undefined {
    const hit = this.entries.get(key);
    if (hit !== undefined) {
      this.entries.delete(key);
      this.entries.set(key, hit);
    }
    return hit;
  }

  set(key: string, value: V): void {
    this.entries.delete(key);
    this.entries.set(key, value);
    while (this.entries.size > this.capacity) this.entries.delete(this.entries.keys().next().value as string);
  }

  keys(): string[] {
    return [...this.entries.keys()];
  }
}

export class MaterializedCache extends LruCache<Materialized> {}
