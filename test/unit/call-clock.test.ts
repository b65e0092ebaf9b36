import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { test } from 'node:test';
import { CallClock, ownCallMs } from '../../src/activities/call-clock';
import { runsLocally } from '../../src/engine/local-calls';

/** Keeps the event loop running JavaScript for `ms`. */
function spin(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until);
}

test('a call alone counts its whole wall time, waiting and running alike', () => {
  assert.equal(ownCallMs(300, 0, 1), 300);
  assert.equal(ownCallMs(300, 300, 1), 300);
});

test("a busy worker's running time is shared out among the calls in flight", () => {
  // Fifty calls, the loop busy the whole 600 ms: each took a fiftieth of it.
  assert.equal(ownCallMs(600, 600, 50), 12);
  // Time the loop waited stays the call's own (a model's reply, a store).
  assert.equal(ownCallMs(600, 200, 50), 404);
  // Nonsense in, no nonsense out.
  assert.equal(ownCallMs(100, 500, 0.5), 100);
  assert.equal(ownCallMs(100, -5, 4), 100);
});

test('a quick call on a worker kept busy by forty others stays local', async () => {
  const clock = new CallClock();
  const others = Array.from({ length: 40 }, () => clock.start());
  const stop = clock.start();
  // The others' work: the loop runs JavaScript for 400 ms while this call waits 5 ms for its answer.
  await sleep(5);
  spin(400);
  const ms = stop();
  for (const other of others) other();
  assert.ok(ms < 100, `own time ${ms} ms`);
  assert.ok(runsLocally(ms));
});

test('a call that waits long counts as slow however many calls are in flight', async () => {
  const clock = new CallClock();
  const others = Array.from({ length: 40 }, () => clock.start());
  const stop = clock.start();
  await sleep(400);
  const ms = stop();
  for (const other of others) other();
  // Past the local-call bound, whatever this machine's load takes off the 400 ms (a bound of 350 ms flaked).
  assert.equal(runsLocally(ms), false, `own time ${ms} ms`);
});

test('a call stopped twice leaves the count of calls in flight right', async () => {
  const clock = new CallClock();
  const first = clock.start();
  first();
  first();
  const stop = clock.start();
  spin(50);
  assert.ok(stop() >= 45, 'alone again: its running time is its own');
});
