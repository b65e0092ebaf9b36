/**
 * A worker whose native core lost a run's workflow task (src/telemetry/core-faults.ts) is replaced
 * (src/temporal/recycling-worker.ts), on the real server with Threadline's worker: when the core's
 * sign is heard, a new worker polls and the old one stops, and runs waiting for a person go on there.
 * And what makes the loss rarer: reads of one run at once share one query (Runs.get).
 * (The core's bug itself needs a full cache, queries and tasks racing: bench/streaming.ts's bursts
 * show it; docs/operations.md has the figures.)
 */
import assert from 'node:assert/strict';
import { Client } from '@temporalio/client';
import { after, before, test } from 'node:test';
import type { ExecutionState } from '../../src/planning/execution-state';
import { LOST_TASK_SIGNS, noteCoreLog } from '../../src/telemetry/core-faults';
import { Runs } from '../../src/temporal/runs';
import { createLogger } from '../../src/telemetry/logger';
import { askThenAnswer } from '../helpers/scenarios';
import { StubModelServer } from '../helpers/stub-model-server';
import { startTestEnv, stubProvider, waitFor, type TestEnv } from '../helpers/temporal-env';

const stub = new StubModelServer();
let env: TestEnv;
let runs: Runs;
/** What the worker logged, as pino's JSON lines. */
const logged: { msg: string }[] = [];
const warned = (start: string) => logged.filter((line) => line.msg.startsWith(start)).length;

before(async () => {
  await stub.start();
  const logger = createLogger('worker', { LOG_LEVEL: 'warn' }, { write: (line: string) => void logged.push(JSON.parse(line) as { msg: string }) });
  env = await startTestEnv({ provider: stubProvider(stub.url), logger });
  runs = new Runs(env.client, env.config);
});
after(async () => {
  await env?.stop();
  await stub.stop();
});

async function waitingRun(goal: string): Promise<string> {
  stub.script(...askThenAnswer(goal, `a question for ${goal}?`));
  const { runId } = await runs.start({ userId: 'tester', goal });
  await waitFor('the run to wait for the user', async () => (await runs.get(runId)).status === 'waiting_user');
  return runId;
}

test('a lost task replaces the worker: the old one stops, waiting runs take their replies on the new one', async () => {
  const before = await Promise.all(['recycle one', 'recycle two'].map(waitingRun));
  noteCoreLog(`${LOST_TASK_SIGNS[0]} (heard in a test)`);
  // The worker the test holds reports its replacement's state once that one runs.
  await waitFor('the worker to be replaced', async () => warned('the worker lost a run') === 1 && env.worker.getState() === 'RUNNING');
  // A run started now and the runs from before are all served by the replacement.
  const after = await waitingRun('recycle three');
  for (const runId of [...before, after]) {
    await runs.reply(runId, 'yes');
    const state = (await env.client.workflow.getHandle(runId).result()) as ExecutionState;
    assert.equal(state.status, 'completed', runId);
    assert.equal(state.finalAnswer, 'Thanks, noted.');
  }
  // A line of the core that is no sign changes nothing.
  noteCoreLog('Tried to complete untracked local activity');
  await new Promise((resolve) => setTimeout(resolve, 300));
  assert.equal(warned('the worker lost a run'), 1);
});

test('reads of a run at once share one query, and a read after them asks again', async () => {
  let queries = 0;
  let described = 0;
  let allDescribed!: () => void;
  const allReading = new Promise<void>((resolve) => (allDescribed = resolve));
  const counting = new Client({
    connection: env.client.connection,
    namespace: env.config.TEMPORAL_NAMESPACE,
    interceptors: {
      workflow: [
        {
          describe: async (input, next) => {
            const description = await next(input);
            if (++described === 5) allDescribed();
            return description;
          },
          // A read describes the run, then queries it. On a loaded machine the five describes can come back so far
          // apart that a query ends before the last read asks: "at once" is made sure of by holding the queries back
          // until every read has its description (and a turn of the event loop more, to reach its query).
          query: async (input, next) => {
            queries++;
            await allReading;
            await new Promise((resolve) => setImmediate(resolve));
            return next(input);
          },
        },
      ],
    },
  });
  const reads = new Runs(counting, env.config);
  const runId = await waitingRun('shared reads');
  const states = await Promise.all(Array.from({ length: 5 }, () => reads.get(runId)));
  assert.equal(described, 5);
  assert.equal(queries, 1, 'five reads at once, one query');
  assert.ok(states.every((state) => state.status === 'waiting_user' && state === states[0]));
  await reads.get(runId);
  assert.equal(queries, 2, 'a read after the others ended asks again');
  await reads.reply(runId, 'yes');
  await env.client.workflow.getHandle(runId).result();
});
