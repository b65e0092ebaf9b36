/**
 * Skills in a real run: the planner is told the skills by name and description; a load_skill step
 * puts the skill's instructions into the run's memory thread, and the next prompt shows them.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { ExecutionState } from '../../src/planning/execution-state';
import { openMemory } from '../../src/store/open-memory';
import { Runs } from '../../src/temporal/runs';
import { answer, cont, respondStep, toolStep } from '../helpers/scenarios';
import { StubModelServer } from '../helpers/stub-model-server';
import { startTestEnv, stubProvider, type TestEnv } from '../helpers/temporal-env';

const stub = new StubModelServer();
let env: TestEnv;

before(async () => {
  await stub.start();
  env = await startTestEnv({ provider: stubProvider(stub.url) });
});
after(async () => {
  await env?.stop();
  await stub.stop();
});

const promptOf = (goal: string, name: string, i = 0) =>
  stub
    .requestsFor(goal, name)
    [i]?.messages.map((m) => m.content)
    .join('\n') ?? '';

test('load_skill brings a skill body into the run thread; later prompts follow it', async () => {
  const goal = 'log that I went running today';
  stub.script(goal, {
    execution_plan: [{ steps: [toolStep('load_skill', { name: 'daily-note' }, 'load the daily-note skill'), toolStep('load_skill', { name: 'unit-convert', file: 'factors.md' }), respondStep] }],
    replan_decision: [cont, cont],
    final_answer: [answer('logged')],
  });
  const { runId } = await new Runs(env.client, env.config).start({ userId: 'skilled', goal });
  const state = (await env.client.workflow.getHandle(runId).result()) as ExecutionState;
  assert.equal(state.status, 'completed');

  // The plan's prompt names the skills, not their bodies.
  const planPrompt = promptOf(goal, 'execution_plan');
  assert.match(planPrompt, /daily-note: Keeps a dated daily log/);
  assert.doesNotMatch(planPrompt, /Never overwrite a day's note/);
  // After loading, the instructions are in every prompt of the run.
  assert.match(promptOf(goal, 'replan_decision', 0), /Never overwrite a day's note/);
  assert.match(promptOf(goal, 'final_answer'), /Never overwrite a day's note/);
  // A file of a skill comes back as the step's result.
  assert.match(promptOf(goal, 'replan_decision', 1), /1\.609344/);

  const { memory, close } = await openMemory(env.config);
  try {
    const view = await memory.view(state.threadId ?? '');
    const skill = view.chunks.find((c) => c.type === 'system' && JSON.stringify(c.content).includes('Skill \\"daily-note\\"'));
    assert.ok(skill, `no skill chunk among ${view.chunks.map((c) => c.type).join(', ')}`);
    assert.equal(skill.retention, 'COMPRESSIBLE');
    assert.equal(skill.provenance.runId, runId);
  } finally {
    await close();
  }
  assert.equal(stub.misses.length, 0);
});

test('an unknown skill is an error observation naming the skills', async () => {
  const goal = 'use a skill that does not exist';
  stub.script(goal, {
    execution_plan: [{ steps: [toolStep('load_skill', { name: 'juggling' }), respondStep] }],
    replan_decision: [cont],
    final_answer: [answer('no such skill')],
  });
  const { runId } = await new Runs(env.client, env.config).start({ userId: 'skilled', goal });
  const state = (await env.client.workflow.getHandle(runId).result()) as ExecutionState;
  assert.equal(state.status, 'completed');
  const error = state.observations.find((o) => o.kind === 'error');
  assert.match(error?.content ?? '', /no skill "juggling"; skills: daily-note, unit-convert/);
});
