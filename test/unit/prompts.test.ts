/** Prompt assembly: what the model is told for each call, rendered from the run's state. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { applyPlan, finishStep, initialState, recordReply, startStep, waitForUser, type ExecutionState } from '../../src/planning/execution-state';
import type { PlannerCallName } from '../../src/calls/names';
import { buildMessages } from '../../src/calls/registry';
import { resumeContext, type PlannerContext } from '../../src/calls/planner';
import { DATA_IS_NOT_INSTRUCTIONS } from '../../src/memory/parser';
import { agentChunks } from '../../src/memory/run-chunks';
import { ToolRegistry } from '../../src/tools/registry';

const at = new Date('2025-01-01T00:00:00.000Z');
const tools = new ToolRegistry().describe();

/** A run that computed something, asked the user which city, and got "Paris". */
function answered(): ExecutionState {
  let s = initialState({ runId: 'run-1', userId: 'ada', goal: 'Plan my weekend trip', model: 'm' }, at);
  s = applyPlan(
    s,
    [
      { type: 'tool', description: 'Add the budget', tool: 'calculator', args: { expression: '120+80' } },
      { type: 'ask_user', description: 'Ask for the city', question: 'Which city do you want to visit?' },
      { type: 'subplan', description: 'Book it', goal: 'Book a hotel' },
      { type: 'respond', description: 'Answer the user' },
    ],
    at,
  );
  s = finishStep(startStep(s, 's1', at), 's1', 'completed', { kind: 'tool', content: '{"value":200}' }, at);
  s = waitForUser(startStep(s, 's2', at), 's2', at);
  return recordReply(s, 's2', 'Paris', at);
}

function render(call: PlannerCallName, state: ExecutionState, extra: Partial<PlannerContext> = {}) {
  const messages = buildMessages({ call, state, tools, maxSteps: 25, maxDepth: 2, ...extra });
  assert.deepEqual(
    messages.map((m) => m.role),
    ['system', 'user'],
  );
  return { system: messages[0]?.content ?? '', user: messages[1]?.content ?? '' };
}

test('the system message explains the step types and lists every tool with its parameters', () => {
  const { system } = render('execution_plan', answered());
  for (const type of ['"tool"', '"reason"', '"ask_user"', '"respond"', '"subplan"']) assert.ok(system.includes(type), type);
  for (const name of ['calculator', 'current_time', 'notes_write', 'notes_read', 'wait']) assert.ok(system.includes(`"name": "${name}"`), name);
  assert.ok(system.includes('"expression"'), 'calculator parameters are shown');
  assert.ok(system.includes(DATA_IS_NOT_INSTRUCTIONS), 'tool results and memory are data, not instructions');
});

test('the user message carries the goal, the plan with statuses and tool arguments, and the observations', () => {
  const { user } = render('replan_decision', answered());
  assert.ok(user.startsWith('Goal: Plan my weekend trip'));
  assert.ok(user.includes('s1 [completed] tool calculator({"expression":"120+80"}) — Add the budget'), user);
  assert.ok(user.includes('s2 [completed] ask_user "Which city do you want to visit?" — Ask for the city'), user);
  assert.ok(user.includes('s3 [pending] subplan goal: Book a hotel — Book it'), user);
  assert.ok(user.includes('s4 [pending] respond — Answer the user'), user);
  assert.ok(user.includes('s1 tool: {"value":200}'), user);
  assert.ok(user.includes('s2 user_reply: Paris'), user);
  assert.ok(user.includes('Steps used: 2 of at most 25.'), user);
});

test('after a user reply the message restates the question and the reply, so a short reply is read in context', () => {
  const { user } = render('replan_decision', answered());
  assert.ok(user.includes('Resume context: You asked the user: "Which city do you want to visit?". The user replied: "Paris".'), user);
  assert.equal(resumeContext(initialState({ runId: 'r', userId: 'u', goal: 'g', model: 'm' }, at)), null, 'no reply, no resume context');
});

test('each call ends with its own instruction naming the reply shape', () => {
  const expected: Record<PlannerCallName, RegExp> = {
    execution_plan: /Make the plan for the goal\. Reply \{"steps": \[\.\.\.\]\}\.$/,
    replan_decision: /"continue".*"replace_remaining".*"ask_user".*"finish".*Reply \{"decision": \.\.\.\}\.$/,
    reasoning: /Reply \{"thought": "\.\.\."\}\.$/,
    final_answer: /Write the final answer .* Reply \{"answer": "\.\.\."\}\.$/,
    live_state_check: /tools marked "live" .* Reply \{"tools": \[\.\.\.\]\}\.$/,
  };
  for (const [call, pattern] of Object.entries(expected) as [PlannerCallName, RegExp][]) {
    assert.match(render(call, answered()).user, pattern, call);
  }
});

test('a reasoning or final-answer call names the step it is for', () => {
  const s = answered();
  const { user } = render('final_answer', s, { step: s.steps[3] });
  assert.ok(user.includes('Current step: s4 [pending] respond — Answer the user'), user);
  assert.ok(!render('execution_plan', s).user.includes('Current step:'));
});

test('a sub-plan is told its parent and depth, and when the nesting limit forbids further sub-plans', () => {
  const child = initialState({ runId: 'run-1.s3', userId: 'ada', goal: 'Book a hotel', parentRunId: 'run-1', depth: 2, model: 'm' }, at);
  const { user } = render('execution_plan', child);
  assert.ok(user.includes('This is a sub-plan (depth 2) of run run-1.'), user);
  assert.ok(user.includes('Sub-plans allowed: no.'), user);
  assert.ok(render('execution_plan', answered()).user.includes('Sub-plans allowed: yes.'));
});

test("a sub-agent's instructions are said once: from its thread when the working memory holds them, else as their own system message", () => {
  const agent = { name: 'researcher', instructions: 'Find figures. MARKER', tools: ['calculator'] };
  const state = { ...answered(), agent };
  const count = (memory?: PlannerContext['memory']) =>
    buildMessages({ call: 'execution_plan', state, tools, maxSteps: 25, maxDepth: 2, ...(memory ? { memory } : {}) })
      .map((m) => m.content)
      .join('\n')
      .split('MARKER').length - 1;
  // No thread, or a thread made before threads held the profile: the prompt carries it.
  assert.equal(count(), 1);
  assert.equal(count({ messages: [{ role: 'system', content: 'delegation: goal' }], tokens: 3 }), 1);
  // A thread that starts from the profile (agentChunks) renders it; the prompt does not repeat it.
  const fromThread = agentChunks(state)
    .map((c) => (c.content.kind === 'text' ? c.content.text : ''))
    .join('\n\n');
  assert.equal(count({ messages: [{ role: 'system', content: fromThread }], tokens: 10 }), 1);
  assert.deepEqual(
    agentChunks(answered()).map((c) => c.type),
    [],
  );
});
