/** State deltas: how stores keep states as splices with occasional snapshots (src/memory/state-delta.ts). */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import type { MemoryState } from '../../src/memory/model';
import {
  applySplice,
  diffChunkIds,
  encodeState,
  fromStoredState,
  LruCache,
  materialize,
  MIN_SNAPSHOT_INTERVAL,
  spliceCost,
  toStoredState,
  type Materialized,
  type StoredState,
} from '../../src/memory/state-delta';

test('diffChunkIds finds the one splice between the common prefix and suffix', () => {
  const cases: [string[], string[], ReturnType<typeof diffChunkIds>][] = [
    [['a', 'b'], ['a', 'b', 'c'], { at: 2, remove: 0, insert: ['c'] }],
    [['a', 'b'], ['z', 'a', 'b'], { at: 0, remove: 0, insert: ['z'] }],
    [['a', 'b', 'c'], ['a', 'x', 'y', 'c'], { at: 1, remove: 1, insert: ['x', 'y'] }],
    [['a', 'b', 'c', 'd'], ['a', 'd'], { at: 1, remove: 2, insert: [] }],
    [['a', 'b', 'c'], ['a', 'b', 'c'], { at: 3, remove: 0, insert: [] }],
    [['a', 'b'], ['c', 'd'], { at: 0, remove: 2, insert: ['c', 'd'] }],
    [[], ['a'], { at: 0, remove: 0, insert: ['a'] }],
    [['a'], [], { at: 0, remove: 1, insert: [] }],
    // Repeated ids: prefix and suffix must not overlap.
    [['a', 'a'], ['a', 'a', 'a'], { at: 2, remove: 0, insert: ['a'] }],
  ];
  for (const [prev, next, splice] of cases) assert.deepEqual(diffChunkIds(prev, next), splice, `${prev} → ${next}`);
});

const idList = fc.array(fc.constantFrom('a', 'b', 'c', 'd', 'e', 'f'), { maxLength: 30 });

test('property: applying the diff of two lists turns the first into the second, with nothing common inside the splice’s ends', () => {
  fc.assert(
    fc.property(idList, idList, (prev, next) => {
      const frozen = Object.freeze(prev.slice());
      const splice = diffChunkIds(frozen, next);
      assert.deepEqual(applySplice(frozen, splice), next);
      assert.equal(splice.insert.length - splice.remove, next.length - prev.length);
      if (splice.remove > 0 && splice.insert.length > 0) {
        assert.notEqual(prev[splice.at], next[splice.at], 'prefix trimmed as far as it goes');
        assert.notEqual(prev[splice.at + splice.remove - 1], next[splice.at + splice.insert.length - 1], 'suffix trimmed as far as it goes');
      }
    }),
  );
});

test('applySplice refuses a splice that does not fit the list', () => {
  assert.throws(() => applySplice(['a'], { at: 1, remove: 1, insert: [] }), /does not fit/);
  assert.throws(() => applySplice(['a'], { at: 2, remove: 0, insert: ['b'] }), /does not fit/);
});

/** Encodes a history of id lists the way a store does: each against its parent. */
function encodeHistory(history: readonly string[][]): { stored: Pick<StoredState, 'snapshot' | 'splice'>[]; materialized: Materialized[] } {
  const stored: Pick<StoredState, 'snapshot' | 'splice'>[] = [];
  const materialized: Materialized[] = [];
  let base: Materialized | null = null;
  for (const ids of history) {
    const encoded = encodeState(base, ids);
    stored.push({ snapshot: encoded.snapshot, splice: encoded.splice });
    materialized.push(encoded.materialized);
    base = encoded.materialized;
  }
  return { stored, materialized };
}

/** Random edit histories: adds, deletes, moves and rollbacks to an earlier list. */
const history = fc.array(fc.tuple(fc.integer({ min: 0, max: 4 }), fc.nat(), fc.nat(), fc.integer({ min: 1, max: 5 })), { minLength: 1, maxLength: 200 }).map((edits) => {
  const lists: string[][] = [[]];
  let n = 0;
  for (const [kind, x, y, k] of edits) {
    const prev = lists.at(-1) as string[];
    const ids = prev.slice();
    if (kind <= 1 || ids.length === 0) ids.splice(x % (ids.length + 1), 0, ...Array.from({ length: k }, () => `c${++n}`));
    else if (kind === 2) ids.splice(x % ids.length, k);
    else if (kind === 3) ids.splice(y % ids.length, 0, ...ids.splice(x % ids.length, 1));
    else ids.splice(0, ids.length, ...(lists[x % lists.length] as string[]));
    lists.push(ids);
  }
  return lists;
});

test('property: every state of any history materializes from its nearest snapshot, and that walk stays short', () => {
  fc.assert(
    fc.property(history, (lists) => {
      const { stored, materialized } = encodeHistory(lists);
      assert.ok(stored[0]?.snapshot, "a thread's first state is a snapshot");
      let lastSnapshot = 0;
      stored.forEach((entry, i) => {
        if (entry.snapshot) lastSnapshot = i;
        const result = materialize(stored.slice(lastSnapshot, i + 1));
        assert.deepEqual(result.chunkIds, lists[i]);
        assert.deepEqual(result, materialized[i], 'the bookkeeping a store caches equals what a cold read computes');
        const snapshotLength = (stored[lastSnapshot]?.snapshot as string[]).length;
        assert.ok(i - lastSnapshot <= Math.max(snapshotLength, MIN_SNAPSHOT_INTERVAL), `walk of ${i - lastSnapshot} splices from a snapshot of ${snapshotLength}`);
        // Continuing from a cached ancestor gives the same list.
        if (i > lastSnapshot) assert.deepEqual(materialize(stored.slice(i, i + 1), materialized[i - 1]).chunkIds, lists[i]);
      });
    }),
  );
});

test('property: snapshots cost at most twice the ids written (amortized O(1) per operation)', () => {
  fc.assert(
    fc.property(history, (lists) => {
      const { stored } = encodeHistory(lists);
      // What each operation writes as a splice, whether or not its state became a snapshot.
      const written = lists.slice(1).reduce((sum, ids, i) => sum + spliceCost(diffChunkIds(lists[i] as string[], ids)), 0);
      const snapshotIds = stored.slice(1).reduce((sum, e) => sum + (e.snapshot?.length ?? 0), 0);
      assert.ok(snapshotIds <= 2 * written, `${snapshotIds} snapshot ids for ${written} written`);
    }),
  );
});

test('appending 10,000 ids one at a time stores a few geometric snapshots and one small splice per append', () => {
  let base: Materialized | null = null;
  const ids: string[] = [];
  let snapshots = 0;
  let snapshotIds = 0;
  let spliceIds = 0;
  for (let i = 0; i < 10_000; i++) {
    ids.push(`chunk_${i}`);
    const encoded = encodeState(base, ids);
    if (encoded.snapshot) {
      snapshots++;
      snapshotIds += encoded.snapshot.length;
    } else spliceIds += encoded.splice?.insert.length ?? 0;
    base = encoded.materialized;
  }
  assert.ok(snapshots <= 25, `${snapshots} snapshots`);
  assert.ok(snapshotIds <= 3 * 10_000, `${snapshotIds} ids in snapshots: O(1) per append, not O(size)`);
  assert.ok(spliceIds <= 10_000);
  assert.deepEqual(base?.chunkIds, ids);
});

test('a state round-trips through its stored form; the id list given back is a copy', () => {
  const state: MemoryState = { id: 'state_1', threadId: 'thread_1', parentStateId: 'state_0', seq: 3, chunkIds: ['a', 'b'], tokens: 7, operationId: 'op_1', createdAt: '2031-01-01T00:00:00.000Z' };
  const stored = toStoredState(state, { snapshot: null, splice: { at: 1, remove: 0, insert: ['b'] } });
  assert.equal('chunkIds' in stored, false, 'the full list is not stored with a splice');
  const ids = ['a', 'b'];
  const back = fromStoredState(stored, ids);
  assert.deepEqual(back, state);
  back.chunkIds.push('c');
  assert.deepEqual(ids, ['a', 'b']);
});

test('LruCache evicts the least recently used entry', () => {
  const cache = new LruCache<number>(2);
  cache.set('a', 1);
  cache.set('b', 2);
  assert.equal(cache.get('a'), 1); // a is now the most recent
  cache.set('c', 3);
  assert.equal(cache.get('b'), undefined);
  assert.deepEqual(cache.keys().sort(), ['a', 'c']);
});
