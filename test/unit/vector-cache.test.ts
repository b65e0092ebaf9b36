import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { MemoryKind } from '../../src/longterm/contract';
import { floatsOf, VectorCache, type VectorQueryable } from '../../src/store/longterm/vector-cache';

/** A real[] as PostgreSQL's array_send writes it. */
function arraySend(xs: number[]): Buffer {
  const out = Buffer.alloc(20 + xs.length * 8);
  out.writeInt32BE(1, 0);
  out.writeInt32BE(0, 4);
  out.writeInt32BE(700, 8); // float4
  out.writeInt32BE(xs.length, 12);
  out.writeInt32BE(1, 16);
  xs.forEach((x, i) => {
    out.writeInt32BE(4, 20 + i * 8);
    out.writeFloatBE(x, 24 + i * 8);
  });
  return out;
}

/** Rows of (user, kind, id, n, vector), answering the cache's query as PostgreSQL would: each asked kind's rows numbered after its own, in number order, a page at most. */
function table(rows: { user: string; kind: string; id: string; n: number; vector: number[] }[]): VectorQueryable & { reads: number } {
  const db = {
    reads: 0,
    async query<R extends object>(_text: string, [user, kinds, sinces]: unknown[]): Promise<{ rows: R[] }> {
      db.reads++;
      const since = new Map((kinds as string[]).map((k, i) => [k, Number((sinces as number[])[i])]));
      const found = rows.filter((r) => r.user === user && since.has(r.kind) && r.n > (since.get(r.kind) ?? Infinity)).sort((x, y) => x.n - y.n);
      return { rows: found.slice(0, 2000).map((r) => ({ kind: r.kind, id: r.id, n: String(r.n), bin: arraySend(r.vector) }) as unknown as R) };
    },
  };
  return db;
}

/** One kind's vectors through the cache. */
const readOne = async (cache: VectorCache, db: VectorQueryable, user: string, kind: MemoryKind) => (await cache.read(db, user, [kind])).get(kind);

test('floatsOf reads array_send’s format, an empty array too', () => {
  assert.deepEqual([...floatsOf(arraySend([0.5, -2, 1]))], [0.5, -2, 1]);
  const empty = Buffer.alloc(12);
  assert.equal(floatsOf(empty).length, 0);
});

test('the cache reads only vectors numbered after what it holds, keeps the newer of a record, and evicts the least recently used', async () => {
  const rows = [
    { user: 'u', kind: 'fact', id: 'a', n: 1, vector: [1, 0] },
    { user: 'u', kind: 'fact', id: 'b', n: 2, vector: [0, 1] },
    { user: 'v', kind: 'fact', id: 'c', n: 3, vector: [1, 1] },
  ];
  const db = table(rows);
  const cache = new VectorCache(4);
  const ids = async (user: string) => [...((await readOne(cache, db, user, 'fact')) ?? new Map()).entries()].map(([id, v]) => `${id}:${[...v].join(',')}`);
  assert.deepEqual(await ids('u'), ['a:1,0', 'b:0,1']);
  rows.push({ user: 'u', kind: 'fact', id: 'a', n: 4, vector: [0.5, 0.5] });
  assert.deepEqual(await ids('u'), ['a:0.5,0.5', 'b:0,1'], 'the replaced vector');
  assert.deepEqual(await ids('v'), ['c:1,1'], 'u is evicted: 6 floats over a bound of 4');
  const before = db.reads;
  assert.deepEqual(await ids('u'), ['a:0.5,0.5', 'b:0,1'], 'read again from the start');
  assert.equal(db.reads, before + 1);
});

test('a user and kind with more floats than the bound is not kept, and is answered undefined (SQL then)', async () => {
  const db = table([
    { user: 'u', kind: 'fact', id: 'a', n: 1, vector: [1, 0, 0] },
    { user: 'u', kind: 'fact', id: 'b', n: 2, vector: [0, 1, 0] },
  ]);
  const cache = new VectorCache(5);
  assert.equal(await readOne(cache, db, 'u', 'fact'), undefined);
  const reads = db.reads;
  assert.equal(await readOne(cache, db, 'u', 'fact'), undefined);
  assert.equal(db.reads, reads, 'known to be too large: not read again');
});

test('a user evicted while its read is under way no longer counts against the bound', async () => {
  let release: () => void = () => undefined;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const rows = [
    { user: 'u', kind: 'fact', id: 'a', n: 1, vector: [1, 0] },
    { user: 'v', kind: 'fact', id: 'b', n: 2, vector: [1, 0, 0] },
    { user: 'w', kind: 'fact', id: 'c', n: 3, vector: [0, 1, 0] },
    { user: 'x', kind: 'fact', id: 'd', n: 4, vector: [1] },
  ];
  const plain = table(rows);
  const db: VectorQueryable = {
    async query<R extends object>(text: string, values: unknown[]) {
      if (values[0] === 'u') await gate;
      return plain.query<R>(text, values);
    },
  };
  const cache = new VectorCache(4);
  const u = readOne(cache, db, 'u', 'fact');
  await readOne(cache, db, 'v', 'fact');
  const w = await readOne(cache, db, 'w', 'fact'); // 6 floats: u (none yet) and v are evicted
  release();
  assert.equal((await u)?.size, 1, 'the read under way still answers');
  await readOne(cache, db, 'x', 'fact'); // 3 + 1 floats held: w stays
  assert.equal(await readOne(cache, db, 'w', 'fact'), w, 'w is still held');
});

test('every kind asked is read in one statement a page, each from its own highest number, across pages', async () => {
  const kinds: MemoryKind[] = ['fact', 'message', 'episode'];
  const rows = Array.from({ length: 4_500 }, (_, i) => ({ user: 'u', kind: kinds[i % 3] as string, id: `r${i}`, n: i + 1, vector: [i] }));
  const db = table(rows);
  const cache = new VectorCache(1_000_000);
  const sizes = async () => [...(await cache.read(db, 'u', kinds))].map(([kind, held]) => `${kind}:${held?.size}`);
  assert.deepEqual(await sizes(), ['fact:1500', 'message:1500', 'episode:1500']);
  assert.equal(db.reads, 3, 'pages of 2,000 rows of all three kinds, not three reads a kind');
  // Only messages are new: each kind reads on from its own number, in one statement.
  rows.push({ user: 'u', kind: 'message', id: 'r1', n: 4_501, vector: [-1] });
  assert.deepEqual(await sizes(), ['fact:1500', 'message:1500', 'episode:1500']);
  assert.equal(db.reads, 4);
  assert.deepEqual([...((await cache.read(db, 'u', ['message'])).get('message')?.get('r1') ?? [])], [-1], 'the replaced vector');
});
