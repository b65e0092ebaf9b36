/**
 * trigramSimilarity (src/longterm/text.ts) against PostgreSQL's own pg_trgm `similarity()`: the
 * embedded stores and the PostgreSQL store must measure name closeness identically.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import { Client } from 'pg';
import { trigramSimilarity, trigrams } from '../../src/longterm/text';
import { createDatabase, dropDatabases } from '../helpers/scratch-postgres';

let db: Client;
before(async () => {
  db = new Client({ connectionString: await createDatabase() });
  await db.connect();
  await db.query('CREATE EXTENSION IF NOT EXISTS pg_trgm');
});
after(async () => {
  await db.end();
  await dropDatabases();
});

/** PostgreSQL's similarity() of each pair, as the numbers node-postgres gives for a `real`. */
async function reference(pairs: readonly (readonly [string, string])[]): Promise<number[]> {
  const { rows } = await db.query<{ s: number }>('SELECT similarity(a, b)::float8 AS s FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS t(a, b, i) ORDER BY i', [
    pairs.map((p) => p[0]),
    pairs.map((p) => p[1]),
  ]);
  return rows.map((r) => Number(r.s));
}

test('trigrams: words padded with two spaces before and one after, lowercased, a set', () => {
  assert.deepEqual([...trigrams('Nora')].sort(), ['  n', ' no', 'nor', 'ora', 'ra '].sort());
  assert.deepEqual([...trigrams('a-A')], ['  a', ' a ']);
  assert.equal(trigrams(' ,; ').size, 0);
});

test('trigramSimilarity equals PostgreSQL similarity() on names, variants and edge cases', async () => {
  const pairs = [
    ['Norah', 'nora'],
    ['jon smith', 'John Smith'],
    ['Lisboa', 'Lisbon'],
    ["Ann-Marie O'Neil", 'ann marie oneil'],
    ['abc1 x', 'ABC1'],
    ['a', 'a'],
    ['', 'x'],
    ['', ''],
    ['Dario', 'Mario'],
    ['Ana', 'Anna'],
    ['Robert', 'Bob'],
    ['the the the', 'the'],
    ['Acme Corp.', 'acme corporation'],
  ] as const;
  assert.deepEqual(
    pairs.map(([a, b]) => trigramSimilarity(a, b)),
    await reference(pairs),
  );
});

test('trigramSimilarity equals PostgreSQL similarity() on generated strings (property)', async () => {
  const text = fc.string({ unit: fc.constantFrom('a', 'b', 'n', 'o', 'r', 'A', 'N', '1', ' ', '-', "'", '.'), maxLength: 14 });
  const pairs = fc.sample(fc.tuple(text, text), { numRuns: 300, seed: 7 });
  assert.deepEqual(
    pairs.map(([a, b]) => trigramSimilarity(a, b)),
    await reference(pairs),
  );
});
