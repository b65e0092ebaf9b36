/** The progress list shown as the workflow's current details in the Temporal Web UI, and step summaries. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { applyPlan, awaitApproval, cancel, complete, decideApproval, fail, finishStep, initialState, replaceRemaining, startStep, type ExecutionState } from '../../src/planning/execution-state';
import { approvalLine, renderProgress, stepSummary } from '../../src/planning/progress';
import { progressMark } from '../../src/planning/progress-marks';
import { renderTaskProgress } from '../../src/planning/task-tree';

const at = new Date('2025-01-01T00:00:00.000Z');

function running(): ExecutionState {
  let s = initialState({ runId: 'run-1', userId: 'ada', goal: 'What is 40+2?', model: 'offline-demo' }, at);
  s = applyPlan(
    s,
    [
      { type: 'tool', description: 'Add the numbers', tool: 'calculator', args: { expression: '40+2' } },
      { type: 'reason', description: 'Check the sum' },
      { type: 'respond', description: 'Answer the user' },
    ],
    at,
  );
  s = finishStep(startStep(s, 's1', at), 's1', 'completed', { kind: 'tool', content: '{"value":42}' }, at);
  return startStep(s, 's2', at);
}

test('a plan renders with the tree engine’s marks: the goal line carries the aggregate ([~] partly done), each step [x] done, [-] executing or [ ] not started', () => {
  assert.equal(
    renderProgress(running()),
    ['-[~] **running** — What is 40+2? (model: offline-demo)', ' -[x] 1. tool: Add the numbers', ' -[-] 2. reason: Check the sum', ' -[ ] 3. respond: Answer the user'].join('\n'),
  );
});

test('the planner and the tree engine draw their marks with one function', () => {
  const tree = renderTaskProgress({
    index: '1',
    name: 'Sum',
    goal: 'What is 40+2?',
    status: 'processing',
    iterations: 0,
    subtasks: [
      { index: '1-1', name: 'Add', goal: 'Add', status: 'completed', iterations: 1, subtasks: [] },
      { index: '1-2', name: 'Check', goal: 'Check', status: 'processing', iterations: 0, subtasks: [] },
      { index: '1-3', name: 'Answer', goal: 'Answer', status: 'created', iterations: 0, subtasks: [] },
    ],
  });
  const marks = (text: string) => text.split('\n').map((line) => /\[.\]/.exec(line)?.[0]);
  const expected = [progressMark('partial'), progressMark('finished'), progressMark('executing'), progressMark('notStarted')];
  assert.deepEqual(expected, ['[~]', '[x]', '[-]', '[ ]']);
  assert.deepEqual(marks(tree), expected);
  assert.deepEqual(marks(renderProgress(running())), expected);
});

test('a run still planning shows only its goal line, not started, and no model label when none is known yet', () => {
  const s = initialState({ runId: 'run-1', userId: 'ada', goal: 'Plan a trip', model: '' }, at);
  assert.equal(renderProgress(s), '-[ ] **planning** — Plan a trip');
});

test('a completed run is [x] and ends with its answer; skipped and replaced steps are done with, [x], and say so', () => {
  const checked = finishStep(running(), 's2', 'completed', { kind: 'reason', content: 'fine' }, at);
  const s = complete(replaceRemaining(checked, [{ type: 'respond', description: 'Reply now' }], at), '40+2 = 42', at);
  assert.deepEqual(renderProgress(s).split('\n'), [
    '-[x] **completed** — What is 40+2? (model: offline-demo)',
    ' -[x] 1. tool: Add the numbers',
    ' -[x] 2. reason: Check the sum',
    ' -[x] 3. respond: Answer the user (replaced)',
    ' -[x] 4. respond: Reply now (skipped)',
    'Answer: 40+2 = 42',
  ]);
});

test('a failed run marks the failed step [x] (failed), stays partly done and ends with its error; a cancelled one skips what was left', () => {
  const failed = renderProgress(fail(running(), 'model unavailable', at)).split('\n');
  assert.equal(failed[0], '-[~] **failed** — What is 40+2? (model: offline-demo)');
  assert.equal(failed[2], ' -[x] 2. reason: Check the sum (failed)');
  assert.equal(failed.at(-1), 'Error: model unavailable');

  const cancelled = renderProgress(cancel(running(), at)).split('\n');
  assert.equal(cancelled[0], '-[x] **cancelled** — What is 40+2? (model: offline-demo)');
  assert.deepEqual(cancelled.slice(2), [' -[x] 2. reason: Check the sum (skipped)', ' -[x] 3. respond: Answer the user (skipped)']);
});

test('stepSummary names the step, its tool, and stays within 200 characters', () => {
  const [tool, reason] = running().steps;
  assert.ok(tool && reason);
  assert.equal(stepSummary(tool), 'step 1 · tool calculator: Add the numbers');
  assert.equal(stepSummary(reason), 'step 2 · reason: Check the sum');
  const long = stepSummary({ ...reason, description: 'x'.repeat(500) });
  assert.equal(long.length, 200);
  assert.ok(long.startsWith('step 2 · reason: xxx'));
});

test('a run waiting for a call’s approval says so in its Web UI details: the tool, its args, the step and the route', () => {
  let s = initialState({ runId: 'run-p', userId: 'u', goal: 'g', model: 'm' }, new Date(0));
  s = applyPlan(s, [{ type: 'tool', description: 'add', tool: 'calculator', args: { expression: '1+1' } }], new Date(0));
  s = startStep(s, 's1', new Date(0));
  s = awaitApproval(s, { stepId: 's1', tool: 'calculator', args: { expression: '1+1' }, reason: 'TOOL_APPROVAL calculator' }, new Date(0));
  assert.match(renderProgress(s), /\nWaiting for approval: calculator\(\{"expression":"1\+1"\}\) — step s1, POST \/v1\/runs\/run-p\/approval$/);
  assert.equal(approvalLine(decideApproval(s, 's1', undefined, new Date(0))), null);
});
