/** SharedQueries (src/temporal/shared-queries.ts): callers at once share one query per workflow and history length. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SharedQueries } from '../../src/temporal/shared-queries';

/** A query the test answers (or fails) when it chooses, counting how often it was asked. */
function heldQuery<T>(): { ask: () => Promise<T>; asked: () => number; answer: (value: T) => void; fail: (err: Error) => void } {
  let count = 0;
  let settle: { answer: (value: T) => void; fail: (err: Error) => void } | undefined;
  return {
    ask: () => {
      count += 1;
      return new Promise<T>((resolve, reject) => (settle = { answer: resolve, fail: reject }));
    },
    asked: () => count,
    answer: (value) => settle?.answer(value),
    fail: (err) => settle?.fail(err),
  };
}

test('callers at once share one query and its answer; a caller after it asks again', async () => {
  const shared = new SharedQueries();
  const q = heldQuery<{ v: number }>();
  const five = Array.from({ length: 5 }, () => shared.ask('run-a', 7, q.ask));
  assert.equal(q.asked(), 1);
  q.answer({ v: 1 });
  const answers = await Promise.all(five);
  assert.ok(
    answers.every((a) => a === answers[0]),
    'the same answer object',
  );
  const later = shared.ask('run-a', 7, q.ask);
  assert.equal(q.asked(), 2, 'an answered query is not kept');
  q.answer({ v: 2 });
  assert.deepEqual(await later, { v: 2 });
});

test('another workflow or another history length is another query', async () => {
  const shared = new SharedQueries();
  const q = heldQuery<string>();
  const a = shared.ask('run-a', 7, q.ask);
  const b = shared.ask('run-b', 7, q.ask);
  const c = shared.ask('run-a', 8, q.ask);
  assert.equal(q.asked(), 3);
  q.answer('last');
  assert.equal(await c, 'last');
  void a.catch(() => undefined);
  void b.catch(() => undefined);
});

test('a failed query fails every caller that shared it, and the next caller asks again', async () => {
  const shared = new SharedQueries();
  const q = heldQuery<string>();
  const both = [shared.ask('run-a', 3, q.ask), shared.ask('run-a', 3, q.ask)];
  q.fail(new Error('deadline exceeded'));
  for (const p of both) await assert.rejects(p, /deadline exceeded/);
  const again = shared.ask('run-a', 3, q.ask);
  assert.equal(q.asked(), 2);
  q.answer('ok');
  assert.equal(await again, 'ok');
});
