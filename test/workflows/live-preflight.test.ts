/**
 * Live state before planning (seed 000's dynamic state refresh, made explicit):
 * live tools the model says a goal concerns are called for a fresh snapshot
 * before the plan is made; the snapshot is observed and the planner sees it.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { z } from 'zod';
import { buildMessages } from '../../src/calls/registry';
import { initialState, makeObservation, type ExecutionState } from '../../src/planning/execution-state';
import { Runs } from '../../src/temporal/runs';
import { defineTool } from '../../src/tools/tool';
import { answer, respondStep } from '../helpers/scenarios';
import { StubModelServer } from '../helpers/stub-model-server';
import { startTestEnv, stubProvider, testConfig, type TestEnv } from '../helpers/temporal-env';

const stub = new StubModelServer();
let env: TestEnv;
let balance = 100;
let calls = 0;
const accountBalance = defineTool({
  name: 'account_balance',
  description: 'The current balance of the account (changes outside the chat).',
  input: z.object({}),
  live: true,
  async handler() {
    calls++;
    return { balance };
  },
});

before(async () => {
  await stub.start();
  env = await startTestEnv({ provider: stubProvider(stub.url), extraTools: [accountBalance] });
});
after(async () => {
  await env?.stop();
  await stub.stop();
});

const finish = async (runId: string) => (await env.client.workflow.getHandle(runId).result()) as ExecutionState;

test('a live tool the goal concerns is snapshotted before planning, and the planner sees the fresh value', async () => {
  const goal = 'can I afford a 50 euro purchase?';
  balance = 42;
  stub.script(goal, { live_state_check: [{ tools: ['account_balance'] }], execution_plan: [{ steps: [respondStep] }], final_answer: [answer('no')] });
  const runs = new Runs(env.client, env.config);
  const state = await finish((await runs.start({ userId: 'saver', goal })).runId);
  assert.equal(state.status, 'completed');
  assert.equal(state.observations[0]?.kind, 'snapshot');
  assert.equal(state.observations[0]?.stepId, null);
  assert.match(state.observations[0]?.content ?? '', /account_balance .*\{"balance":42\}/);
  // The live-state check lists the live tools; the plan request carries the snapshot.
  const check =
    stub
      .requestsFor(goal, 'live_state_check')[0]
      ?.messages.map((m) => m.content)
      .join('\n') ?? '';
  assert.match(check, /"name": "account_balance"[\s\S]*"live": true/);
  const plan =
    stub
      .requestsFor(goal, 'execution_plan')[0]
      ?.messages.map((m) => m.content)
      .join('\n') ?? '';
  assert.match(plan, /\{"balance":42\}/);
});

test('no snapshot is taken when the goal concerns no live tool', async () => {
  const goal = 'say hello';
  const before = calls;
  stub.script(goal, { live_state_check: [{ tools: [] }], execution_plan: [{ steps: [respondStep] }], final_answer: [answer('hello')] });
  const runs = new Runs(env.client, env.config);
  const state = await finish((await runs.start({ userId: 'saver', goal })).runId);
  assert.equal(state.status, 'completed');
  assert.equal(calls, before);
  assert.deepEqual(state.observations, []);
});

test("after a live snapshot, the conversation's TaskState is left out of the prompt; without one it is shown", () => {
  const base = initialState({ runId: 'run-x', userId: 'u', goal: 'g', model: 'm' }, new Date(0));
  const session = {
    taskState: { CurrentGoal: 'buy a bike', ActiveFlow: '', OpenLoops: [], ImportantFacts: ['balance was 500 last week'], LastDecision: '', UpdatedAt: '' },
    recentTurns: [{ role: 'user' as const, text: 'hi' }],
  };
  const ctx = { call: 'execution_plan' as const, tools: [], maxSteps: 5, maxDepth: 1, session };
  const plain = buildMessages({ ...ctx, state: base })
    .map((m) => m.content)
    .join('\n');
  assert.match(plain, /balance was 500 last week/);
  const refreshed = { ...base, observations: [makeObservation(null, { kind: 'snapshot', content: 'account_balance: {"balance":42}' }, new Date(0))] };
  const text = buildMessages({ ...ctx, state: refreshed })
    .map((m) => m.content)
    .join('\n');
  assert.doesNotMatch(text, /balance was 500 last week/);
  assert.match(text, /Conversation so far/);
});

test('LIVE_TOOLS makes a tool live by configuration (no code): its snapshot is taken before planning a goal that concerns it', async () => {
  const configured = await startTestEnv({ provider: stubProvider(stub.url), config: testConfig({ LIVE_TOOLS: 'current_time, nothing.*' }) });
  try {
    const goal = 'is the office open right now?';
    stub.script(goal, { live_state_check: [{ tools: ['current_time'] }], execution_plan: [{ steps: [respondStep] }], final_answer: [answer('yes')] });
    const runs = new Runs(configured.client, configured.config);
    const { runId } = await runs.start({ userId: 'clock-watcher', goal });
    const state = (await configured.client.workflow.getHandle(runId).result()) as ExecutionState;
    assert.equal(state.status, 'completed');
    assert.equal(state.observations[0]?.kind, 'snapshot');
    assert.match(state.observations[0]?.content ?? '', /current_time .*"iso":"\d{4}-/);
    const check =
      stub
        .requestsFor(goal, 'live_state_check')[0]
        ?.messages.map((m) => m.content)
        .join('\n') ?? '';
    const described = check.slice(check.indexOf('"name": "current_time"'));
    assert.match(described.slice(0, described.indexOf('"name":', 10)), /"live": true/, 'the planner is told it is live');
  } finally {
    await configured.stop();
  }
});
