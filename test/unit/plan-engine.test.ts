/**
 * The planner as a pure engine (src/engine/plan-engine.ts): which commands it gives for each
 * event, in which order, without Temporal. The order is what recorded histories replay against.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ExecutionState } from '../../src/planning/execution-state';
import type { StepSpec } from '../../src/planning/step-spec';
import { withoutCloseOnAnswer } from '../../src/engine/core';
import { PlanEngine, type PlanCommand, type PlanEngineInput } from '../../src/engine/plan-engine';

const T0 = new Date('2026-01-01T00:00:00Z');
const CALC: StepSpec = { type: 'tool', description: 'Add', tool: 'calculator', args: { expression: '40+2' } };
const ASK: StepSpec = { type: 'ask_user', description: 'Ask for the city', question: 'Which city?' };
const SUB: StepSpec = { type: 'subplan', description: 'Delegate', goal: 'Find the weather' };
const RESPOND: StepSpec = { type: 'respond', description: 'Answer the user' };

function engine(over: Partial<PlanEngineInput> = {}): PlanEngine {
  return new PlanEngine({ runId: 'run-a', userId: 'alice', goal: 'g', reportTo: null, limits: { maxSteps: 10, maxDepth: 1 }, ...over }, T0);
}
const kinds = (cs: PlanCommand[]) => cs.map((c) => (c.kind === 'call' ? `call:${c.activity}` : c.kind === 'status' ? `status:${c.status}` : c.kind));
const planned = (steps: StepSpec[]) => ({ kind: 'result' as const, activity: 'planRun' as const, value: { steps, model: 'm', threadId: 'thread_run-a' } });
const stepDone = (decision: 'continue' | 'finish' = 'continue') => ({
  kind: 'result' as const,
  activity: 'executeStep' as const,
  value: { observation: { kind: 'tool' as const, content: '{"value":42}' }, outcome: 'completed' as const, decision: { decision, ...(decision === 'finish' ? { answer: 'done early' } : {}) } },
});
const answered = (answer: string) => ({ kind: 'result' as const, activity: 'respond' as const, value: { answer } });

test('a tool step then respond: plan, step+replan in one call, answer, end — with a status command at each change', () => {
  const e = engine();
  assert.deepEqual(kinds(e.start(T0)), ['call:planRun']);
  assert.deepEqual(kinds(e.handle(planned([CALC, RESPOND]), T0)), ['status:running', 'call:executeStep']);
  assert.equal(e.state.threadId, 'thread_run-a');
  assert.deepEqual(kinds(e.handle(stepDone(), T0)), ['call:respond']);
  assert.deepEqual(kinds(e.handle(answered('42'), T0)), ['status:completed', 'close', 'end']);
  assert.equal(e.state.finalAnswer, '42');
  assert.deepEqual(
    e.state.steps.map((s) => s.status),
    ['completed', 'completed'],
  );
  assert.equal(e.state.observations[0]?.content, '{"value":42}');
});

test('a plan that begins with its respond step and comes with its answer ends at once: no respond call', () => {
  const e = engine({ reportTo: 'session-a' });
  e.start(T0);
  const commands = e.handle({ kind: 'result', activity: 'planRun', value: { steps: [RESPOND], model: 'm', answer: { stepId: 's1', text: 'clear skies' } } }, T0);
  assert.deepEqual(kinds(commands), ['status:running', 'status:completed', 'notify_parent', 'close', 'end']);
  assert.equal(e.state.finalAnswer, 'clear skies');
  assert.deepEqual(
    e.state.steps.map((s) => [s.id, s.status]),
    [['s1', 'completed']],
  );
});

test('an answer given with a plan whose first step is not that respond step is not used', () => {
  const e = engine();
  e.start(T0);
  // A plan recorded with an answer for another step (say the model changed the plan): the steps run as planned.
  assert.deepEqual(kinds(e.handle({ kind: 'result', activity: 'planRun', value: { steps: [CALC, RESPOND], model: 'm', answer: { stepId: 's2', text: 'too early' } } }, T0)), [
    'status:running',
    'call:executeStep',
  ]);
  assert.equal(e.state.finalAnswer, null);
});

test('a run asked to close on its answer: the answering calls carry the close, and an answer that closed the run ends it with no close and no report of its own', () => {
  const e = engine({ reportTo: 'session-a', closeOnAnswer: true });
  const [plan] = e.start(T0);
  assert.ok(plan?.kind === 'call' && plan.activity === 'planRun');
  assert.deepEqual(plan.input.close, { reportTo: 'session-a' });
  assert.equal(plan.policy, 'answer');
  // The plan came with its answer, and the call closed the run: its status changes, and it ends.
  const closed = e.handle({ kind: 'result', activity: 'planRun', value: { steps: [RESPOND], model: 'm', answer: { stepId: 's1', text: 'clear skies', closed: true } } }, T0);
  assert.deepEqual(kinds(closed), ['status:running', 'status:completed', 'end']);
  assert.equal(e.state.status, 'completed');
  assert.equal(e.state.finalAnswer, 'clear skies');
  assert.deepEqual(
    e.state.steps.map((s) => [s.id, s.status]),
    [['s1', 'completed']],
  );

  // A respond call asks too; its answer without `closed` (it ran as a regular activity) ends the run as before.
  const f = engine({ reportTo: 'session-a', closeOnAnswer: true });
  f.start(T0);
  const [, call] = f.handle(planned([RESPOND]), T0);
  assert.ok(call?.kind === 'call' && call.activity === 'respond');
  assert.deepEqual(call.input.close, { reportTo: 'session-a' });
  assert.equal(call.policy, 'answer');
  assert.deepEqual(kinds(f.handle(answered('sunny'), T0)), ['status:completed', 'notify_parent', 'close', 'end']);
  const g = engine({ closeOnAnswer: true });
  g.start(T0);
  g.handle(planned([RESPOND]), T0);
  assert.deepEqual(kinds(g.handle({ kind: 'result', activity: 'respond', value: { answer: 'sunny', closed: true } }, T0)), ['status:completed', 'end']);
  assert.equal(g.state.finalAnswer, 'sunny');
});

test('a call made while earlier reports are on their way drops its close: the run closes with the close command', () => {
  const e = engine({ reportTo: 'session-a', closeOnAnswer: true });
  const [plan] = e.start(T0);
  assert.ok(plan?.kind === 'call');
  const plain = withoutCloseOnAnswer(plan);
  assert.ok(plain.kind === 'call' && plain.activity === 'planRun');
  assert.equal('close' in plain.input, false);
  assert.equal(plain.policy, 'model');
  assert.equal(plain.input.state, plan.input.state);
  // A call that was not asked to close is left as it is.
  const [other] = engine().start(T0);
  assert.ok(other?.kind === 'call');
  assert.equal(withoutCloseOnAnswer(other), other);
});

test('a run not asked to close on its answer (recorded before it) makes its calls as before', () => {
  const e = engine({ reportTo: 'session-a' });
  const [plan] = e.start(T0);
  assert.ok(plan?.kind === 'call' && plan.activity === 'planRun');
  assert.equal(plan.input.close, undefined);
  assert.equal(plan.policy, 'model');
});

test('the activity input is the state as of the call: the step is running in it', () => {
  const e = engine();
  e.start(T0);
  const [, call] = e.handle(planned([CALC, RESPOND]), T0);
  assert.ok(call?.kind === 'call' && call.activity === 'executeStep');
  assert.equal(call.input.stepId, 's1');
  assert.equal(call.input.state.steps[0]?.status, 'running');
  assert.equal(call.policy, 'step');
  assert.match(call.summary ?? '', /^step 1 · tool calculator: Add → replan$/);
});

test('ask_user waits for a person; the reply becomes an observation and a replan', () => {
  const e = engine();
  e.start(T0);
  assert.equal(e.canTakeReply(), false);
  assert.deepEqual(kinds(e.handle(planned([ASK, RESPOND]), T0)), ['status:running', 'status:waiting_user', 'await_person']);
  assert.equal(e.canTakeReply(), true);
  assert.deepEqual(kinds(e.handle({ kind: 'reply', text: 'Paris' }, T0)), ['status:running', 'call:replan']);
  assert.equal(e.canTakeReply(), false);
  assert.deepEqual(
    e.state.observations.map((o) => [o.kind, o.content]),
    [['user_reply', 'Paris']],
  );
  assert.deepEqual(kinds(e.handle({ kind: 'result', activity: 'replan', value: { decision: 'continue' } }, T0)), ['call:respond']);
});

test('a run of a session reports waits, resumes and ends to it, and nothing else', () => {
  const e = engine({ reportTo: 'session-alice-1' });
  e.start(T0);
  const wait = e.handle(planned([ASK, RESPOND]), T0);
  const reports = (cs: PlanCommand[]) => cs.flatMap((c) => (c.kind === 'notify_parent' ? [[c.parentId, c.report.status, c.report.question]] : []));
  assert.deepEqual(reports(wait), [['session-alice-1', 'waiting_user', 'Which city?']]);
  assert.deepEqual(reports(e.handle({ kind: 'reply', text: 'Paris' }, T0)), [['session-alice-1', 'running', null]]);
  e.handle({ kind: 'result', activity: 'replan', value: { decision: 'continue' } }, T0);
  assert.deepEqual(reports(e.handle(answered('sunny'), T0)), [['session-alice-1', 'completed', null]]);
});

test('replan decisions: replace_remaining runs the new steps, ask_user inserts a question, finish ends at once', () => {
  const e = engine();
  e.start(T0);
  e.handle(planned([CALC, CALC, RESPOND]), T0);
  const replaced = e.handle({ ...stepDone(), value: { ...stepDone().value, decision: { decision: 'replace_remaining', steps: [RESPOND] } } }, T0);
  assert.deepEqual(kinds(replaced), ['call:respond']);
  assert.deepEqual(
    e.state.steps.map((s) => s.status),
    ['completed', 'replaced', 'replaced', 'running'],
  );

  const f = engine();
  f.start(T0);
  f.handle(planned([CALC, CALC, RESPOND]), T0);
  assert.deepEqual(kinds(f.handle({ ...stepDone(), value: { ...stepDone().value, decision: { decision: 'ask_user', question: 'Sure?' } } }, T0)), ['status:waiting_user', 'await_person']);
  assert.equal(f.state.steps[1]?.question, 'Sure?');

  const g = engine();
  g.start(T0);
  g.handle(planned([CALC, CALC, RESPOND]), T0);
  assert.deepEqual(kinds(g.handle(stepDone('finish'), T0)), ['status:completed', 'close', 'end']);
  assert.equal(g.state.finalAnswer, 'done early');
  assert.deepEqual(
    g.state.steps.map((s) => s.status),
    ['completed', 'skipped', 'skipped'],
  );
});

test('finish without an answer: the steps left are skipped and the answer is written by a final answer call', () => {
  for (const answer of [undefined, ' ']) {
    const e = engine();
    e.start(T0);
    e.handle(planned([CALC, CALC, RESPOND]), T0);
    const decision = { decision: 'finish' as const, ...(answer === undefined ? {} : { answer }) };
    const [call, ...rest] = e.handle({ ...stepDone(), value: { ...stepDone().value, decision } }, T0);
    assert.ok(call?.kind === 'call' && call.activity === 'respond', JSON.stringify(call));
    assert.equal(call.summary, 'final answer');
    assert.deepEqual(rest, []);
    assert.deepEqual(
      call.input.state.steps.map((s) => s.status),
      ['completed', 'skipped', 'skipped'],
      'the answer is written from a state that shows the plan ended there',
    );
    assert.equal(e.state.status, 'running');
    assert.deepEqual(kinds(e.handle(answered('42, early'), T0)), ['status:completed', 'close', 'end']);
    assert.equal(e.state.finalAnswer, '42, early');
  }
});

test('a plan that runs out without respond gets a final answer call', () => {
  const e = engine();
  e.start(T0);
  e.handle(planned([CALC]), T0);
  const [call] = e.handle(stepDone(), T0);
  assert.ok(call?.kind === 'call' && call.activity === 'respond');
  assert.equal(call.summary, 'final answer');
  assert.deepEqual(kinds(e.handle(answered('42'), T0)), ['status:completed', 'close', 'end']);
});

test('sub-plans: a child run with a linked id and input; at the depth limit a refusal the planner sees', () => {
  const e = engine();
  e.start(T0);
  const [, start] = e.handle(planned([SUB, RESPOND]), T0);
  assert.ok(start?.kind === 'start_child');
  assert.equal(start.workflowId, 'run-a.s1');
  assert.deepEqual([start.input.goal, start.input.parentRunId, start.input.depth], ['Find the weather', 'run-a', 1]);
  assert.equal(e.state.steps[0]?.childRunId, 'run-a.s1');
  const child = { ...e.state, runId: 'run-a.s1', status: 'failed', lastError: 'boom' } as ExecutionState;
  assert.deepEqual(kinds(e.handle({ kind: 'child_ended', value: child }, T0)), ['call:replan']);
  assert.deepEqual(e.state.observations.at(-1)?.content, 'sub-plan run-a.s1 ended failed: boom');

  const deep = engine({ depth: 1 });
  deep.start(T0);
  assert.deepEqual(kinds(deep.handle(planned([SUB, RESPOND]), T0)), ['status:running', 'call:replan']);
  assert.match(deep.state.observations[0]?.content ?? '', /nesting limit of 1 reached/);
});

test('the step limit, a failure and a cancellation each end the run with the reason', () => {
  const e = engine({ limits: { maxSteps: 1, maxDepth: 1 } });
  e.start(T0);
  e.handle(planned([CALC, CALC, RESPOND]), T0);
  assert.deepEqual(kinds(e.handle(stepDone(), T0)), ['status:failed', 'close', 'end']);
  assert.match(e.state.lastError ?? '', /step limit reached/);

  const f = engine();
  f.start(T0);
  assert.deepEqual(kinds(f.handle({ kind: 'failed', error: 'model down (gave up after 5 attempts)' }, T0)), ['status:failed', 'close', 'end']);
  assert.equal(f.state.lastError, 'model down (gave up after 5 attempts)');

  const c = engine();
  c.start(T0);
  c.handle(planned([ASK, RESPOND]), T0);
  assert.deepEqual(kinds(c.handle({ kind: 'cancelled' }, T0)), ['status:cancelled', 'close', 'end']);
  assert.deepEqual(
    c.state.steps.map((s) => s.status),
    ['skipped', 'skipped'],
  );
});

test('an event the engine did not wait for is a bug, not a silent turn', () => {
  const e = engine();
  e.start(T0);
  assert.throws(() => e.handle({ kind: 'reply', text: 'early' }, T0), /waits for plan/);
});

/** A child run's report of its status (what `runReportSignal` delivers). */
const childReport = (runId: string, status: 'waiting_user' | 'running', question: string | null = null) => ({
  kind: 'child_report' as const,
  report: { runId, status, question, finalAnswer: null, lastError: null },
});
const childEnded = (runId: string, status: 'completed' | 'cancelled', finalAnswer: string | null = null) => ({
  kind: 'child_ended' as const,
  value: { runId, status, finalAnswer, lastError: null } as ExecutionState,
});

test("a sub-plan's question becomes the parent's: shown as an open ask step, reported to the session, the reply passed down", () => {
  const e = engine({ reportTo: 'session-a' });
  e.start(T0);
  const start = e.handle(planned([SUB, RESPOND]), T0).at(-1);
  assert.ok(start?.kind === 'start_child');
  assert.equal(start.input.relayQuestions, true, 'the child is told to send its questions up');
  assert.equal(e.canTakeReply(), false);

  // Another run's report changes nothing; the child's question makes the parent wait, as if it asked.
  assert.deepEqual(kinds(e.handle(childReport('someone-else', 'waiting_user', 'Who?'), T0)), []);
  const asked = e.handle(childReport('run-a.s1', 'waiting_user', 'Which city?'), T0);
  assert.deepEqual(kinds(asked), ['status:waiting_user', 'notify_parent']);
  const notice = asked[1];
  assert.ok(notice?.kind === 'notify_parent');
  assert.equal(notice.parentId, 'session-a');
  assert.equal(notice.report.question, 'Which city?');
  assert.equal(e.state.status, 'waiting_user');
  assert.deepEqual(
    e.state.steps.map((s) => [s.id, s.index, s.type, s.status, s.childRunId ?? null]),
    [
      ['s1', 1, 'subplan', 'running', 'run-a.s1'],
      ['s3', 2, 'ask_user', 'running', 'run-a.s1'],
      ['s2', 3, 'respond', 'pending', null],
    ],
  );
  assert.equal(e.canTakeReply(), true);

  // The reply: recorded here, the run resumes (reported), and it goes down to the child; the run still waits on the child.
  const replied = e.handle({ kind: 'reply', text: 'Lisbon' }, T0);
  assert.deepEqual(kinds(replied), ['status:running', 'notify_parent', 'relay_reply']);
  assert.deepEqual(replied[2], { kind: 'relay_reply', runId: 'run-a.s1', text: 'Lisbon' });
  assert.equal(e.canTakeReply(), false);
  assert.deepEqual(
    e.state.observations.map((o) => [o.stepId, o.kind, o.content]),
    [['s3', 'user_reply', 'Lisbon']],
  );
  // The child resuming after it (its report) changes nothing more; its answer ends the step as before.
  assert.deepEqual(kinds(e.handle(childReport('run-a.s1', 'running'), T0)), []);
  assert.deepEqual(kinds(e.handle(childEnded('run-a.s1', 'completed', 'sunny in Lisbon'), T0)), ['call:replan']);
  assert.deepEqual(
    e.state.steps.map((s) => s.status),
    ['completed', 'completed', 'pending'],
  );
});

test("a sub-plan's question answered at the child directly closes the parent's; a child that ends without an answer drops it", () => {
  const e = engine();
  e.start(T0);
  e.handle(planned([SUB, RESPOND]), T0);
  e.handle(childReport('run-a.s1', 'waiting_user', 'Which city?'), T0);
  assert.deepEqual(kinds(e.handle(childReport('run-a.s1', 'running'), T0)), ['status:running']);
  assert.equal(e.state.observations.at(-1)?.content, '(answered in run run-a.s1)');
  assert.equal(e.canTakeReply(), false);

  const f = engine();
  f.start(T0);
  f.handle(planned([SUB, RESPOND]), T0);
  f.handle(childReport('run-a.s1', 'waiting_user', 'Which city?'), T0);
  assert.deepEqual(kinds(f.handle(childEnded('run-a.s1', 'cancelled'), T0)), ['status:running', 'call:replan']);
  assert.deepEqual(
    f.state.steps.map((s) => [s.type, s.status]),
    [
      ['subplan', 'failed'],
      ['ask_user', 'skipped'],
      ['respond', 'pending'],
    ],
  );
});

test('a child run told to relay its questions reports its waits to the parent, never its end', () => {
  const e = engine({ parentRunId: 'run-p', questionsTo: 'run-p' });
  e.start(T0);
  const asked = e.handle(planned([ASK, RESPOND]), T0);
  assert.deepEqual(kinds(asked), ['status:running', 'status:waiting_user', 'notify_parent', 'await_person']);
  const notice = asked[2];
  assert.ok(notice?.kind === 'notify_parent');
  assert.equal(notice.parentId, 'run-p');
  assert.equal(notice.report.question, 'Which city?');
  assert.deepEqual(kinds(e.handle({ kind: 'reply', text: 'Porto' }, T0)), ['status:running', 'notify_parent', 'call:replan']);
  e.handle({ kind: 'result', activity: 'replan', value: { decision: 'continue' } }, T0);
  assert.deepEqual(kinds(e.handle(answered('sunny'), T0)), ['status:completed', 'close', 'end']);
});

test('capability switches: a step its starter turned off is a failed step the replan sees, and counts as a step; children inherit them', () => {
  const e = engine({ allow: { askUser: false, plan: false } });
  e.start(T0);
  assert.deepEqual(e.state.allow, { askUser: false, plan: false });
  const refused = e.handle(planned([ASK, SUB, RESPOND]), T0);
  assert.deepEqual(kinds(refused), ['status:running', 'call:replan']);
  assert.deepEqual(
    e.state.steps.map((s) => s.status),
    ['failed', 'pending', 'pending'],
  );
  assert.match(e.state.observations[0]?.content ?? '', /refused: asking the person \(ask_user\): nobody is there to answer is off for this run/);
  // The replan goes on: the sub-plan is refused too; the tool step runs.
  assert.deepEqual(kinds(e.handle({ kind: 'result', activity: 'replan', value: { decision: 'continue' } }, T0)), ['call:replan']);
  assert.match(e.state.observations[1]?.content ?? '', /sub-plans and planning a task into subtasks is off/);
  const tools = engine({ allow: { askUser: false } });
  tools.start(T0);
  assert.deepEqual(kinds(tools.handle(planned([CALC, RESPOND]), T0)), ['status:running', 'call:executeStep']);
  const sub = engine({ allow: { askUser: false } });
  sub.start(T0);
  const start = sub.handle(planned([SUB, RESPOND]), T0).at(-1);
  assert.ok(start?.kind === 'start_child');
  assert.deepEqual(start.input.allow, { askUser: false }, 'a sub-plan may not ask either');
});
