/** What a finished step writes into its run's memory thread: seed 004's step records. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { appendStep, applyPlan, initialState, recordReply, withTree, type PlanStep } from '../../src/planning/execution-state';
import { eventChunks, FAILED_RESULT_PRIORITY, stepChunks } from '../../src/memory/run-chunks';
import { buildTree } from '../../src/planning/task-tree';

const at = new Date('2025-01-01T00:00:00.000Z');
const state = applyPlan(
  initialState({ runId: 'run-1', userId: 'ada', goal: 'What is 6*7?', model: 'offline-demo' }, at),
  [
    { type: 'tool', description: 'Multiply the numbers', tool: 'calculator', args: { expression: '6*7' } },
    { type: 'subplan', description: 'Delegate the check', goal: 'check 42' },
    { type: 'respond', description: 'Answer' },
  ],
  at,
);
const [tool, subplan] = state.steps as [PlanStep, PlanStep];
const data = (chunks: ReturnType<typeof stepChunks>) => chunks.map((c) => [c.type, c.content.kind === 'json' ? c.content.data : c.content, c.provenance?.stepId]);

test('a tool step is a record of its thought, action, result, status and time, both halves marked with the step', () => {
  const chunks = stepChunks(state, tool, { kind: 'tool', content: '{"value":42}', at: '2025-01-01T00:00:01.000Z', seconds: 0.25 });
  assert.deepEqual(data(chunks), [
    ['action', { step: 's1', thought: 'Multiply the numbers', tool: 'calculator', args: { expression: '6*7' } }, 's1'],
    ['action_response', { step: 's1', result: { value: 42 }, status: 'success', at: '2025-01-01T00:00:01.000Z', seconds: 0.25 }, 's1'],
  ]);
});

test('a failed tool step records its error with status error; a record without a known time has none', () => {
  const [, response] = stepChunks(state, tool, { kind: 'error', content: 'division by zero' });
  assert.deepEqual(response?.content, { kind: 'json', data: { step: 's1', error: 'division by zero', status: 'error' } });
  // Ranked above the agent's replies and actions, so a prompt short of room keeps it longer than them.
  assert.equal(response?.priority, FAILED_RESULT_PRIORITY);
  assert.equal(stepChunks(state, tool, { kind: 'tool', content: '{"value":42}' })[1]?.priority, undefined, 'a success keeps the type default');
});

test('a sub-plan is a step record too: its thought and goal, then the child’s answer with status and time', () => {
  const chunks = stepChunks(state, subplan, { kind: 'subplan', content: '42 is right', at: '2025-01-01T00:00:05.000Z' });
  assert.deepEqual(data(chunks), [
    ['action', { step: 's2', thought: 'Delegate the check', subplan: 'check 42', childRunId: undefined }, 's2'],
    ['action_response', { step: 's2', answer: '42 is right', status: 'success', at: '2025-01-01T00:00:05.000Z' }, 's2'],
  ]);
});

test("a tree run's events since a point: the plan when new, then a question with its reply and a task's result as step records", () => {
  const tree = withTree(
    initialState({ runId: 'run-t', userId: 'ada', goal: 'Trip', model: 'm' }, at),
    buildTree({ name: 'Trip', goal: 'Plan it', subtasks: [{ name: 'Ask', goal: 'who comes' }] }),
    at,
    { planId: 'run-t#tree1', status: 'running' },
  );
  const asked = appendStep(tree, { type: 'ask_user', description: '[1-1] who?', question: 'Who comes along?' }, 'running', null, at, { task: '1-1' });
  const replied = recordReply(asked, 's1', 'My sister is Ana.', at);
  const done = appendStep(replied, { type: 'reason', description: '[1-1] done' }, 'completed', { kind: 'reason', content: 'task 1-1 finished: Ana comes' }, at, { task: '1-1' });
  const chunks = eventChunks(done, 0, true);
  assert.deepEqual(
    chunks.map((c) => c.type),
    ['workflow', 'response', 'user', 'thinking'],
  );
  assert.deepEqual(chunks[0]?.content, { kind: 'json', data: { kind: 'task_tree', planId: 'run-t#tree1', progress: done.progress } });
  assert.deepEqual(
    chunks.slice(1).map((c) => (c.content.kind === 'text' ? c.content.text : null)),
    ['Who comes along?', 'My sister is Ana.', 'task 1-1 finished: Ana comes'],
  );
  // From the second observation on, without the plan: only the task's result.
  assert.deepEqual(
    eventChunks(done, 1, false).map((c) => c.type),
    ['thinking'],
  );
});
