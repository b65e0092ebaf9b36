/**
 * WORKFLOW_STACK_TRACES, on the real server with the real `openai` client to the stub model: on (the
 * default), the Web UI's stack trace query answers where a waiting run is; off, the workflow threads
 * capture no stack per promise and the query says so, while runs park, take their reply and finish
 * as before.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { ExecutionState } from '../../src/planning/execution-state';
import { Runs } from '../../src/temporal/runs';
import { askThenAnswer } from '../helpers/scenarios';
import { StubModelServer } from '../helpers/stub-model-server';
import { startTestEnv, stubProvider, testConfig, waitFor, type TestEnv } from '../helpers/temporal-env';

const stub = new StubModelServer();
const envs: Partial<Record<'on' | 'off', TestEnv>> = {};

before(async () => {
  await stub.start();
  // One after the other: each worker's workflow threads read the setting when Worker.create starts them.
  for (const setting of ['on', 'off'] as const) envs[setting] = await startTestEnv({ provider: stubProvider(stub.url), config: testConfig({ WORKFLOW_STACK_TRACES: setting }) });
});
after(async () => {
  for (const env of Object.values(envs)) await env?.stop();
  await stub.stop();
});

/** A run parked on its question, on the worker of `setting`; returns the stack trace query's answer or its error. */
async function parkedRun(setting: 'on' | 'off') {
  const env = envs[setting]!;
  const runs = new Runs(env.client, env.config);
  const [goal, script] = askThenAnswer(`stack traces ${setting}`, 'Which colour?');
  stub.script(goal, script);
  const { runId } = await runs.start({ userId: `stacks-${setting}`, goal });
  await waitFor('the question', async () => (await runs.get(runId)).status === 'waiting_user');
  const handle = env.client.workflow.getHandle(runId);
  const trace = await handle.query<string>('__stack_trace').then(
    (stack) => ({ stack }),
    (err: unknown) => ({ error: err instanceof Error ? err.message : String(err) }),
  );
  await runs.reply(runId, 'Blue');
  const state = (await handle.result()) as ExecutionState;
  assert.equal(state.status, 'completed');
  assert.equal(state.finalAnswer, 'Thanks, noted.');
  return trace;
}

test('on: the stack trace query shows where a waiting run is', async () => {
  const trace = await parkedRun('on');
  assert.ok('stack' in trace && trace.stack.length > 0, JSON.stringify(trace));
});

test('off: a run parks and finishes as before; the stack trace query answers that stack traces are off', async () => {
  const trace = await parkedRun('off');
  assert.ok('error' in trace, `expected the query to fail, got ${JSON.stringify(trace)}`);
  assert.match(trace.error, /stack traces are not enabled/);
});
