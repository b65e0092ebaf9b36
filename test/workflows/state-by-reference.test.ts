/**
 * A run's state goes to its activities by reference (src/engine/state-ref.ts) and big tool
 * results stay out of history: against the real Temporal server, with the real `openai` client
 * talking HTTP to the stub model server.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { temporal } from '@temporalio/proto';
import { z } from 'zod';
import type { PlanExecutionInput } from '../../src/engine/contract';
import { isNeedsState, isTimed, LOCAL_CALL_MAX_MS } from '../../src/engine/local-calls';
import type { ExecutionState } from '../../src/planning/execution-state';
import { PLAN_WORKFLOW_TYPE } from '../../src/workflows/definitions';
import { openMemory } from '../../src/store/open-memory';
import { Runs } from '../../src/temporal/runs';
import { defineTool } from '../../src/tools/tool';
import { answer, askStep, cont, respondStep, toolStep } from '../helpers/scenarios';
import { tallyTool as makeTally } from '../helpers/tally-tool';
import { StubModelServer } from '../helpers/stub-model-server';
import { callsOf, startTestEnv, stubProvider, testConfig, waitFor, type TestEnv } from '../helpers/temporal-env';

const MARK = 'END-OF-BIG-RESULT';
const bigTool = defineTool({
  name: 'big',
  description: 'Returns 100 kB (test tool).',
  input: z.object({ n: z.number() }),
  handler: async ({ n }) => ({ n, text: `${'x'.repeat(100_000)}${MARK}` }),
});
/** Invocations of the `tally` tool by label: proves which tool steps really ran. */
const { tool: tallyTool, counts: tally } = makeTally();

const stub = new StubModelServer();
let env: TestEnv;
let runs: Runs;

before(async () => {
  await stub.start();
  // Limits far above 400 kB of results: this test looks at history, not at compaction.
  env = await startTestEnv({ provider: stubProvider(stub.url), extraTools: [bigTool, tallyTool], config: testConfig({ MEMORY_SOFT_LIMIT: '500000', MEMORY_HARD_LIMIT: '500000' }) });
  runs = new Runs(env.client, env.config);
});
after(async () => {
  await env?.stop();
  await stub.stop();
});

/** The decoded JSON of every activity input in a history, in order. */
function activityInputs(history: temporal.api.history.v1.IHistory): { type: string; bytes: number; json: string }[] {
  return (history.events ?? []).flatMap((e) => {
    const attrs = e.activityTaskScheduledEventAttributes;
    if (!attrs) return [];
    const data = attrs.input?.payloads?.[0]?.data ?? new Uint8Array();
    return [{ type: attrs.activityType?.name ?? '', bytes: data.length, json: Buffer.from(data).toString('utf8') }];
  });
}

test('a run of 100 kB tool results keeps them out of history: activity inputs stay small and flat, the whole result is in the run memory', async () => {
  const goal = 'gather four big results';
  stub.script(goal, {
    execution_plan: [{ steps: [...[1, 2, 3, 4].map((n) => toolStep('big', { n })), respondStep] }],
    replan_decision: [cont, cont, cont, cont],
    final_answer: [answer('gathered')],
  });
  const { runId } = await runs.start({ userId: 'tester', goal });
  const state = (await env.client.workflow.getHandle(runId).result()) as ExecutionState;
  assert.equal(state.status, 'completed');
  assert.equal(state.observations.length, 4);
  // The run's own state shows each result's head, saying how much was left out.
  for (const o of state.observations) assert.match(o.content, /… \[truncated \d+ chars\]$/);

  const history = await env.client.workflow.getHandle(runId).fetchHistory();
  const inputs = activityInputs(history);
  const steps = inputs.filter((i) => i.type === 'executeStep');
  assert.equal(steps.length, 4);
  // No input carries the whole state: never the observations of earlier steps, never a big result.
  for (const input of inputs) {
    assert.ok(!input.json.includes('"state"'), `${input.type} input carries a state: ${input.json.slice(0, 200)}`);
    assert.ok(!input.json.includes('x'.repeat(1_000)), `${input.type} input carries a big result`);
  }
  // Flat: the fourth step's input is no bigger than the second's plus a little (what one step changes).
  const [, second, , fourth] = steps.map((s) => s.bytes);
  assert.ok(second !== undefined && fourth !== undefined && fourth < second + 400, `step inputs grow: ${steps.map((s) => s.bytes).join(', ')}`);
  const total = history.events?.reduce((n, e) => n + JSON.stringify(e).length, 0) ?? 0;
  assert.ok(total < 60_000, `history of ${total} bytes for 400 kB of results`);

  // What the model reads (the run's memory thread) has every result whole.
  const { memory, close } = await openMemory(env.config);
  try {
    const view = await memory.view(state.threadId ?? '');
    const whole = view.chunks.filter((c) => JSON.stringify(c.content).includes(MARK));
    assert.equal(whole.length, 4);
  } finally {
    await close();
  }
});

test('a worker that never saw the run rebuilds its state from the run itself (through the payload codec, as encryption is turned on): a reply after a worker change resumes the run exactly once', async () => {
  const goal = 'tally, ask, then tally again';
  stub.script(goal, {
    execution_plan: [{ steps: [toolStep('tally', { label: 'first' }), askStep('Go on?'), toolStep('tally', { label: 'second' }), respondStep] }],
    replan_decision: [cont, cont, cont],
    final_answer: [answer('both tallied')],
  });
  const { runId } = await runs.start({ userId: 'tester', goal });
  await waitFor('the question', async () => (await runs.get(runId)).status === 'waiting_user');
  // A new worker (an empty state cache) takes over the task queue, now sealing payloads; the run's earlier ones stay readable.
  await env.stop();
  env = await startTestEnv({ provider: stubProvider(stub.url), extraTools: [bigTool, tallyTool], config: { ...env.config, THREADLINE_ENCRYPTION_KEY: 'turned on mid-run' } });
  runs = new Runs(env.client, env.config);
  await runs.reply(runId, 'yes');
  const state = (await env.client.workflow.getHandle(runId).result()) as ExecutionState;
  assert.equal(state.status, 'completed', state.lastError ?? '');
  assert.equal(state.finalAnswer, 'both tallied');
  assert.deepEqual([tally.get('first'), tally.get('second')], [1, 1]);
});

test("a local call on a worker without the run's state is made again locally with the whole state, not handed to a regular activity", async () => {
  const goal = 'think, ask, think again';
  stub.script(goal, {
    execution_plan: [{ steps: [{ type: 'reason', description: 'Think first' }, askStep('Go on?'), { type: 'reason', description: 'Think again' }, respondStep] }],
    reasoning: [{ thought: 'one' }, { thought: 'two' }],
    replan_decision: [cont, cont, cont],
    final_answer: [answer('thought twice')],
  });
  // Its starter's last call was quick, so its calls run locally from the first (as a session's later runs do).
  const input: PlanExecutionInput = { userId: 'tester', goal, limits: { maxSteps: 8, maxDepth: 0 }, lastCallMs: 5 };
  const handle = await env.client.workflow.start(PLAN_WORKFLOW_TYPE, { taskQueue: env.config.TASK_QUEUE, workflowId: `whole-state-${Date.now().toString(36)}`, args: [input] });
  await waitFor('the question', async () => (await runs.get(handle.workflowId)).status === 'waiting_user');
  const before = await callsOf(env.client, handle.workflowId);
  // A new worker (an empty state cache, nothing cached) takes the run over.
  await env.stop();
  env = await startTestEnv({ provider: stubProvider(stub.url), extraTools: [bigTool, tallyTool], config: env.config });
  runs = new Runs(env.client, env.config);
  await runs.reply(handle.workflowId, 'yes');
  const state = (await env.client.workflow.getHandle(handle.workflowId).result()) as ExecutionState;
  assert.equal(state.status, 'completed', state.lastError ?? '');
  assert.equal(state.finalAnswer, 'thought twice');

  const after = (await callsOf(env.client, handle.workflowId)).slice(before.length);
  const last = before.at(-1)?.result;
  // A loaded machine can make the call before the question slow: the next is then a regular activity, which has no such case.
  if (!(isTimed(last) && last.ms <= LOCAL_CALL_MAX_MS)) return;
  const [first, second] = after;
  assert.ok(first?.local && isNeedsState(isTimed(first.result) ? first.result.value : first.result), `the first call after the reply: ${JSON.stringify(first)}`);
  assert.equal(second?.local, true, 'made again locally, with the whole state');
  assert.equal(second?.activity, first?.activity);
  assert.ok(!isNeedsState(isTimed(second?.result) ? second.result.value : second?.result));
});
