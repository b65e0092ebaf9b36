/**
 * A run's answering call closes the run when it runs locally (CloseOnAnswer, src/engine/core.ts): no
 * separate closing call, the same memory and ending as before — and a cancellation that comes while that
 * call runs still ends the run cancelled, closed once. Real server, real worker, the stub model over HTTP.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { MockActivityEnvironment } from '@temporalio/testing';
import { closeRun, createPlanActivities, ensureRunThread } from '../../src/activities/plan-activities';
import { MemoryKeyValueStore } from '../../src/store/kv';
import { BUILTIN_TOOLS, ToolRegistry } from '../../src/tools/registry';
import type { Chunk } from '../../src/memory/model';
import type { StepSpec } from '../../src/planning/step-spec';
import { runThreadId } from '../../src/memory/run-chunks';
import { applyPlan, cancel, complete, initialState, startStep, type ExecutionState } from '../../src/planning/execution-state';
import type { MemoryService } from '../../src/store/memory-service';
import { openMemory } from '../../src/store/open-memory';
import { PLAN_WORKFLOW_TYPE } from '../../src/workflows/definitions';
import { answer, cont, respondStep } from '../helpers/scenarios';
import { StubModelServer, type StubScript } from '../helpers/stub-model-server';
import { activitiesOf, callsOf, startTestEnv, stubProvider, testConfig, waitFor, type CallInHistory, type TestEnv } from '../helpers/temporal-env';
import { isTimed, LOCAL_CALL_MAX_MS } from '../../src/engine/local-calls';
import type { PlanExecutionInput } from '../../src/engine/contract';

const stub = new StubModelServer();
let env: TestEnv;
let memory: MemoryService;
let closeMemory: () => Promise<void>;

before(async () => {
  await stub.start();
  env = await startTestEnv({ provider: stubProvider(stub.url), config: testConfig({ MAX_STEPS: '4' }) });
  ({ memory, close: closeMemory } = await openMemory(env.config));
});
after(async () => {
  await closeMemory?.();
  await env?.stop();
  await stub.stop();
});

/** Starts `goal` as a run whose starter's last call was quick (5 ms), so its first call is local, as a session's later runs are. */
async function startQuick(goal: string, script: StubScript) {
  stub.script(goal, script);
  const input: PlanExecutionInput = { userId: 'closer', goal, limits: { maxSteps: 4, maxDepth: 0 }, lastCallMs: 5 };
  return env.client.workflow.start(PLAN_WORKFLOW_TYPE, { taskQueue: env.config.TASK_QUEUE, workflowId: `close-${randomUUID().slice(0, 8)}`, args: [input] });
}

/** Whether a call came back within LOCAL_CALL_MAX_MS, as its worker measured it: the call after it then runs locally. */
const quick = (call: CallInHistory | undefined): boolean => isTimed(call?.result) && call.result.ms <= LOCAL_CALL_MAX_MS;
const tagged = (calls: CallInHistory[]) => calls.map((c) => (c.local ? `local:${c.activity}` : c.activity));

const chunksOf = async (runId: string): Promise<Chunk[]> => (await memory.view(runThreadId(runId))).chunks;
const outputs = (chunks: Chunk[]) => chunks.filter((c) => c.type === 'output').map((c) => c.content);

test('a quick plan that begins with its answer is planned, answered and closed in one local call', async () => {
  const handle = await startQuick('one call', { execution_plan: [{ steps: [respondStep] }], final_answer: [answer('all in one')] });
  const state = (await handle.result()) as ExecutionState;
  assert.equal(state.status, 'completed');
  assert.equal(state.finalAnswer, 'all in one');
  assert.deepEqual(await activitiesOf(env.client, handle.workflowId, undefined, { tagLocal: true }), ['local:planRun']);
  const chunks = await chunksOf(handle.workflowId);
  assert.deepEqual(outputs(chunks), [{ kind: 'text', text: 'all in one' }], 'one ending: the answer');
  assert.equal(chunks.at(-1)?.type, 'output');
  const audit = await memory.audit(runThreadId(handle.workflowId), {});
  assert.ok(
    audit.some((r) => r.reason === 'run ended: answered'),
    'the thread records how the run ended',
  );
});

test('a respond step after another step answers and closes the run in the same local call', async () => {
  const handle = await startQuick('think then answer', {
    execution_plan: [{ steps: [{ type: 'reason', description: 'Think it over' }, respondStep] }],
    reasoning: [{ thought: 'six sevens' }],
    replan_decision: [cont],
    final_answer: [answer('42')],
  });
  const state = (await handle.result()) as ExecutionState;
  assert.equal(state.status, 'completed');
  assert.deepEqual(
    state.steps.map((s) => s.status),
    ['completed', 'completed'],
  );
  // Each call runs locally when the one before it was quick (the first: its starter's was). All quick, the respond
  // call runs locally and closes the run; a loaded machine can make a call slower, the next is then a regular
  // activity — and a regular respond call does not close the run: a closeRun call follows it.
  const calls = await callsOf(env.client, handle.workflowId);
  const placed = (i: number, activity: string) => `${quick(calls[i]) ? 'local:' : ''}${activity}`;
  const expected = ['local:planRun', placed(0, 'executeStep'), placed(1, 'respond'), ...(quick(calls[1]) ? [] : [placed(2, 'closeRun')])];
  assert.deepEqual(tagged(calls), expected, `measured: ${JSON.stringify(calls.map((c) => (isTimed(c.result) ? c.result.ms : null)))} ms`);
  assert.deepEqual(outputs(await chunksOf(handle.workflowId)), [{ kind: 'text', text: '42' }]);
});

/** Starts a quick run whose answer the stub holds back until `release`. */
async function heldAnswer(goal: string) {
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  const handle = await startQuick(goal, {
    execution_plan: [{ steps: [respondStep] }],
    final_answer: [
      async () => {
        await held;
        return answer('too late');
      },
    ],
  });
  await waitFor('the answering call to ask the model', async () => stub.requestsFor(goal, 'final_answer').length > 0);
  return { handle, release };
}

test('cancelled while its answering call waits for the model, the run stops that call and ends cancelled, closed once', async () => {
  const { handle, release } = await heldAnswer('cancel me while the model answers');
  await handle.cancel();
  // The answer never comes: the cancellation reaches the local call (at the workflow task's next heartbeat) and stops it.
  const state = (await Promise.race([
    handle.result(),
    new Promise((_, reject) => setTimeout(() => reject(new Error('the run did not end within 30 s of its cancellation')), 30_000)),
  ])) as ExecutionState;
  release();
  assert.equal(state.status, 'cancelled');
  assert.deepEqual(outputs(await chunksOf(handle.workflowId)), [{ kind: 'json', data: { ending: 'cancelled', status: 'cancelled' } }]);
});

test('cancelled just as its answering call closes the run, the run is closed once and its state says what its memory says', async () => {
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  const handle = await startQuick('cancel me while answering', {
    execution_plan: [{ steps: [respondStep] }],
    // The answer is held back until the run has been cancelled.
    final_answer: [
      async () => {
        await held;
        return answer('too late');
      },
    ],
  });
  await waitFor('the answering call to ask the model', async () => stub.requestsFor('cancel me while answering', 'final_answer').length > 0);
  await handle.cancel();
  release();
  // Either way the run is closed once, and its state says what its memory says: the answer, if the call
  // had closed the run before it learned of the cancellation (closeRun then finds that ending), or the cancellation.
  const state = (await handle.result()) as ExecutionState;
  const endings = outputs(await chunksOf(handle.workflowId));
  assert.equal(endings.length, 1, `one ending, got ${JSON.stringify(endings)}`);
  if (state.status === 'completed') {
    assert.equal(state.finalAnswer, 'too late');
    assert.deepEqual(endings[0], { kind: 'text', text: 'too late' });
  } else {
    assert.equal(state.status, 'cancelled');
    assert.deepEqual(endings[0], { kind: 'json', data: { ending: 'cancelled', status: 'cancelled' } });
  }
});

test('a run is closed once: closed by its answer, a later close as cancelled finds the answer, writes nothing and says so', async () => {
  const runId = `close-direct-${randomUUID().slice(0, 8)}`;
  const started = initialState({ runId, userId: 'closer', goal: 'close me twice', model: '' }, new Date());
  const inActivity = <T>(fn: () => Promise<T>, activityId: string): Promise<T> =>
    new MockActivityEnvironment({ activityId, workflowExecution: { workflowId: runId, runId: 'r1' } }).run(fn) as Promise<T>;
  const threadId = await inActivity(() => ensureRunThread({ memory }, started), '1');
  const state = { ...started, threadId };
  assert.deepEqual(await inActivity(() => closeRun({ memory }, { state: complete(state, 'the answer', new Date()), ending: 'answered' }), '2'), {});
  // The same close again (a retry) writes nothing twice.
  assert.deepEqual(await inActivity(() => closeRun({ memory }, { state: complete(state, 'the answer', new Date()), ending: 'answered' }), '2'), {});
  assert.deepEqual(await inActivity(() => closeRun({ memory }, { state: cancel(state, new Date()), ending: 'cancelled' }), '3'), { answeredBefore: 'the answer' });
  assert.deepEqual(outputs(await chunksOf(runId)), [{ kind: 'text', text: 'the answer' }]);

  // A run that was not answered closes as it ended.
  const otherId = `${runId}-b`;
  const other = { ...initialState({ runId: otherId, userId: 'closer', goal: 'cancel me', model: '' }, new Date()), threadId: null };
  const otherThread = await inActivity(() => ensureRunThread({ memory }, other), '4');
  assert.deepEqual(await inActivity(() => closeRun({ memory }, { state: cancel({ ...other, threadId: otherThread }, new Date()), ending: 'cancelled' }), '5'), {});
  assert.deepEqual(outputs(await chunksOf(otherId)), [{ kind: 'json', data: { ending: 'cancelled', status: 'cancelled' } }]);
});

test('an answering call run again (its worker died before its task completed) closes the run with the answer it journaled, once', async () => {
  const goal = 'journal my answer';
  stub.script(goal, { final_answer: [answer('the first answer'), answer('a second answer')] });
  const runId = `close-journal-${randomUUID().slice(0, 8)}`;
  const activities = createPlanActivities({
    provider: stubProvider(stub.url),
    tools: new ToolRegistry(BUILTIN_TOOLS),
    memory,
    contextBudget: 20_000,
    store: new MemoryKeyValueStore(),
    maxSteps: 4,
    maxDepth: 0,
  });
  // The same local call (same id in the same run), as the worker that takes the run over makes it again.
  const sameCall = () => new MockActivityEnvironment({ activityId: '3', isLocal: true, workflowExecution: { workflowId: runId, runId: 'r1' } });
  const started = initialState({ runId, userId: 'closer', goal, model: 'stub-model' }, new Date());
  const threadId = (await new MockActivityEnvironment({ activityId: '1', workflowExecution: { workflowId: runId, runId: 'r1' } }).run(ensureRunThread, { memory }, started)) as string | null;
  assert.ok(threadId);
  const now = new Date();
  const state = startStep(applyPlan({ ...started, threadId }, [respondStep as StepSpec], now), 's1', now);
  const input = { state, stepId: 's1', close: { reportTo: null } };
  const first = await sameCall().run(activities.respond, input);
  const again = await sameCall().run(activities.respond, input);
  assert.deepEqual(first, { answer: 'the first answer', closed: true });
  assert.deepEqual(again, first, 'the answer came from the journal');
  assert.equal(stub.requestsFor(goal, 'final_answer').length, 1, 'the model was asked once');
  assert.deepEqual(outputs(await chunksOf(runId)), [{ kind: 'text', text: 'the first answer' }], 'one ending');
});
