/** ExecutionState and its pure transitions: what a run's state looks like after each thing that can happen to it. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import {
  applyPlan,
  cancel,
  complete,
  type ExecutionState,
  fail,
  finishStep,
  initialState,
  insertStepAfterCurrent,
  isTerminal,
  MAX_OBSERVATION_CHARS,
  nextPendingStep,
  pendingQuestion,
  recordReply,
  replaceRemaining,
  startStep,
  waitForUser,
} from '../../src/planning/execution-state';
import type { StepSpec } from '../../src/planning/step-spec';

const CALC: StepSpec = { type: 'tool', description: 'Add', tool: 'calculator', args: { expression: '40+2' } };
const THINK: StepSpec = { type: 'reason', description: 'Think it over' };
const ASK: StepSpec = { type: 'ask_user', description: 'Ask for the city', question: 'Which city?' };
const SUB: StepSpec = { type: 'subplan', description: 'Delegate', goal: 'Find the weather' };
const RESPOND: StepSpec = { type: 'respond', description: 'Answer the user' };

/** A clock that moves one second per call, so every transition has its own timestamp. */
function clock(): () => Date {
  let t = Date.UTC(2025, 0, 1);
  return () => new Date((t += 1000));
}

function fresh(now: Date): ExecutionState {
  return initialState({ runId: 'run-ada-1', userId: 'ada', goal: 'What is 40+2?', model: 'offline-demo' }, now);
}

/** Freezes a state all the way down, so any in-place mutation by a transition throws. */
function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

const ids = (s: ExecutionState) => s.steps.map((x) => x.id);
const statuses = (s: ExecutionState) => s.steps.map((x) => `${x.id}:${x.status}`);

test('initialState: a planning run with no plan, the given identity, version 1 and the clock time', () => {
  const now = new Date('2025-03-04T05:06:07.000Z');
  const s = fresh(now);
  assert.deepEqual(s, {
    runId: 'run-ada-1',
    sessionId: null,
    userId: 'ada',
    goal: 'What is 40+2?',
    status: 'planning',
    planId: null,
    steps: [],
    currentStepId: null,
    observations: [],
    finalAnswer: null,
    lastError: null,
    parentRunId: null,
    updatedAt: '2025-03-04T05:06:07.000Z',
    depth: 0,
    model: 'offline-demo',
    version: 1,
    threadId: null,
  });
  const child = initialState({ runId: 'run-ada-1.s2', userId: 'ada', goal: 'g', sessionId: 'sess-1', parentRunId: 'run-ada-1', depth: 1, model: 'm' }, now);
  assert.equal(child.sessionId, 'sess-1');
  assert.equal(child.parentRunId, 'run-ada-1');
  assert.equal(child.depth, 1);
});

test('applyPlan: steps get ids s1.., 1-based indexes, status pending; the run is running under plan 1', () => {
  const now = clock();
  const s = applyPlan(fresh(now()), [CALC, ASK, SUB, RESPOND], now());
  assert.equal(s.status, 'running');
  assert.equal(s.planId, 'run-ada-1#plan1');
  assert.deepEqual(s.steps, [
    { id: 's1', index: 1, type: 'tool', description: 'Add', status: 'pending', tool: 'calculator', args: { expression: '40+2' } },
    { id: 's2', index: 2, type: 'ask_user', description: 'Ask for the city', status: 'pending', question: 'Which city?' },
    { id: 's3', index: 3, type: 'subplan', description: 'Delegate', status: 'pending', goal: 'Find the weather' },
    { id: 's4', index: 4, type: 'respond', description: 'Answer the user', status: 'pending' },
  ]);
  // Absent optional fields are absent, not undefined, so the wire JSON stays minimal.
  assert.deepEqual(Object.keys(s.steps[3] ?? {}).sort(), ['description', 'id', 'index', 'status', 'type']);
  assert.equal(nextPendingStep(s)?.id, 's1');
});

test('startStep and finishStep: the step runs, then completes or fails, with its observation recorded', () => {
  const now = clock();
  let s = applyPlan(fresh(now()), [CALC, THINK, RESPOND], now());
  const t1 = now();
  s = startStep(s, 's1', t1);
  assert.equal(s.currentStepId, 's1');
  assert.deepEqual(statuses(s), ['s1:running', 's2:pending', 's3:pending']);

  const t2 = now();
  s = finishStep(s, 's1', 'completed', { kind: 'tool', content: '{"value":42}' }, t2);
  assert.deepEqual(statuses(s), ['s1:completed', 's2:pending', 's3:pending']);
  assert.deepEqual(s.observations, [{ stepId: 's1', kind: 'tool', content: '{"value":42}', at: t2.toISOString() }]);
  assert.equal(nextPendingStep(s)?.id, 's2');

  s = startStep(s, 's2', now());
  s = finishStep(s, 's2', 'failed', { kind: 'error', content: 'model refused' }, now());
  assert.deepEqual(statuses(s), ['s1:completed', 's2:failed', 's3:pending']);
  assert.deepEqual(
    s.observations.map((o) => [o.stepId, o.kind, o.content]),
    [
      ['s1', 'tool', '{"value":42}'],
      ['s2', 'error', 'model refused'],
    ],
  );

  // A respond step finishes without an observation of its own.
  s = startStep(s, 's3', now());
  s = finishStep(s, 's3', 'completed', null, now());
  assert.equal(s.observations.length, 2);
  assert.equal(nextPendingStep(s), undefined);
});

test('startStep records extra fields such as a sub-plan child run id', () => {
  const now = clock();
  const s = startStep(applyPlan(fresh(now()), [SUB, RESPOND], now()), 's1', now(), { childRunId: 'run-ada-1.s1' });
  assert.equal(s.steps[0]?.childRunId, 'run-ada-1.s1');
  assert.equal(s.steps[0]?.status, 'running');
});

test('replaceRemaining: pending steps become replaced, new steps are appended with fresh ids, the plan number increments', () => {
  const now = clock();
  let s = applyPlan(fresh(now()), [CALC, THINK, RESPOND], now());
  s = startStep(s, 's1', now());
  s = finishStep(s, 's1', 'completed', { kind: 'tool', content: '{"value":42}' }, now());
  const doneStep = s.steps[0];

  s = replaceRemaining(s, [ASK, RESPOND], now());
  assert.equal(s.planId, 'run-ada-1#plan2');
  assert.deepEqual(statuses(s), ['s1:completed', 's2:replaced', 's3:replaced', 's4:pending', 's5:pending']);
  assert.deepEqual(
    s.steps.map((x) => x.index),
    [1, 2, 3, 4, 5],
  );
  assert.deepEqual(s.steps[0], doneStep, 'a completed step is untouched');
  assert.equal(s.steps[3]?.question, 'Which city?');
  assert.equal(nextPendingStep(s)?.id, 's4');

  s = replaceRemaining(s, [THINK], now());
  assert.equal(s.planId, 'run-ada-1#plan3');
  assert.deepEqual(statuses(s), ['s1:completed', 's2:replaced', 's3:replaced', 's4:replaced', 's5:replaced', 's6:pending']);
  assert.equal(new Set(ids(s)).size, s.steps.length, 'ids are unique');
});

test('insertStepAfterCurrent: the new step comes before the remaining pending steps; ids stay unique, indexes are positions', () => {
  const now = clock();
  let s = applyPlan(fresh(now()), [CALC, THINK, RESPOND], now());
  s = startStep(s, 's1', now());
  s = finishStep(s, 's1', 'completed', { kind: 'tool', content: '{"value":42}' }, now());

  s = insertStepAfterCurrent(s, ASK, now());
  assert.deepEqual(ids(s), ['s1', 's4', 's2', 's3']);
  assert.deepEqual(
    s.steps.map((x) => x.index),
    [1, 2, 3, 4],
  );
  assert.deepEqual(s.steps[1], { id: 's4', index: 2, type: 'ask_user', description: 'Ask for the city', status: 'pending', question: 'Which city?' });
  assert.equal(nextPendingStep(s)?.id, 's4', 'the inserted step runs next');

  // After a replacement the inserted id must still be new.
  s = replaceRemaining(s, [THINK, RESPOND], now());
  s = insertStepAfterCurrent(s, ASK, now());
  assert.equal(new Set(ids(s)).size, s.steps.length, `ids not unique: ${ids(s).join(',')}`);
  assert.deepEqual(
    s.steps.map((x) => x.index),
    s.steps.map((_, i) => i + 1),
  );
  assert.equal(nextPendingStep(s)?.type, 'ask_user');
});

test('waitForUser, pendingQuestion and recordReply: the run waits on its question, then records the reply and resumes', () => {
  const now = clock();
  let s = applyPlan(fresh(now()), [ASK, RESPOND], now());
  assert.equal(pendingQuestion(s), null, 'not waiting yet');
  s = startStep(s, 's1', now());
  s = waitForUser(s, 's1', now());
  assert.equal(s.status, 'waiting_user');
  assert.equal(s.currentStepId, 's1');
  assert.equal(pendingQuestion(s), 'Which city?');

  const at = now();
  s = recordReply(s, 's1', 'Paris', at);
  assert.equal(s.status, 'running');
  assert.equal(pendingQuestion(s), null);
  assert.deepEqual(statuses(s), ['s1:completed', 's2:pending']);
  assert.deepEqual(s.observations, [{ stepId: 's1', kind: 'user_reply', content: 'Paris', at: at.toISOString() }]);
});

test('complete: the answer is kept, steps never reached are skipped, finished steps keep their status', () => {
  const now = clock();
  let s = applyPlan(fresh(now()), [CALC, THINK, RESPOND], now());
  s = startStep(s, 's1', now());
  s = finishStep(s, 's1', 'completed', { kind: 'tool', content: '{"value":42}' }, now());
  s = complete(s, '40+2 = 42', now());
  assert.equal(s.status, 'completed');
  assert.ok(isTerminal(s.status));
  assert.equal(s.finalAnswer, '40+2 = 42');
  assert.equal(s.currentStepId, null);
  assert.deepEqual(statuses(s), ['s1:completed', 's2:skipped', 's3:skipped']);
});

test('fail: the running step fails, the error is kept, later steps are left as planned', () => {
  const now = clock();
  let s = applyPlan(fresh(now()), [CALC, THINK], now());
  s = startStep(s, 's1', now());
  s = fail(s, 'model unavailable (gave up after 5 attempts)', now());
  assert.equal(s.status, 'failed');
  assert.ok(isTerminal(s.status));
  assert.equal(s.lastError, 'model unavailable (gave up after 5 attempts)');
  assert.equal(s.currentStepId, null);
  assert.deepEqual(statuses(s), ['s1:failed', 's2:pending']);
  assert.equal(s.finalAnswer, null);
});

test('cancel: running and pending steps are skipped, finished ones kept, the run is cancelled', () => {
  const now = clock();
  let s = applyPlan(fresh(now()), [CALC, ASK, RESPOND], now());
  s = startStep(s, 's1', now());
  s = finishStep(s, 's1', 'completed', { kind: 'tool', content: '{"value":42}' }, now());
  s = startStep(s, 's2', now());
  s = waitForUser(s, 's2', now());
  s = cancel(s, now());
  assert.equal(s.status, 'cancelled');
  assert.ok(isTerminal(s.status));
  assert.equal(s.currentStepId, null);
  assert.equal(pendingQuestion(s), null, 'a cancelled run asks nothing');
  assert.deepEqual(statuses(s), ['s1:completed', 's2:skipped', 's3:skipped']);
  assert.equal(isTerminal('running'), false);
  assert.equal(isTerminal('waiting_user'), false);
});

test('every transition bumps the version and stamps updatedAt with the given clock, leaving its frozen input unchanged', () => {
  const now = clock();
  type Transition = [name: string, apply: (s: ExecutionState, at: Date) => ExecutionState];
  const script: Transition[] = [
    ['applyPlan', (s, at) => applyPlan(s, [CALC, ASK, RESPOND], at)],
    ['startStep', (s, at) => startStep(s, 's1', at)],
    ['finishStep', (s, at) => finishStep(s, 's1', 'completed', { kind: 'tool', content: '{"value":42}' }, at)],
    ['insertStepAfterCurrent', (s, at) => insertStepAfterCurrent(s, THINK, at)],
    ['replaceRemaining', (s, at) => replaceRemaining(s, [ASK, RESPOND], at)],
    ['startStep(ask)', (s, at) => startStep(s, 's6', at)],
    ['waitForUser', (s, at) => waitForUser(s, 's6', at)],
    ['recordReply', (s, at) => recordReply(s, 's6', 'Paris', at)],
    ['complete', (s, at) => complete(s, 'done', at)],
    ['fail', (s, at) => fail(s, 'boom', at)],
    ['cancel', (s, at) => cancel(s, at)],
  ];
  let s = deepFreeze(fresh(now()));
  for (const [name, apply] of script) {
    const before = structuredClone(s);
    const at = now();
    const after = apply(s, at);
    assert.deepEqual(s, before, `${name} changed its input`);
    assert.equal(after.version, s.version + 1, `${name} did not bump the version`);
    assert.equal(after.updatedAt, at.toISOString(), `${name} did not stamp updatedAt`);
    s = deepFreeze(after);
  }
  assert.equal(s.version, 1 + script.length);
});

test('observations longer than MAX_OBSERVATION_CHARS are cut, saying how much was dropped; shorter ones are kept whole', () => {
  const now = clock();
  let s = startStep(applyPlan(fresh(now()), [CALC, ASK], now()), 's1', now());
  const exact = 'x'.repeat(MAX_OBSERVATION_CHARS);
  const long = 'y'.repeat(MAX_OBSERVATION_CHARS + 123);
  s = finishStep(s, 's1', 'completed', { kind: 'tool', content: long }, now());
  const cut = s.observations[0]?.content ?? '';
  assert.ok(cut.startsWith('y'.repeat(MAX_OBSERVATION_CHARS)));
  assert.ok(cut.endsWith('[truncated 123 chars]'), cut.slice(MAX_OBSERVATION_CHARS));
  assert.ok(cut.length < long.length);

  // A huge pasted reply is cut the same way; one exactly at the limit is not.
  s = recordReply(startStep(s, 's2', now()), 's2', exact, now());
  assert.equal(s.observations[1]?.content, exact);
  const pasted = recordReply(s, 's2', `${exact}!`, now());
  assert.match(pasted.observations[2]?.content ?? '', /\[truncated 1 chars\]$/);
});

/** Transitions as data, so fast-check can generate and shrink sequences of them. */
const stepSpec = fc.constantFrom(CALC, THINK, ASK, SUB, RESPOND);
const op = fc.oneof(
  fc.record({ kind: fc.constant('start' as const) }),
  fc.record({ kind: fc.constant('finish' as const), outcome: fc.constantFrom('completed' as const, 'failed' as const), content: fc.string({ maxLength: 20 }) }),
  fc.record({ kind: fc.constant('replace' as const), specs: fc.array(stepSpec, { minLength: 1, maxLength: 4 }) }),
  fc.record({ kind: fc.constant('insert' as const), spec: stepSpec }),
  fc.record({ kind: fc.constant('wait' as const) }),
  fc.record({ kind: fc.constant('reply' as const), text: fc.string({ maxLength: 20 }) }),
  fc.record({ kind: fc.constant('complete' as const) }),
  fc.record({ kind: fc.constant('fail' as const) }),
  fc.record({ kind: fc.constant('cancel' as const) }),
);
type Op = typeof op extends fc.Arbitrary<infer T> ? T : never;

/** Applies one op as the workflow would; null when it does not apply (no running step, not waiting). */
function applyOp(s: ExecutionState, o: Op, at: Date): ExecutionState | null {
  const running = s.steps.find((x) => x.id === s.currentStepId && x.status === 'running')?.id;
  switch (o.kind) {
    case 'start': {
      const step = nextPendingStep(s);
      return step && !running ? startStep(s, step.id, at) : null;
    }
    case 'finish':
      return running && s.status === 'running' ? finishStep(s, running, o.outcome, { kind: 'tool', content: o.content }, at) : null;
    case 'replace':
      return replaceRemaining(s, o.specs, at);
    case 'insert':
      return insertStepAfterCurrent(s, o.spec, at);
    case 'wait':
      return running && s.status === 'running' ? waitForUser(s, running, at) : null;
    case 'reply':
      return running && s.status === 'waiting_user' ? recordReply(s, running, o.text, at) : null;
    case 'complete':
      return complete(s, 'answer', at);
    case 'fail':
      return fail(s, 'error', at);
    case 'cancel':
      return cancel(s, at);
  }
}

test('property: any sequence of transitions keeps ids unique, indexes equal to positions and the version strictly increasing', () => {
  fc.assert(
    fc.property(fc.array(stepSpec, { minLength: 1, maxLength: 6 }), fc.array(op, { maxLength: 40 }), (plan, ops) => {
      const now = clock();
      let s = deepFreeze(applyPlan(fresh(now()), plan, now()));
      for (const o of ops) {
        const at = now();
        const after = applyOp(s, o, at);
        if (!after) continue;
        assert.ok(after.version > s.version, `${o.kind}: version ${s.version} → ${after.version}`);
        assert.equal(after.updatedAt, at.toISOString());
        assert.equal(new Set(ids(after)).size, after.steps.length, `${o.kind}: duplicate ids ${ids(after).join(',')}`);
        assert.deepEqual(
          after.steps.map((x) => x.index),
          after.steps.map((_, i) => i + 1),
          `${o.kind}: indexes`,
        );
        // Finished steps never go back to pending or running.
        for (const old of s.steps) {
          if (old.status === 'completed' || old.status === 'failed') assert.equal(after.steps.find((x) => x.id === old.id)?.status, old.status);
        }
        s = deepFreeze(after);
      }
    }),
    { numRuns: 300 },
  );
});
