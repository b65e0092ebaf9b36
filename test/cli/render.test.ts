/**
 * What `npm run chat` prints: step lines, and the events found by diffing the
 * states a real run goes through (built with the workflow's own transitions).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { diffStates, modelLine, outcomeLine, pendingQuestion, renderEvent, stepLine, waitingLines, type RunState, parseApprovalAnswer, parseReviewAnswer, parseSteer } from '../../src/cli/render';
import { ExecutionStateSchema, SessionViewSchema } from '../../src/api/response-schemas';
import * as model from '../../src/planning/execution-state';
import type { ExecutionState } from '../../src/planning/execution-state';

const t0 = new Date('2025-01-01T00:00:00Z');
const calc = { type: 'tool' as const, description: 'Calculate 12*7', tool: 'calculator', args: { expression: '12*7' } };
const ask = { type: 'ask_user' as const, description: 'Ask whether to round', question: 'Round the result?' };
const respond = { type: 'respond' as const, description: 'Answer the user' };

/** A state as it crosses the wire: JSON, then the client's schema (the API's own). */
const wire = (state: ExecutionState): RunState => ExecutionStateSchema.parse(JSON.parse(JSON.stringify(state)));

/** Every state of a run: plan, calculator, a question, the reply, the answer. */
function askingRun(modelLabel = 'offline-demo'): ExecutionState[] {
  const states: ExecutionState[] = [];
  const push = (s: ExecutionState) => (states.push(s), s);
  let s = push(model.initialState({ runId: 'run-ada-1', userId: 'ada', goal: 'what is 12*7?', model: '' }, t0));
  s = push(model.applyPlan({ ...s, model: modelLabel }, [calc, ask, respond], t0));
  s = push(model.startStep(s, 's1', t0));
  s = push(model.finishStep(s, 's1', 'completed', { kind: 'tool', content: '{"value":84}' }, t0));
  s = push(model.startStep(s, 's2', t0));
  s = push(model.waitForUser(s, 's2', t0));
  s = push(model.recordReply(s, 's2', 'no', t0));
  s = push(model.startStep(s, 's3', t0));
  s = push(model.finishStep(s, 's3', 'completed', null, t0));
  push(model.complete(s, '12*7 is 84.', t0));
  return states;
}

/** What the client prints while following `states` one by one. */
function transcript(states: ExecutionState[]): string[] {
  let prev: RunState | null = null;
  const lines: string[] = [];
  for (const state of states.map(wire)) {
    for (const event of diffStates(prev, state)) lines.push(...renderEvent(event).split('\n'));
    prev = state;
  }
  return lines;
}

test('a step line shows the seed’s mark ([-] executing, [x] done with, a failure said in a note), the index, the tool with its arguments and, once done, the observation', () => {
  const [, planned] = askingRun();
  const running = { ...wire(planned!).steps[0]!, status: 'running' as const };
  assert.equal(stepLine(running), '[-] 1. tool calculator {"expression":"12*7"}');
  assert.equal(stepLine({ ...running, status: 'completed' }, '{"value":84}', 'tool'), '[x] 1. tool calculator {"expression":"12*7"}  → {"value":84}');
  assert.equal(stepLine({ ...running, status: 'failed' }, 'division by zero', 'error'), '[x] 1. tool calculator {"expression":"12*7"}  → division by zero  (failed)');
});

test('a long or multi-line observation stays on one line, cut with an ellipsis', () => {
  const step = { id: 's1', index: 2, type: 'reason' as const, description: 'Think it over', status: 'completed' as const };
  const line = stepLine(step, `first line\nsecond line ${'x'.repeat(500)}`, 'reason');
  assert.ok(!line.includes('\n'));
  assert.ok(line.startsWith('[x] 2. reason: Think it over  → first line second line xxx'));
  assert.ok(line.endsWith('…'));
  assert.ok(line.length < 300, `line is ${line.length} chars`);
  const wordy = stepLine({ ...step, status: 'running', description: `Think ${'very '.repeat(100)}hard` });
  assert.ok(wordy.startsWith('[-] 2. reason: Think very very'));
  assert.ok(wordy.endsWith('…') && wordy.length < 200, wordy);
});

test('following a run prints the model, the plan, each step change with its observation, the question, the reply and the answer', () => {
  assert.deepEqual(transcript(askingRun()), [
    'model: offline-demo — the OFFLINE DEMO model (fixed rules, not a language model; set OPENAI_API_KEY or OPENAI_BASE_URL on the worker for a real one)',
    'plan (3 steps):',
    '  [ ] 1. tool calculator {"expression":"12*7"}',
    '  [ ] 2. ask_user: Ask whether to round',
    '  [ ] 3. respond: Answer the user',
    '[-] 1. tool calculator {"expression":"12*7"}',
    '[x] 1. tool calculator {"expression":"12*7"}  → {"value":84}',
    '[-] 2. ask_user: Ask whether to round',
    '? Round the result?',
    '[x] 2. ask_user: Ask whether to round  → "no"',
    '[-] 3. respond: Answer the user',
    '[x] 3. respond: Answer the user',
    '',
    'answer: 12*7 is 84.',
  ]);
});

test('a real model is named plainly, without the demo warning', () => {
  assert.equal(modelLine('gpt-5-mini'), 'model: gpt-5-mini');
  assert.equal(transcript(askingRun('gpt-5-mini'))[0], 'model: gpt-5-mini');
  assert.match(modelLine('offline-demo'), /OFFLINE DEMO/);
});

test('states that arrive coalesced still print every step change once, in the order it happened', () => {
  const states = askingRun();
  // The poller missed everything between "planned" and "waiting": calculator done, then the question.
  const lines = transcript([states[1]!, states[5]!, states[9]!]);
  assert.deepEqual(lines.slice(5), [
    '[x] 1. tool calculator {"expression":"12*7"}  → {"value":84}',
    '[-] 2. ask_user: Ask whether to round',
    '? Round the result?',
    '[x] 2. ask_user: Ask whether to round  → "no"',
    '[x] 3. respond: Answer the user',
    '',
    'answer: 12*7 is 84.',
  ]);
  // Joining a finished run prints its whole story: the plan, then what became of each step.
  assert.deepEqual(transcript([states[9]!]).slice(1), [
    'plan (3 steps):',
    '  [ ] 1. tool calculator {"expression":"12*7"}',
    '  [ ] 2. ask_user: Ask whether to round',
    '  [ ] 3. respond: Answer the user',
    '[x] 1. tool calculator {"expression":"12*7"}  → {"value":84}',
    '[x] 2. ask_user: Ask whether to round  → "no"',
    '[x] 3. respond: Answer the user',
    '',
    'answer: 12*7 is 84.',
  ]);
});

test('steps added by a replan and started before the next state arrived are listed in the plan, then shown running', () => {
  const states = askingRun();
  const afterCalc = states[3]!;
  const revised = model.replaceRemaining(afterCalc, [{ type: 'reason', description: 'Check the product' }, respond], t0);
  assert.deepEqual(renderAll(afterCalc, model.startStep(revised, 's4', t0)), [
    '[x] 2. ask_user: Ask whether to round  (replaced)',
    '[x] 3. respond: Answer the user  (replaced)',
    'plan revised (+2 steps):',
    '  [ ] 4. reason: Check the product',
    '  [ ] 5. respond: Answer the user',
    '[-] 4. reason: Check the product',
  ]);
});

test('an unchanged state prints nothing, and a question is asked once however often the waiting state is resent', () => {
  for (const state of askingRun().map(wire)) assert.deepEqual(diffStates(state, state), []);
  const waiting = wire(askingRun()[5]!);
  const first = diffStates(null, waiting).filter((e) => e.kind === 'question');
  assert.deepEqual(first, [{ kind: 'question', stepId: 's2', question: 'Round the result?' }]);
  assert.deepEqual(
    diffStates(waiting, { ...waiting }).filter((e) => e.kind === 'question'),
    [],
  );
  assert.deepEqual(pendingQuestion(waiting), { stepId: 's2', question: 'Round the result?' });
  assert.equal(pendingQuestion(wire(askingRun()[6]!)), null);
});

test('a second question in the same run is asked too', () => {
  const states = askingRun();
  const replied = states[6]!;
  const again = model.waitForUser(model.startStep(model.insertStepAfterCurrent(replied, { ...ask, question: 'Are you sure?' }, t0), 's4', t0), 's4', t0);
  const questions = diffStates(wire(replied), wire(again)).filter((e) => e.kind === 'question');
  assert.deepEqual(questions, [{ kind: 'question', stepId: 's4', question: 'Are you sure?' }]);
});

test('a failed run prints the failed step and the error; a cancelled one says so', () => {
  const states = askingRun();
  const running = states[2]!;
  assert.deepEqual(renderAll(running, model.fail(running, 'model unavailable (gave up after 5 attempts)', t0)), [
    '[x] 1. tool calculator {"expression":"12*7"}  (failed)',
    '',
    'the run failed: model unavailable (gave up after 5 attempts)',
  ]);
  const waiting = states[5]!;
  assert.deepEqual(renderAll(waiting, model.cancel(waiting, t0)), ['[x] 2. ask_user: Ask whether to round  (skipped)', '[x] 3. respond: Answer the user  (skipped)', '', 'the run was cancelled']);
});

test('the client schema reads what the API sends and rejects what it cannot print', () => {
  const state = askingRun()[5]!;
  assert.equal(wire(state).status, 'waiting_user');
  assert.equal(ExecutionStateSchema.safeParse({ ...state, status: 'sleeping' }).success, false);
  assert.equal(ExecutionStateSchema.safeParse({ ...state, steps: [{ id: 's1' }] }).success, false);
  // Responses may gain fields (DESIGN.md: extend, don't rename): a field the client does not know is no error.
  assert.equal(ExecutionStateSchema.safeParse({ ...state, addedLater: true }).success, true);
});

function renderAll(prev: ExecutionState, next: ExecutionState): string[] {
  return diffStates(wire(prev), wire(next)).flatMap((e) => renderEvent(e).split('\n'));
}

test('a resumed conversation lists each run still waiting for an answer, yes/no questions included', () => {
  const run = (runId: string, status: string, question: string | null) => ({ runId, goal: `goal of ${runId}`, status, question, finalAnswer: null, lastError: null, startedAt: '', askedAt: null });
  const session = SessionViewSchema.parse({
    sessionId: 'session-ada-1',
    userId: 'ada',
    threadId: 'thread_session-ada-1',
    turns: 4,
    version: 9,
    chatHistory: [],
    taskState: { CurrentGoal: '', ActiveFlow: '', OpenLoops: [], ImportantFacts: [], LastDecision: '', UpdatedAt: '' },
    runs: [run('r1', 'completed', null), run('r2', 'waiting_user', 'Which colour?'), run('r3', 'waiting_user_confirmation', 'Should I book it?'), run('r4', 'running', null)],
  });
  assert.deepEqual(waitingLines(session), ['run r2 is waiting for your answer: ? Which colour?', 'run r3 is waiting for your answer: ? Should I book it?']);
  assert.equal(outcomeLine({ kind: 'retry', runId: 'r5' }), 'retrying: run r5 started');
  assert.equal(outcomeLine({ kind: 'command', reply: 'hi' }), null);
});

test('tree runs: the progress tree is drawn when it changes, and a plan waiting for review is announced once per plan', () => {
  const base = { ...model.initialState({ runId: 'r', userId: 'ada', goal: 'g', model: '' }, t0), engine: 'tree' as const };
  const waiting = { ...base, status: 'waiting_review' as const, planId: 'r#tree1', progress: '-[ ] 1. "Trip" (not started)\n -[ ] 1-1. "Train" (not started)' };
  const events = diffStates(null, waiting);
  assert.deepEqual(
    events.map((e) => e.kind),
    ['progress', 'review'],
  );
  assert.deepEqual(events.map(renderEvent), [
    '  | -[ ] 1. "Trip" (not started)\n  |  -[ ] 1-1. "Train" (not started)',
    '? the plan above (r#tree1) waits for your review: approve, revise <what to change>, reject [why], or edit',
  ]);
  assert.deepEqual(diffStates(waiting, { ...waiting }), [], 'nothing new, nothing printed');
  assert.deepEqual(
    diffStates(waiting, { ...waiting, planId: 'r#tree2' }).map((e) => e.kind),
    ['review'],
  );
});

test('review answers and /skip, /redo as typed at the prompt', () => {
  assert.deepEqual(parseReviewAnswer('approve'), { decision: 'approve' });
  assert.deepEqual(parseReviewAnswer('OK'), { decision: 'approve' });
  assert.deepEqual(parseReviewAnswer('revise  add a budget check'), { decision: 'revise', feedback: 'add a budget check' });
  assert.equal(parseReviewAnswer('revise'), null, 'a revision needs feedback');
  assert.deepEqual(parseReviewAnswer('reject too costly'), { decision: 'reject', feedback: 'too costly' });
  assert.deepEqual(parseReviewAnswer('edit'), { decision: 'edit' });
  assert.equal(parseReviewAnswer('maybe'), null);
  assert.deepEqual(parseSteer('/skip 1-2 not needed'), { action: 'skip', index: '1-2', reason: 'not needed' });
  assert.deepEqual(parseSteer('/redo 1-3-1'), { action: 'redo', index: '1-3-1' });
  assert.equal(parseSteer('/skip two'), null);
  assert.equal(parseSteer('skip 1-2'), null);
});

test('an approval answer: approve/yes, reject [why]/no, edit with JSON object args; anything else is asked again', () => {
  assert.deepEqual(parseApprovalAnswer('yes'), { decision: 'approve' });
  assert.deepEqual(parseApprovalAnswer('  approve '), { decision: 'approve' });
  assert.deepEqual(parseApprovalAnswer('no'), { decision: 'reject' });
  assert.deepEqual(parseApprovalAnswer('reject too costly'), { decision: 'reject', feedback: 'too costly' });
  assert.deepEqual(parseApprovalAnswer('edit {"expression": "6*7"}'), { decision: 'edit', args: { expression: '6*7' } });
  assert.equal(parseApprovalAnswer('edit [1,2]'), null);
  assert.equal(parseApprovalAnswer('edit {oops'), null);
  assert.equal(parseApprovalAnswer('maybe'), null);
});
