/**
 * Seed 000's workflow versioning: a run records what it was planned with (model, prompts, tools);
 * when a new worker differs, the run's next step stops it as stale, with the reason as its
 * `lastError` — runs started over REST (`Runs.start`, what POST /v1/runs calls), executing or
 * waiting for a reply, on both engines. Real server, real workers, the stub model over HTTP.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { z } from 'zod';
import { OpenAIProvider } from '../../src/llm/openai-provider';
import type { ExecutionState } from '../../src/planning/execution-state';
import { Runs } from '../../src/temporal/runs';
import { defineTool } from '../../src/tools/tool';
import { answer, askStep, cont, respondStep, toolStep } from '../helpers/scenarios';
import { StubModelServer } from '../helpers/stub-model-server';
import { startTestEnv, stubProvider, testConfig, waitFor, type TestEnv } from '../helpers/temporal-env';

const stub = new StubModelServer();
const envs: TestEnv[] = [];
/** A tool the second worker has and the first had not: its tool set differs. */
const compass = defineTool({ name: 'compass', description: 'Which way is north.', input: z.object({}), handler: async () => ({ north: 'up' }) });

before(async () => {
  await stub.start();
});
after(async () => {
  for (const env of envs) await env.stop();
  await stub.stop();
});

const result = async (env: TestEnv, runId: string) => (await env.client.workflow.getHandle(runId).result()) as ExecutionState;

test('an executing run whose worker is replaced by one with other tools stops as stale at its next step', async () => {
  const config = testConfig();
  const first = await startTestEnv({ provider: stubProvider(stub.url), config });
  envs.push(first);
  const goal = 'two sums, interrupted by a deploy';
  let entered = false;
  let release: () => void = () => undefined;
  const gate = new Promise<void>((resolve) => (release = resolve));
  stub.script(goal, {
    execution_plan: [{ steps: [toolStep('calculator', { expression: '1+1' }), toolStep('calculator', { expression: '2+2' }), respondStep] }],
    // The replan after the first step holds the run while the worker is replaced.
    replan_decision: [
      async () => {
        entered = true;
        await gate;
        return cont;
      },
      cont,
      cont,
    ],
    final_answer: [answer('never given')],
  });
  const runs = new Runs(first.client, config);
  const { runId } = await runs.start({ userId: 'deployer', goal });
  await waitFor('the first step to finish', async () => entered);
  const recorded = (await runs.get(runId)).codeVersion;
  assert.equal(recorded?.model, 'stub-model');
  assert.equal(recorded?.prompts, '1');

  first.worker.shutdown();
  envs.push(await startTestEnv({ provider: stubProvider(stub.url), extraTools: [compass], config }));
  release();

  const state = await result(first, runId);
  assert.equal(state.status, 'failed');
  assert.match(state.lastError ?? '', /^stale run: the tools changed since it was planned/);
  assert.deepEqual(state.codeVersion, recorded, 'the run keeps the version it was planned with');
  assert.notEqual(state.steps[1]?.status, 'completed', 'no step ran on the new tools');
  assert.equal(stub.requestsFor(goal, 'final_answer').length, 0);
  // The reason is what GET /v1/runs/:runId shows.
  assert.equal((await runs.get(runId)).lastError, state.lastError);
});

test('runs waiting for a reply when the model changes stop as stale when the reply comes (plan runs, tree runs, and tree runs started from a blueprint)', async () => {
  const config = testConfig();
  const first = await startTestEnv({ provider: stubProvider(stub.url), config });
  const planGoal = 'ask, then the model changes';
  const treeGoal = 'a tree that asks, then the model changes';
  stub.script(planGoal, { execution_plan: [{ steps: [askStep('which city?'), respondStep] }], replan_decision: [cont], final_answer: [answer('never given')] });
  stub.script(treeGoal, {
    task_tree: [{ name: 'Trip', goal: treeGoal, subtasks: [{ name: 'City', goal: 'Pick a city' }] }],
    react_action: [
      { thought: 'ask', action: 'ask_user', question: 'which city?' },
      { thought: 'done', action: 'finish', result: 'never' },
    ],
    final_answer: [answer('never given')],
  });
  // A blueprint run never proposes a tree: it takes its version from its first iteration.
  const blueprintGoal = 'a blueprint run that asks, then the model changes';
  stub.script(blueprintGoal, {
    react_action: [
      { thought: 'ask', action: 'ask_user', question: 'which city?' },
      { thought: 'done', action: 'finish', result: 'never' },
    ],
  });
  const runs = new Runs(first.client, config);
  const plan = (await runs.start({ userId: 'deployer', goal: planGoal })).runId;
  const tree = (await runs.start({ userId: 'deployer', goal: treeGoal, engine: 'tree' })).runId;
  const blueprint = (
    await runs.start({
      userId: 'deployer',
      goal: blueprintGoal,
      engine: 'tree',
      blueprint: { name: 'trip', tree: { name: 'Trip', goal: blueprintGoal, subtasks: [{ name: 'City', goal: 'Pick a city' }] } },
    })
  ).runId;
  for (const runId of [plan, tree, blueprint]) await waitFor(`${runId} to ask`, async () => (await runs.get(runId)).status === 'waiting_user');
  await first.stop();

  const upgraded = new OpenAIProvider({ baseURL: stub.url, apiKey: 'test-key', model: 'stub-model-2', timeoutMs: 10_000 });
  const second = await startTestEnv({ provider: upgraded, config });
  envs.push(second);
  const runs2 = new Runs(second.client, config);
  for (const runId of [plan, tree, blueprint]) {
    await runs2.reply(runId, 'Lyon');
    const state = await result(second, runId);
    assert.equal(state.status, 'failed', runId);
    assert.equal(state.lastError, 'stale run: the model (stub-model → stub-model-2) changed since it was planned, so its plan no longer fits what the agent can do; start it again');
  }
  assert.equal(stub.requestsFor(planGoal, 'replan_decision').length, 0, 'the stale plan run was not replanned');
  assert.equal(stub.requestsFor(treeGoal, 'react_action').length, 1, 'the stale tree run took no further action');
  assert.equal(stub.requestsFor(blueprintGoal, 'react_action').length, 1, 'the stale blueprint run took no further action');
});
