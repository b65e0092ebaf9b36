/**
 * A person's reply is never lost to load: with no worker answering for longer than the old
 * 5 s query deadline (a worker busy replaying evicted runs, or restarting), `Runs.reply`
 * keeps the reply in flight and the run takes it as soon as a worker is back. Real server,
 * real workers, the real `openai` client to the stub model server.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Worker } from '@temporalio/worker';
import type { ExecutionState } from '../../src/planning/execution-state';
import { RunNotWaitingError, Runs } from '../../src/temporal/runs';
import { createWorker } from '../../src/worker';
import { askThenAnswer } from '../helpers/scenarios';
import { StubModelServer } from '../helpers/stub-model-server';
import { startTestEnv, stubProvider, waitFor, type TestEnv } from '../helpers/temporal-env';

const stub = new StubModelServer();
let env: TestEnv;
let runs: Runs;
let second: { worker: Worker; running: Promise<void> } | null = null;

before(async () => {
  await stub.start();
  env = await startTestEnv({ provider: stubProvider(stub.url) });
  runs = new Runs(env.client, env.config);
});
after(async () => {
  if (second?.worker.getState() === 'RUNNING') second.worker.shutdown();
  await second?.running;
  await env?.stop();
  await stub.stop();
});

/**
 * The worker the test before left running, or (that test having failed early) a new one: the only worker of this
 * task queue either way, the one the environment started stopped first.
 */
async function runningWorker(): Promise<{ worker: Worker; running: Promise<void> }> {
  if (second?.worker.getState() === 'RUNNING') return second;
  for (const worker of [env.worker, second?.worker]) if (worker?.getState() === 'RUNNING') worker.shutdown();
  const stopped = (worker: Worker) => worker.getState() === 'STOPPED' || worker.getState() === 'FAILED';
  await waitFor('the workers to stop', async () => stopped(env.worker) && (second === null || stopped(second.worker)));
  await second?.running.catch(() => undefined);
  const worker = await createWorker({ config: env.config, provider: stubProvider(stub.url) });
  second = { worker, running: worker.run() };
  return second;
}

test('a reply sent while no worker answers (7 s, past the old 5 s query deadline) is taken once a worker is back', async () => {
  const [goal, script] = askThenAnswer('book a table when the worker is away', 'For how many people?');
  stub.script(goal, script);
  const { runId } = await runs.start({ userId: 'tester', goal });
  await waitFor('the run to wait for the user', async () => (await runs.get(runId)).status === 'waiting_user');

  env.worker.shutdown(); // the only worker of this task queue goes away
  await waitFor('the worker to stop', async () => env.worker.getState() === 'STOPPED');
  const sentAt = Date.now();
  const reply = runs.reply(runId, 'four');
  let settled = false;
  void reply.finally(() => (settled = true)).catch(() => undefined);
  await new Promise((resolve) => setTimeout(resolve, 7_000));
  assert.equal(settled, false, 'the reply must stay in flight while no worker answers, not fail');

  const worker = await createWorker({ config: env.config, provider: stubProvider(stub.url) });
  second = { worker, running: worker.run() };
  await reply; // taken: 202 for the person
  assert.ok(Date.now() - sentAt >= 7_000);
  const state = (await env.client.workflow.getHandle(runId).result()) as ExecutionState;
  assert.equal(state.status, 'completed');
  assert.deepEqual(
    state.observations.filter((o) => o.kind === 'user_reply').map((o) => o.content),
    ['four'],
    'taken exactly once',
  );
  // And a second reply to the finished run is refused with its status, found without a query.
  await assert.rejects(runs.reply(runId, 'five'), (err: unknown) => err instanceof RunNotWaitingError && err.status === 'completed');
});

test('a reply whose attempt times out while the worker is away is sent again under its update id, and taken once', async () => {
  const [goal, script] = askThenAnswer('book a room when the worker is away', 'Which city?');
  stub.script(goal, script);
  const { worker, running } = await runningWorker();
  const { runId } = await runs.start({ userId: 'tester', goal });
  await waitFor('the run to wait for the user', async () => (await runs.get(runId)).status === 'waiting_user');

  worker.shutdown();
  await running;
  // Attempts of 1 s: the reply outlives several of them (each one cut off by its gRPC deadline).
  const patient = new Runs(env.client, env.config, { deadlineMs: 60_000, attemptMs: 1_000 });
  const reply = patient.reply(runId, 'Lisbon');
  let settled: unknown = false;
  reply.then(
    () => (settled = 'taken'),
    (err: unknown) => (settled = err),
  );
  await new Promise((resolve) => setTimeout(resolve, 3_500));
  assert.equal(settled, false, 'a timed-out attempt must be sent again, not answered 503');

  const third = await createWorker({ config: env.config, provider: stubProvider(stub.url) });
  second = { worker: third, running: third.run() };
  await reply;
  const state = (await env.client.workflow.getHandle(runId).result()) as ExecutionState;
  assert.equal(state.status, 'completed');
  assert.deepEqual(
    state.observations.filter((o) => o.kind === 'user_reply').map((o) => o.content),
    ['Lisbon'],
    'taken exactly once',
  );
});
