/** The progress list shown as the workflow's current details in the Temporal Web UI, and step summaries. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  applyPlan,
  cancel,
  complete,
  fail,
  finishStep,
  initialState,
  replaceRemaining,
  startStep,
  type ExecutionState,
} from '../../src/planning/execution-state';
import { renderProgress, stepSummary } from '../../src/planning/progress';

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

test('a plan renders one line per step with its mark, index, type and description under a status headline', () => {
  assert.equal(
    renderProgress(running()),
    [
      '**running** — What is 40+2? (model: offline-demo)',
      '[x] 1. tool: Add the numbers',
      '[~] 2. reason: Check the sum',
      '[ ] 3. respond: Answer the user',
    ].join('\n'),
  );
});

test('a run still planning shows only its headline, and no model label when none is known yet', () => {
  const s = initialState({ runId: 'run-1', userId: 'ada', goal: 'Plan a trip', model: '' }, at);
  assert.equal(renderProgress(s), '**planning** — Plan a trip');
});

test('a completed run ends with its answer; skipped and replaced steps are marked [-]', () => {
  const checked = finishStep(running(), 's2', 'completed', { kind: 'reason', content: 'fine' }, at);
  const s = complete(replaceRemaining(checked, [{ type: 'respond', description: 'Reply now' }], at), '40+2 = 42', at);
  const lines = renderProgress(s).split('\n');
  assert.equal(lines[0], '**completed** — What is 40+2? (model: offline-demo)');
  assert.deepEqual(lines.slice(1), [
    '[x] 1. tool: Add the numbers',
    '[x] 2. reason: Check the sum',
    '[-] 3. respond: Answer the user',
    '[-] 4. respond: Reply now',
    'Answer: 40+2 = 42',
  ]);
});

test('a failed run marks the failed step [!] and ends with its error; a cancelled one skips what was left', () => {
  const failed = renderProgress(fail(running(), 'model unavailable', at)).split('\n');
  assert.equal(failed[0], '**failed** — What is 40+2? (model: offline-demo)');
  assert.equal(failed[2], '[!] 2. reason: Check the sum');
  assert.equal(failed.at(-1), 'Error: model unavailable');

  const cancelled = renderProgress(cancel(running(), at)).split('\n');
  assert.equal(cancelled[0], '**cancelled** — What is 40+2? (model: offline-demo)');
  assert.deepEqual(cancelled.slice(2), ['[-] 2. reason: Check the sum', '[-] 3. respond: Answer the user']);
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
