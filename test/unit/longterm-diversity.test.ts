/** Near-duplicate turns in a search's top k (src/longterm/retrieval.ts): moved below the rest. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { SearchHit } from '../../src/longterm/contract';
import { jaccard, NEAR_DUPLICATE, withoutNearDuplicates } from '../../src/longterm/retrieval';

const message = (id: string, text: string, score: number): SearchHit => ({ kind: 'message', id, text, score, at: '2024-01-01T00:00:00.000Z', source: { sessionId: 's', messageIds: [id] } });
const fact = (id: string, text: string, score: number): SearchHit => ({ kind: 'fact', id, text, score, at: '2024-01-01T00:00:00.000Z', source: { messageIds: [] } });

test('jaccard: shared terms over the terms of either; two empty sets share nothing', () => {
  assert.equal(jaccard(new Set(['a', 'b']), new Set(['b', 'c'])), 1 / 3);
  assert.equal(jaccard(new Set(['a']), new Set(['a'])), 1);
  assert.equal(jaccard(new Set(), new Set()), 0);
  assert.equal(jaccard(new Set(['a']), new Set()), 0);
});

test('withoutNearDuplicates: a line said again comes after the turns that differ, scores still falling', () => {
  const hits = [
    message('m1', 'Maya: The kids keep asking for a pet, I am not sure we are ready.', 0.9),
    message('m2', 'Maya: Honestly, the kids keep asking for a pet, I am not sure we are ready. Anyway.', 0.8),
    message('m3', 'Jordan: Ugh, the kids keep asking for a pet, I am not sure we are ready.', 0.7),
    message('m4', 'Maya: We adopted a kitten this week! Meet Pepper.', 0.6),
    message('m5', 'Maya: Our rabbit Clover hops around the garden.', 0.5),
  ];
  const out = withoutNearDuplicates(hits, 4);
  assert.deepEqual(
    out.map((h) => h.id),
    ['m1', 'm4', 'm5', 'm2'],
  );
  assert.deepEqual(
    out.map((h) => h.score),
    [0.9, 0.6, 0.5, 0.5],
  );
  // The input is not changed; k bounds the answer; with few hits the near-duplicates fill it.
  assert.equal(hits[1]?.score, 0.8);
  assert.deepEqual(
    withoutNearDuplicates(hits.slice(0, 3), 10).map((h) => h.id),
    ['m1', 'm2', 'm3'],
  );
  assert.deepEqual(withoutNearDuplicates([], 5), []);
});

test('withoutNearDuplicates: different turns, and other kinds, keep their order', () => {
  const hits = [
    fact('f1', 'Maya lives in Lisbon', 0.9),
    fact('f2', 'Maya lives in Lisbon (from 2020-01-01 until 2021-01-01)', 0.8),
    message('m1', 'Maya: I took my first pottery class!', 0.7),
    message('m2', 'Jordan: What did you make in the class?', 0.6),
    message('m3', 'Maya: A lopsided bowl with a blue glaze.', 0.5),
  ];
  assert.deepEqual(
    withoutNearDuplicates(hits, 5).map((h) => h.id),
    ['f1', 'f2', 'm1', 'm2', 'm3'],
  );
  assert.ok(NEAR_DUPLICATE > 0 && NEAR_DUPLICATE < 1);
  // A stricter threshold keeps more: the same line with one word more is kept at 0.9.
  const two = [message('a', 'Maya: work has been so busy lately', 1), message('b', 'Maya: work has been so busy lately, honestly', 0.5)];
  assert.deepEqual(
    withoutNearDuplicates(two, 1, 0.9).map((h) => h.id),
    ['a'],
  );
  assert.deepEqual(
    withoutNearDuplicates(two, 2, 0.9).map((h) => h.id),
    ['a', 'b'],
  );
});
