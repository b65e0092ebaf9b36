/** Forks, pure (src/planning/fork.ts): where a fork starts, and its first state with a person's edits. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as model from '../../src/planning/execution-state';
import { editsProblem, forkState, forkVersion } from '../../src/planning/fork';

const T = new Date('2026-01-01T00:00:00Z');
function history(): model.ExecutionState[] {
  const states: model.ExecutionState[] = [];
  let s = model.initialState({ runId: 'run-a', userId: 'ada', goal: 'sum', model: 'm' }, T);
  states.push(s);
  s = model.applyPlan(
    s,
    [
      { type: 'tool', description: 'add', tool: 'calculator', args: { expression: '1+1' } },
      { type: 'tool', description: 'mul', tool: 'calculator', args: { expression: '2*2' } },
      { type: 'respond', description: 'answer' },
    ],
    T,
  );
  states.push(s);
  s = model.startStep(s, 's1', T);
  states.push(s);
  s = model.finishStep(s, 's1', 'completed', { kind: 'tool', content: '2' }, T);
  states.push(s);
  s = model.startStep(s, 's2', T);
  states.push(s);
  return states;
}

test('the fork point: a version the run had, or the version just before a step ran; others are never reached or unknown', () => {
  const states = history();
  assert.equal(forkVersion(states, { version: 3 }), 3);
  assert.deepEqual(forkVersion(states, { version: 9 }), { kind: 'never_reached', message: 'the run never had version 9 (its last is 5)' });
  assert.equal(forkVersion(states, { stepId: 's2' }), 4);
  assert.equal(forkVersion(states, { stepId: 's1' }), 2);
  assert.equal((forkVersion(states, { stepId: 's3' }) as { kind: string }).kind, 'never_reached');
  assert.equal((forkVersion(states, { stepId: 's7' }) as { kind: string }).kind, 'unknown');
});

test('the fork’s first state: a new run id, forkedFrom, done steps kept, the step under way pending again, edits applied', () => {
  const at = history()[4] as model.ExecutionState;
  assert.equal(editsProblem(at, { args: [{ stepId: 's1', args: {} }] }), 'step s1 ran before the fork point: edit its observation instead');
  assert.equal(editsProblem(at, { observations: [{ stepId: 's2', content: 'x' }] }), 'step s2 has no observation at the fork point');
  const fork = forkState(at, 'run-b', { goal: 'sum again', args: [{ stepId: 's2', args: { expression: '3*3' } }], observations: [{ stepId: 's1', content: '2 (checked)' }] }, T);
  assert.equal(fork.runId, 'run-b');
  assert.deepEqual(fork.forkedFrom, { runId: 'run-a', version: 5 });
  assert.equal(fork.version, 1);
  assert.equal(fork.goal, 'sum again');
  assert.deepEqual(
    fork.steps.map((s) => [s.id, s.status]),
    [
      ['s1', 'completed'],
      ['s2', 'pending'],
      ['s3', 'pending'],
    ],
  );
  assert.deepEqual(fork.steps[1]?.args, { expression: '3*3' });
  assert.equal(fork.observations[0]?.content, '2 (checked)');
  assert.equal(fork.threadId, null);
  const replanned = forkState(at, 'run-c', { remainingSteps: [{ type: 'respond', description: 'just answer' }] }, T);
  assert.deepEqual(
    replanned.steps.map((s) => s.status),
    ['completed', 'replaced', 'replaced', 'pending'],
  );
});
