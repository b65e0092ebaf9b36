/**
 * Sub-agents as tools against the real Temporal server, with the real `openai` client talking
 * HTTP to the stub model: a call of `agent.<name>` runs the agent as a child workflow with its
 * own memory thread, its instructions in its prompts and only its tools; its answer is the
 * calling step's observation. The stub keys replies by goal: a child run's goal is its task.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import type { ExecutionState } from '../../src/planning/execution-state';
import { openMemory } from '../../src/store/open-memory';
import { Runs } from '../../src/temporal/runs';
import { answer, cont, respondStep, toolStep } from '../helpers/scenarios';
import { StubModelServer, type StubRequest } from '../helpers/stub-model-server';
import { startTestEnv, stubProvider, testConfig, waitFor, type TestEnv } from '../helpers/temporal-env';

const stub = new StubModelServer();
let env: TestEnv;
let runs: Runs;

const AGENTS = {
  agents: [
    {
      name: 'researcher',
      description: 'Works figures out; give it one question.',
      instructions: 'Answer in one sentence and always show the arithmetic. RESEARCHER-MARKER',
      tools: ['calculator'],
      model: 'research-model',
    },
    { name: 'organiser', description: 'Splits work into tasks and does them.', instructions: 'Organise the work. ORGANISER-MARKER', tools: ['calculator', 'agent.researcher'], engine: 'tree' },
  ],
};

before(async () => {
  await stub.start();
  const config = testConfig({ MAX_STEPS: '8', MAX_SUBPLAN_DEPTH: '2' });
  const file = path.join(config.dataDir, 'my-agents.json');
  writeFileSync(file, JSON.stringify(AGENTS));
  env = await startTestEnv({ provider: stubProvider(stub.url), config: { ...config, AGENTS_CONFIG: file } });
  runs = new Runs(env.client, env.config);
});
after(async () => {
  await env?.stop();
  await stub.stop();
});

const result = (runId: string) => env.client.workflow.getHandle(runId).result() as Promise<ExecutionState>;
const prompt = (req: StubRequest | undefined) => req?.messages.map((m) => m.content).join('\n') ?? '';
/** The tool names a prompt's system message lists. */
function listedTools(req: StubRequest | undefined): string[] {
  const system = req?.messages[0]?.content ?? '';
  const tools = JSON.parse(system.slice(system.indexOf('Tools:\n') + 'Tools:\n'.length).split('\n\nBlueprints:')[0] ?? '[]') as { name: string }[];
  return tools.map((t) => t.name);
}
const noMisses = () =>
  assert.deepEqual(
    stub.misses.map((m) => [m.goal, m.name]),
    [],
    'the model was asked for a reply the test did not script',
  );

test('a plan step calling agent.researcher runs it as a child workflow; its answer is the observation', async () => {
  const goal = 'how much is six times seven, researched';
  const task = 'compute 6*7';
  stub.script(goal, {
    execution_plan: [{ steps: [toolStep('agent.researcher', { task }, 'ask the researcher'), respondStep] }],
    replan_decision: [cont],
    final_answer: [answer('The researcher says 42.')],
  });
  stub.script(task, {
    // The researcher first tries a tool it may not use, then its own.
    execution_plan: [{ steps: [toolStep('notes_write', { key: 'k', value: 'v' }), toolStep('calculator', { expression: '6*7' }), respondStep] }],
    replan_decision: [cont, cont],
    final_answer: [answer('6*7 = 42')],
  });
  const { runId } = await runs.start({ userId: 'agent-tester', goal });
  const state = await result(runId);
  assert.equal(state.status, 'completed', state.lastError ?? '');
  assert.equal(state.finalAnswer, 'The researcher says 42.');
  const childRunId = `${runId}.s1`;
  assert.deepEqual(
    state.steps.map((s) => [s.id, s.type, s.tool, s.status, s.childRunId]),
    [
      ['s1', 'tool', 'agent.researcher', 'completed', childRunId],
      ['s2', 'respond', undefined, 'completed', undefined],
    ],
  );
  assert.deepEqual(
    state.observations.map((o) => [o.stepId, o.kind, o.content]),
    [['s1', 'tool', '6*7 = 42']],
  );

  // The child is a child workflow of the parent, a run of the agent with its own memory thread.
  const described = await env.client.workflow.getHandle(childRunId).describe();
  assert.equal(described.parentExecution?.workflowId, runId);
  const child = await result(childRunId);
  assert.equal(child.status, 'completed');
  assert.equal(child.goal, task);
  assert.equal(child.parentRunId, runId);
  assert.equal(child.agent?.name, 'researcher');
  assert.equal(child.threadId, `thread_${childRunId}`);
  assert.notEqual(child.threadId, state.threadId);
  // The disallowed tool failed its step with a clear observation; the allowed one ran.
  assert.deepEqual(
    child.observations.map((o) => [o.stepId, o.kind, o.content]),
    [
      ['s1', 'error', 'tool "notes_write" is not allowed for agent "researcher"; its tools are: calculator'],
      ['s2', 'tool', '{"value":42}'],
    ],
  );
  assert.deepEqual(
    child.steps.map((s) => s.status),
    ['failed', 'completed', 'completed'],
  );

  // The parent's planner sees the agent as a tool; the child's prompts carry the instructions and only its tools.
  const parentPlan = stub.requestsFor(goal, 'execution_plan')[0];
  assert.ok(listedTools(parentPlan).includes('agent.researcher'));
  assert.ok(listedTools(parentPlan).includes('notes_write'));
  assert.match(prompt(parentPlan), /Sub-agent: Works figures out; give it one question\./);
  assert.doesNotMatch(prompt(parentPlan), /RESEARCHER-MARKER/);
  // Seed 001's initial state: the child's thread starts from the agent profile (a system and an agent chunk).
  const { memory, close } = await openMemory(env.config);
  try {
    const view = await memory.view(child.threadId ?? '');
    assert.deepEqual(
      view.chunks.slice(0, 3).map((c) => [c.type, c.retention]),
      [
        ['system', 'CRITICAL'],
        ['agent', 'CRITICAL'],
        ['delegation', 'CRITICAL'],
      ],
    );
    assert.match(JSON.stringify(view.chunks[1]?.content), /RESEARCHER-MARKER/);
  } finally {
    await close();
  }
  for (const req of stub.requestsFor(task)) {
    assert.deepEqual(listedTools(req), ['calculator'], `${req.name} lists only the agent's tools`);
    assert.match(prompt(req), /sub-agent "researcher"[\s\S]*RESEARCHER-MARKER/, `${req.name} carries the instructions`);
    // Said once: the prompt takes them from the thread, not again beside it.
    assert.equal(prompt(req).split('RESEARCHER-MARKER').length, 2, `${req.name} carries the instructions once`);
    // The agent's model is asked for; the parent's calls use the worker's.
    assert.equal(req.body.model, 'research-model');
  }
  assert.equal(stub.requestsFor(goal)[0]?.body.model, 'stub-model');
  // The parent's replan after the agent sees its answer.
  assert.match(prompt(stub.requestsFor(goal, 'replan_decision')[0]), /6\*7 = 42/);
  noMisses();
});

test('an unknown agent or a missing task fails the step with an error observation, and the run goes on', async () => {
  const goal = 'call agents badly';
  stub.script(goal, {
    execution_plan: [{ steps: [toolStep('agent.nobody', { task: 'x' }), toolStep('agent.researcher', {}), respondStep] }],
    replan_decision: [cont, cont],
    final_answer: [answer('could not delegate')],
  });
  const { runId } = await runs.start({ userId: 'agent-tester', goal });
  const state = await result(runId);
  assert.equal(state.status, 'completed');
  assert.deepEqual(
    state.steps.map((s) => [s.status, s.childRunId]),
    [
      ['failed', undefined],
      ['failed', undefined],
      ['completed', undefined],
    ],
  );
  assert.equal(state.observations[0]?.content, 'unknown agent "nobody"; the agents are: agent.researcher, agent.organiser');
  assert.match(state.observations[1]?.content ?? '', /^invalid arguments for agent\.researcher: .*task/);
  noMisses();
});

test('a tree run calls a tree agent, which calls a plan agent: each answer returns to its caller', async () => {
  const goal = 'organise the sums';
  const organiserTask = 'sum things up';
  const researcherTask = 'what is 2+3';
  const act = (tool: string, args: Record<string, unknown>) => ({ thought: `call ${tool}`, action: 'tool', tool, args });
  const finish = (result: string) => ({ thought: 'done', action: 'finish', result });
  stub.script(goal, {
    task_tree: [{ name: 'Sums', goal, subtasks: [{ name: 'Delegate', goal: 'have the organiser do it' }] }],
    react_action: [act('agent.organiser', { task: organiserTask }), finish('organised')],
    final_answer: [answer('all organised: 5')],
  });
  stub.script(organiserTask, {
    task_tree: [{ name: 'Sum', goal: organiserTask, subtasks: [{ name: 'Ask', goal: 'ask the researcher' }] }],
    react_action: [act('notes_read', { key: 'x' }), act('agent.researcher', { task: researcherTask }), finish('5')],
    reflection: [{ assessment: 'notes_read is not mine', lesson: 'use my own tools' }],
    final_answer: [answer('the sum is 5')],
  });
  stub.script(researcherTask, {
    execution_plan: [{ steps: [toolStep('calculator', { expression: '2+3' }), respondStep] }],
    replan_decision: [cont],
    final_answer: [answer('2+3 = 5')],
  });
  const { runId } = await runs.start({ userId: 'agent-tester', goal, engine: 'tree' });
  const state = await result(runId);
  assert.equal(state.status, 'completed', state.lastError ?? '');
  assert.equal(state.finalAnswer, 'all organised: 5');
  const call = state.steps.find((s) => s.tool === 'agent.organiser');
  assert.equal(call?.status, 'completed');
  const organiserRunId = call?.childRunId ?? '';
  assert.equal(organiserRunId, `${runId}.${call?.id}`);
  assert.equal(state.observations.find((o) => o.stepId === call?.id)?.content, 'the sum is 5');

  const organiser = await result(organiserRunId);
  assert.equal(organiser.engine, 'tree');
  assert.equal(organiser.agent?.name, 'organiser');
  assert.equal((await env.client.workflow.getHandle(organiserRunId).describe()).parentExecution?.workflowId, runId);
  assert.deepEqual(
    organiser.observations.filter((o) => o.kind === 'error').map((o) => o.content),
    ['tool "notes_read" is not allowed for agent "organiser"; its tools are: calculator, agent.researcher'],
  );
  const nested = organiser.steps.find((s) => s.tool === 'agent.researcher');
  assert.equal(organiser.observations.find((o) => o.stepId === nested?.id)?.content, '2+3 = 5');
  const researcher = await result(nested?.childRunId ?? '');
  assert.equal(researcher.agent?.name, 'researcher');
  assert.equal(researcher.depth, 2);

  const organiserAction = stub.requestsFor(organiserTask, 'react_action')[0];
  assert.deepEqual(listedTools(organiserAction), ['calculator', 'agent.researcher']);
  assert.match(prompt(organiserAction), /ORGANISER-MARKER/);
  assert.ok(listedTools(stub.requestsFor(goal, 'react_action')[0]).includes('agent.organiser'));
  noMisses();
});

/** Waits until `runId` shows a plan review of another run (`reviewIn`), and returns its state. */
const showsReview = (runId: string) =>
  waitFor(`a child's plan review shown on ${runId}`, async () => {
    const s = await runs.get(runId);
    return s.status === 'waiting_review' && s.reviewIn ? s : null;
  });
const firstReview = (runId: string) =>
  waitFor(`the plan of ${runId} under review`, async () => {
    const s = await runs.get(runId);
    return s.status === 'waiting_review' && !s.reviewIn ? s : null;
  });

test("under review, a group run's mid-run subtree is reviewed through the root: the root shows it (reviewIn), the decision sent there reaches the group", async () => {
  const goal = 'organise the team offsite';
  const finish = (result: string) => ({ thought: 'done', action: 'finish', result });
  stub.script(goal, {
    task_tree: [
      {
        name: 'Offsite',
        goal,
        subtasks: [
          {
            name: 'Venue',
            goal: 'Find a venue',
            subtasks: [
              { name: 'Shortlist', goal: 'Shortlist venues' },
              { name: 'Book', goal: 'Book one' },
            ],
          },
        ],
      },
      {
        name: 'Shortlist',
        goal: 'Shortlist venues',
        subtasks: [
          { name: 'City', goal: 'Venues in the city' },
          { name: 'Country', goal: 'Venues in the country' },
        ],
      },
    ],
    react_action: [{ thought: 'two kinds of places', action: 'plan', goal: 'split by place' }, finish('3 in town'), finish('2 outside'), finish('booked the barn')],
    final_answer: [answer('The barn is booked.')],
  });
  const { runId } = await runs.start({ userId: 'agent-tester', goal, engine: 'tree', review: true });
  const first = await firstReview(runId);
  await runs.review(runId, { decision: 'approve', planId: first.planId ?? '' });
  // 1-1 is a group: it runs in <run>.t1-1, where 1-1-1 plans; that subtree waits for review there, and the root shows it.
  const childId = `${runId}.t1-1`;
  const shown = await showsReview(runId);
  const child = await runs.get(childId);
  assert.equal(child.status, 'waiting_review');
  assert.deepEqual(shown.reviewIn, { runId: childId, planId: child.planId });
  assert.equal(shown.planId, first.planId, "the root's own plan is unchanged");
  // A stale plan id is refused by the group's run, as a review of a run's own plan is.
  await assert.rejects(runs.review(runId, { decision: 'approve', planId: first.planId ?? '' }), /not waiting|plan/);
  await runs.review(runId, { decision: 'approve', planId: shown.reviewIn?.planId ?? '' });
  const done = await result(runId);
  assert.equal(done.status, 'completed', done.lastError ?? '');
  assert.equal(done.reviewIn ?? null, null);
  assert.equal(done.finalAnswer, 'The barn is booked.');
  assert.deepEqual(
    (await result(childId)).tree?.subtasks[0]?.subtasks[0]?.subtasks.map((t) => `${t.index} ${t.result}`),
    ['1-1-1-1 3 in town', '1-1-1-2 2 outside'],
  );
  noMisses();
});

test("under review, a tree sub-agent's plan is reviewed through its caller: shown on the calling run, decided there", async () => {
  const goal = 'organise the reviewed sums';
  const organiserTask = 'sum the reviewed things';
  const finish = (result: string) => ({ thought: 'done', action: 'finish', result });
  stub.script(goal, {
    task_tree: [{ name: 'Sums', goal, subtasks: [{ name: 'Delegate', goal: 'have the organiser do it' }] }],
    react_action: [{ thought: 'delegate', action: 'tool', tool: 'agent.organiser', args: { task: organiserTask } }, finish('organised')],
    final_answer: [answer('all organised')],
  });
  stub.script(organiserTask, {
    task_tree: [{ name: 'Sum', goal: organiserTask, subtasks: [{ name: 'Add', goal: 'add them' }] }],
    react_action: [finish('7')],
    final_answer: [answer('the sum is 7')],
  });
  const { runId } = await runs.start({ userId: 'agent-tester', goal, engine: 'tree', review: true });
  await runs.review(runId, { decision: 'approve', planId: (await firstReview(runId)).planId ?? '' });
  const shown = await showsReview(runId);
  const organiser = await runs.get(shown.reviewIn?.runId ?? '');
  assert.equal(organiser.agent?.name, 'organiser');
  assert.equal(organiser.status, 'waiting_review');
  await runs.review(runId, { decision: 'approve', planId: shown.reviewIn?.planId ?? '' });
  const done = await result(runId);
  assert.equal(done.status, 'completed', done.lastError ?? '');
  assert.ok(done.observations.some((o) => o.content === 'the sum is 7'));
  noMisses();
});
