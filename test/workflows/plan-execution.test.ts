/**
 * PlanExecutionWorkflow against the real Temporal server, with the real `openai`
 * client talking HTTP to a stub model server.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { ExecutionState } from '../../src/planning/execution-state';
import { openMemory } from '../../src/store/open-memory';
import { RunNotWaitingError, Runs } from '../../src/temporal/runs';
import { getStateQuery, replySignal } from '../../src/workflows/definitions';
import { answer, askStep, askThenAnswer, cont, multiStepToolPlan, respondStep, toolStep, withSubplan } from '../helpers/scenarios';
import { tallyTool as makeTally } from '../helpers/tally-tool';
import { StubModelServer } from '../helpers/stub-model-server';
import { startTestEnv, stubProvider, testConfig, waitFor, type TestEnv } from '../helpers/temporal-env';

const stub = new StubModelServer();
let env: TestEnv;
let runs: Runs;
/** Invocations of the `tally` tool by label: proves which tool steps really ran. */
const { tool: tallyTool, counts: tally } = makeTally();

before(async () => {
  await stub.start();
  env = await startTestEnv({ provider: stubProvider(stub.url), extraTools: [tallyTool], config: testConfig({ MAX_STEPS: '6', MAX_SUBPLAN_DEPTH: '1' }) });
  runs = new Runs(env.client, env.config);
});
after(async () => {
  await env?.stop();
  await stub.stop();
});

async function run(goal: string, userId = 'tester'): Promise<ExecutionState> {
  const { runId } = await runs.start({ userId, goal });
  return env.client.workflow.getHandle(runId).result() as Promise<ExecutionState>;
}

async function waitingRun(goal: string): Promise<string> {
  const { runId } = await runs.start({ userId: 'tester', goal });
  await waitFor('the run to wait for the user', async () => (await runs.get(runId)).status === 'waiting_user');
  return runId;
}

test('a multi-step tool plan runs every step, replans after each and answers', async () => {
  const [goal, script] = multiStepToolPlan('compute 6*7 and note it');
  stub.script(goal, script);
  const state = await run(goal);
  assert.equal(state.status, 'completed');
  assert.equal(state.finalAnswer, '6*7 is 42, and I noted it.');
  assert.deepEqual(
    state.steps.map((s) => s.status),
    ['completed', 'completed', 'completed', 'completed'],
  );
  assert.deepEqual(
    state.observations.map((o) => [o.stepId, o.kind, o.content]),
    [
      ['s1', 'tool', '{"value":42}'],
      ['s2', 'tool', '{"ok":true}'],
      ['s3', 'tool', '{"value":"42"}'],
    ],
  );
  assert.equal(stub.requestsFor(goal, 'execution_plan').length, 1);
  assert.equal(stub.requestsFor(goal, 'replan_decision').length, 3);
  // Every call follows the wire protocol: json_schema response_format, strict false.
  for (const req of stub.requestsFor(goal)) {
    const format = req.body.response_format as { type: string; json_schema: { name: string; strict: boolean; schema: object } };
    assert.equal(format.type, 'json_schema');
    assert.equal(format.json_schema.name, req.name);
    assert.equal(format.json_schema.strict, false);
    assert.equal(typeof format.json_schema.schema, 'object');
  }
  // The final answer call sees what the tools observed, as working memory rendered from the run's thread.
  const finalPrompt =
    stub
      .requestsFor(goal, 'final_answer')[0]
      ?.messages.map((m) => m.content)
      .join('\n') ?? '';
  assert.match(finalPrompt, /\[action_response\]\nstep: s3\nresult:\n {2}value: 42/);
  // The run's working memory lives in its memory thread: goal, each action and its response, the answer.
  assert.equal(state.threadId, `thread_${state.runId}`);
  const { memory, close } = await openMemory(env.config);
  try {
    const view = await memory.view(state.threadId ?? '');
    assert.deepEqual(
      view.chunks.map((c) => c.type),
      ['delegation', 'action', 'action_response', 'action', 'action_response', 'action', 'action_response', 'output'],
    );
    assert.deepEqual(view.chunks.at(-1)?.content, { kind: 'text', text: '6*7 is 42, and I noted it.' });
    const audit = await memory.audit(state.threadId ?? '', { runId: state.runId });
    assert.ok(audit.length >= 5, `expected the run's writes in the audit, got ${audit.length}`);
    assert.ok(audit.every((r) => r.runId === state.runId));
  } finally {
    await close();
  }
});

test('ask_user waits for the reply, records it and resumes with it as context', async () => {
  const [goal, script] = askThenAnswer('book a table', 'For how many people?');
  stub.script(goal, script);
  const runId = await waitingRun(goal);
  const waiting = await runs.get(runId);
  assert.equal(waiting.currentStepId, 's1');
  assert.equal(waiting.steps[0]?.question, 'For how many people?');
  await runs.reply(runId, 'four of us');
  const state = (await env.client.workflow.getHandle(runId).result()) as ExecutionState;
  assert.equal(state.status, 'completed');
  assert.deepEqual(
    state.observations.map((o) => [o.stepId, o.kind, o.content]),
    [['s1', 'user_reply', 'four of us']],
  );
  const replanPrompt =
    stub
      .requestsFor(goal, 'replan_decision')[0]
      ?.messages.map((m) => m.content)
      .join('\n') ?? '';
  assert.match(replanPrompt, /You asked the user: "For how many people\?"\. The user replied: "four of us"/);
});

test('replace_remaining replaces the pending steps, which never run', async () => {
  const goal = 'replace the rest';
  stub.script(goal, {
    execution_plan: [{ steps: [toolStep('tally', { label: 'first' }), toolStep('tally', { label: 'replaced' }), respondStep] }],
    replan_decision: [{ decision: 'replace_remaining', steps: [toolStep('tally', { label: 'instead' }), respondStep] }, cont],
    final_answer: [answer('done differently')],
  });
  const state = await run(goal);
  assert.equal(state.status, 'completed');
  assert.deepEqual(
    state.steps.map((s) => [s.id, s.status]),
    [
      ['s1', 'completed'],
      ['s2', 'replaced'],
      ['s3', 'replaced'],
      ['s4', 'completed'],
      ['s5', 'completed'],
    ],
  );
  assert.equal(tally.get('replaced'), undefined);
  assert.equal(tally.get('first'), 1);
  assert.equal(tally.get('instead'), 1);
  assert.notEqual(state.planId, `${state.runId}#plan1`);
});

test('finish ends the run early with the answer; later steps are skipped', async () => {
  const goal = 'finish early';
  stub.script(goal, {
    execution_plan: [{ steps: [toolStep('tally', { label: 'early' }), toolStep('tally', { label: 'never' }), respondStep] }],
    replan_decision: [{ decision: 'finish', answer: 'already done' }],
  });
  const state = await run(goal);
  assert.equal(state.status, 'completed');
  assert.equal(state.finalAnswer, 'already done');
  assert.deepEqual(
    state.steps.map((s) => s.status),
    ['completed', 'skipped', 'skipped'],
  );
  assert.equal(tally.get('never'), undefined);
  assert.equal(stub.requestsFor(goal, 'final_answer').length, 0);
});

test('finish without an answer ends the run early too: the final_answer call writes it, and later steps are skipped', async () => {
  const goal = 'finish early, answer later';
  stub.script(goal, {
    execution_plan: [{ steps: [toolStep('tally', { label: 'early-unanswered' }), toolStep('tally', { label: 'never-unanswered' }), respondStep] }],
    replan_decision: [{ decision: 'finish' }],
    final_answer: [answer('written from what was observed')],
  });
  const state = await run(goal);
  assert.equal(state.status, 'completed', state.lastError ?? '');
  assert.equal(state.finalAnswer, 'written from what was observed');
  assert.deepEqual(
    state.steps.map((s) => s.status),
    ['completed', 'skipped', 'skipped'],
  );
  assert.equal(tally.get('never-unanswered'), undefined);
  assert.equal(stub.requestsFor(goal, 'replan_decision').length, 1, 'taken as it came: no repair');
  assert.equal(stub.requestsFor(goal, 'final_answer').length, 1);
});

test('a replan decision to ask the user inserts a question before the remaining steps', async () => {
  const goal = 'decide to ask';
  stub.script(goal, {
    execution_plan: [{ steps: [toolStep('tally', { label: 'before-ask' }), respondStep] }],
    replan_decision: [{ decision: 'ask_user', question: 'Which colour?' }, cont],
    final_answer: [answer('blue it is')],
  });
  const runId = await waitingRun(goal);
  const waiting = await runs.get(runId);
  assert.deepEqual(
    waiting.steps.map((s) => [s.id, s.index, s.type, s.status]),
    [
      ['s1', 1, 'tool', 'completed'],
      ['s3', 2, 'ask_user', 'running'],
      ['s2', 3, 'respond', 'pending'],
    ],
  );
  await runs.reply(runId, 'blue');
  const state = (await env.client.workflow.getHandle(runId).result()) as ExecutionState;
  assert.equal(state.finalAnswer, 'blue it is');
});

test('a sub-plan runs as a child run linked both ways, its answer observed by the parent', async () => {
  const [[goal, parent], [childGoal, child]] = withSubplan('plan with a helper', 'helper: add 2+2') as [[string, object], [string, object]];
  stub.script(goal, parent);
  stub.script(childGoal, child);
  const state = await run(goal);
  assert.equal(state.status, 'completed');
  const step = state.steps[0];
  assert.equal(step?.type, 'subplan');
  assert.equal(step?.childRunId, `${state.runId}.s1`);
  assert.deepEqual(
    state.observations.map((o) => [o.kind, o.content]),
    [['subplan', 'child says 4']],
  );
  const childState = await runs.get(step?.childRunId ?? '');
  assert.equal(childState.parentRunId, state.runId);
  assert.equal(childState.depth, 1);
  assert.equal(childState.goal, childGoal);
  assert.equal(childState.status, 'completed');
});

test('sub-plans deeper than the limit are refused as an error observation', async () => {
  const goal = 'too deep outer';
  const inner = 'too deep inner';
  stub.script(goal, { execution_plan: [{ steps: [{ type: 'subplan', description: 'go deeper', goal: inner }, respondStep] }], replan_decision: [cont], final_answer: [answer('outer done')] });
  stub.script(inner, {
    execution_plan: [{ steps: [{ type: 'subplan', description: 'deeper still', goal: 'never started' }, respondStep] }],
    replan_decision: [cont],
    final_answer: [answer('inner done')],
  });
  const state = await run(goal);
  const child = await runs.get(state.steps[0]?.childRunId ?? '');
  assert.equal(child.status, 'completed');
  assert.equal(child.observations[0]?.kind, 'error');
  assert.match(child.observations[0]?.content ?? '', /nesting limit of 1/);
  assert.equal(stub.requestsFor('never started').length, 0);
});

test('an invalid model reply is sent back with the problem and repaired', async () => {
  const goal = 'repair my plan';
  stub.script(goal, {
    execution_plan: ['this is not json', { steps: [{ type: 'tool', description: 'no tool named' }] }, { steps: [respondStep] }],
    final_answer: [answer('repaired')],
  });
  const state = await run(goal);
  assert.equal(state.status, 'completed');
  assert.equal(state.finalAnswer, 'repaired');
  const [, second, third] = stub.requestsFor(goal, 'execution_plan');
  assert.match(second?.messages.at(-1)?.content ?? '', /rejected: not valid JSON/);
  assert.equal(second?.messages.at(-2)?.content, 'this is not json');
  assert.match(third?.messages.at(-1)?.content ?? '', /needs "tool"/);
});

test('a model that never replies validly fails the run with a clear error, without retrying forever', async () => {
  const goal = 'always invalid';
  stub.script(goal, { execution_plan: ['{', '{"steps": []}', '[]', 'extra reply that must not be requested'] });
  const state = await run(goal);
  assert.equal(state.status, 'failed');
  assert.match(state.lastError ?? '', /execution_plan reply was invalid 3 time\(s\)/);
  assert.equal(stub.requestsFor(goal, 'execution_plan').length, 3);
});

test('an unknown tool becomes an error observation and the run carries on', async () => {
  const goal = 'use a missing tool';
  stub.script(goal, {
    execution_plan: [{ steps: [toolStep('teleport', { to: 'mars' }), toolStep('calculator', { expression: 'one plus one' }), respondStep] }],
    replan_decision: [cont, cont],
    final_answer: [answer('could not teleport')],
  });
  const state = await run(goal);
  assert.equal(state.status, 'completed');
  assert.deepEqual(
    state.steps.map((s) => s.status),
    ['failed', 'failed', 'completed'],
  );
  assert.equal(state.observations[0]?.kind, 'error');
  assert.match(state.observations[0]?.content ?? '', /unknown tool "teleport"; available tools: .*calculator/);
  assert.equal(state.observations[1]?.kind, 'error');
  assert.match(state.observations[1]?.content ?? '', /calculator failed/);
});

test('cancelling a run that waits for a reply ends it cancelled at once', async () => {
  const goal = 'wait then cancel';
  stub.script(goal, { execution_plan: [{ steps: [askStep('Are you there?'), respondStep] }] });
  const runId = await waitingRun(goal);
  await runs.cancel(runId);
  const state = (await env.client.workflow.getHandle(runId).result()) as ExecutionState;
  assert.equal(state.status, 'cancelled');
  assert.deepEqual(
    state.steps.map((s) => s.status),
    ['skipped', 'skipped'],
  );
  assert.equal(stub.requestsFor(goal, 'replan_decision').length, 0);
});

test('a run stops at the step limit instead of replanning forever', async () => {
  const goal = 'loop forever';
  const again = { decision: 'replace_remaining', steps: [toolStep('tally', { label: 'loop' })] };
  stub.script(goal, { execution_plan: [{ steps: [toolStep('tally', { label: 'loop' })] }], replan_decision: [again, again, again, again, again, again, again] });
  const state = await run(goal);
  assert.equal(state.status, 'failed');
  assert.match(state.lastError ?? '', /step limit reached: a run may execute at most 6 steps/);
  assert.equal(tally.get('loop'), 6);
});

test('the state query shows progress while the run is in flight', async () => {
  const goal = 'slow steps';
  stub.script(goal, { execution_plan: [{ steps: [toolStep('wait', { seconds: 2 }), respondStep] }], replan_decision: [cont], final_answer: [answer('waited')] });
  const { runId } = await runs.start({ userId: 'tester', goal });
  const running = await waitFor('the wait step to run', async () => {
    const s = await env.client.workflow.getHandle(runId).query(getStateQuery);
    return s.currentStepId === 's1' && s.steps[0]?.status === 'running' ? s : undefined;
  });
  assert.equal(running.status, 'running');
  assert.equal(running.model, 'stub-model');
  const done = (await env.client.workflow.getHandle(runId).result()) as ExecutionState;
  assert.ok(done.version > running.version);
});

test('of two replies sent at once exactly one is taken; the other is refused, not silently dropped', async () => {
  const goal = 'two replies race';
  stub.script(goal, { execution_plan: [{ steps: [askStep('Pick one'), respondStep] }], replan_decision: [cont], final_answer: [answer('picked')] });
  const runId = await waitingRun(goal);
  const outcomes = await Promise.allSettled([runs.reply(runId, 'first'), runs.reply(runId, 'second')]);
  assert.equal(outcomes.filter((o) => o.status === 'fulfilled').length, 1);
  const refused = outcomes.find((o) => o.status === 'rejected');
  assert.ok(refused && refused.status === 'rejected' && refused.reason instanceof RunNotWaitingError, String(refused));
  // The refusal says why in the run's own terms, not from visibility's (lagging) status.
  assert.match(String(refused.reason), /another reply to this question was taken first|not waiting for a reply/);
  assert.doesNotMatch(String(refused.reason), /waiting_user, not waiting/);
  const state = (await env.client.workflow.getHandle(runId).result()) as ExecutionState;
  assert.equal(state.observations.filter((o) => o.kind === 'user_reply').length, 1);
});

test('a reply signal (as sent from the Temporal CLI or Web UI) also resumes a waiting run', async () => {
  const [goal, script] = askThenAnswer('signal me', 'Ready?');
  stub.script(goal, script);
  const runId = await waitingRun(goal);
  await env.client.workflow.getHandle(runId).signal(replySignal, { text: 'ready' });
  const state = (await env.client.workflow.getHandle(runId).result()) as ExecutionState;
  assert.equal(state.status, 'completed');
  assert.equal(state.observations[0]?.content, 'ready');
});

test('a run started with ask_user off (an unattended run) never waits: the question is refused as a failed step, and the plan goes on', async () => {
  const goal = 'check the nightly build unattended';
  stub.script(goal, {
    execution_plan: [{ steps: [askStep('Which branch?'), respondStep] }],
    replan_decision: [cont],
    final_answer: [answer('Checked main: green.')],
  });
  const { runId } = await runs.start({ userId: 'unattended', goal, allow: { askUser: false } });
  const state = (await env.client.workflow.getHandle(runId).result()) as ExecutionState;
  assert.equal(state.status, 'completed');
  assert.deepEqual(state.allow, { askUser: false });
  assert.deepEqual(
    state.steps.map((s) => [s.type, s.status]),
    [
      ['ask_user', 'failed'],
      ['respond', 'completed'],
    ],
  );
  assert.match(state.observations[0]?.content ?? '', /^refused: asking the person \(ask_user\): nobody is there to answer is off for this run/);
  assert.match(
    stub
      .requestsFor(goal, 'execution_plan')[0]
      ?.messages.map((m) => m.content)
      .join('\n') ?? '',
    /Off for this run — do not use: asking the person/,
  );
});
