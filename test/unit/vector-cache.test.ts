import assert from 'node:assert/strict';
import { test } from 'node:test';
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

/** Rows of (user, kind, id, n, vector), answering the cache's query as PostgreSQL would. */
function table(rows: { user: string; kind: string; id: string; n: number; vector: number[] }[]): VectorQueryable & { reads: number } {
  const db = {
    reads: 0,
    async query<R extends object>(_text: string, [user, kind, since]: unknown[]): Promise<{ rows: R[] }> {
      db.reads++;
      const found = rows.filter((r) => r.user === user && r.kind === kind && r.n > Number(since)).sort((x, y) => x.n - y.n);
      return { rows: found.slice(0, 2000).map((r) => ({ id: r.id, n: String(r.n), bin: arraySend(r.vector) }) as unknown as R) };
    },
  };
  return db;
}

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
  const ids = async (user: string) => [...((await cache.read(db, user, 'fact')) ?? new Map()).entries()].map(([id, v]) => `${id}:${[...v].join(',')}`);
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
  assert.equal(await cache.read(db, 'u', 'fact'), undefined);
  const reads = db.reads;
  assert.equal(await cache.read(db, 'u', 'fact'), undefined);
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
  const u = cache.read(db, 'u', 'fact');
  await cache.read(db, 'v', 'fact');
  const w = await cache.read(db, 'w', 'fact'); // 6 floats: u (none yet) and v are evicted
  release();
  assert.equal((await u)?.size, 1, 'the read under way still answers');
  await cache.read(db, 'x', 'fact'); // 3 + 1 floats held: w stays
  assert.equal(await cache.read(db, 'w', 'fact'), w, 'w is still held');
});
