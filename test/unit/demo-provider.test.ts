/**
 * The offline demo model, driven through a small in-process copy of the workflow loop
 * (pure transitions + real tools + the demo) so its plans, replans and answers are
 * checked the way a user would meet them, without a Temporal server.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import {
  applyPlan,
  complete,
  finishStep,
  initialState,
  insertStepAfterCurrent,
  nextPendingStep,
  pendingQuestion,
  recordReply,
  replaceRemaining,
  startStep,
  waitForUser,
  type ExecutionState,
  type PlanStep,
} from '../../src/planning/execution-state';
import type { PlannerCallName } from '../../src/calls/names';
import type { ModelReply } from '../../src/calls/registry';
import type { StepSpec } from '../../src/planning/step-spec';
import { demoIntents } from '../../src/calls/demo-intents';
import { DEMO_LABEL, DemoProvider } from '../../src/llm/demo-provider';
import { callModel } from '../../src/llm/structured';
import { MemoryKeyValueStore, type KeyValueStore } from '../../src/store/kv';
import { ToolRegistry } from '../../src/tools/registry';

const TAG = '[offline demo model]';
const demo = new DemoProvider();
const registry = new ToolRegistry();

/** One demo call; maxAttempts 1, so any reply outside the wire schema fails the test. */
function ask<N extends PlannerCallName>(call: N, state: ExecutionState, step?: PlanStep): Promise<ModelReply<N>> {
  return callModel(demo, { call, state, tools: registry.describe(), maxSteps: 25, maxDepth: 2, ...(step ? { step } : {}) }, 1);
}

async function plan(goal: string): Promise<StepSpec[]> {
  const s = initialState({ runId: 'run-demo', userId: 'ada', goal, model: DEMO_LABEL }, new Date());
  return (await ask('execution_plan', s)).steps;
}

interface Drive {
  userId?: string;
  store?: KeyValueStore;
  /** Replies given, in order, each time the run waits on a question. */
  replies?: string[];
}

/** Runs a goal to its end (or to a question nobody answers), the way the workflow does. */
async function drive(goal: string, { userId = 'ada', store = new MemoryKeyValueStore(), replies = [] }: Drive = {}): Promise<ExecutionState> {
  const now = () => new Date();
  let s = initialState({ runId: 'run-demo', userId, goal, model: demo.label }, now());
  s = applyPlan(s, (await ask('execution_plan', s)).steps, now());
  for (let guard = 0; guard < 30; guard++) {
    const step = nextPendingStep(s);
    if (!step) return s;
    s = startStep(s, step.id, now());
    let decision: ModelReply<'replan_decision'>;
    if (step.type === 'respond') {
      const { answer } = await ask('final_answer', s, step);
      return complete(finishStep(s, step.id, 'completed', null, now()), answer, now());
    } else if (step.type === 'tool') {
      const signal = new AbortController().signal;
      const ctx = { userId, runId: s.runId, stepId: step.id, idempotencyKey: `${s.runId}/${step.id}`, store, heartbeat: () => undefined, signal };
      const outcome = await registry.run(step.tool ?? '', step.args ?? {}, ctx);
      s = outcome.ok
        ? finishStep(s, step.id, 'completed', { kind: 'tool', content: JSON.stringify(outcome.result) }, now())
        : finishStep(s, step.id, 'failed', { kind: 'error', content: outcome.error }, now());
      decision = await ask('replan_decision', s);
    } else if (step.type === 'ask_user') {
      s = waitForUser(s, step.id, now());
      const reply = replies.shift();
      if (reply === undefined) return s;
      s = recordReply(s, step.id, reply, now());
      decision = await ask('replan_decision', s);
    } else if (step.type === 'reason') {
      const { thought } = await ask('reasoning', s, step);
      s = finishStep(s, step.id, 'completed', { kind: 'reason', content: thought }, now());
      decision = await ask('replan_decision', s);
    } else {
      throw new Error(`the demo planned a ${step.type} step`);
    }
    if (decision.decision === 'finish') return complete(s, decision.answer ?? '', now());
    if (decision.decision === 'replace_remaining') s = replaceRemaining(s, decision.steps ?? [], now());
    if (decision.decision === 'ask_user') {
      s = insertStepAfterCurrent(s, { type: 'ask_user', description: 'Ask the user', question: decision.question ?? '' }, now());
    }
  }
  throw new Error('the demo run did not end within 30 steps');
}

const toolCalls = (steps: readonly StepSpec[]) => steps.filter((s) => s.type === 'tool').map((s) => [s.tool, s.args]);

test('the demo is labelled so it is never mistaken for a real model', () => {
  assert.equal(demo.label, 'offline-demo');
});

test('arithmetic: plans a calculator step then an answer, and answers with the value', async () => {
  const steps = await plan('what is 12*7');
  assert.deepEqual(toolCalls(steps), [['calculator', { expression: '12*7' }]]);
  assert.equal(steps.at(-1)?.type, 'respond');

  const done = await drive('what is 12*7');
  assert.equal(done.status, 'completed');
  assert.equal(done.finalAnswer, `${TAG} 12*7 = 84.`);
  assert.equal((await drive('compute sqrt(16) / 4')).finalAnswer, `${TAG} sqrt(16) / 4 = 1.`);
  assert.equal((await drive('what is 6 × 7?')).finalAnswer, `${TAG} 6 * 7 = 42.`);
});

test('notes: a note written by one user is read back by that user only', async () => {
  assert.deepEqual(toolCalls(await plan('remember that my color is green')), [['notes_write', { key: 'color', value: 'green' }]]);
  assert.deepEqual(toolCalls(await plan('what is my color?')), [['notes_read', { key: 'color' }]]);

  const store = new MemoryKeyValueStore();
  assert.equal((await drive('remember that my color is green', { store })).finalAnswer, `${TAG} I saved your color.`);
  assert.equal((await drive('what is my color?', { store })).finalAnswer, `${TAG} Your color is green.`);
  assert.equal((await drive('what is my color?', { store, userId: 'bob' })).finalAnswer, `${TAG} I have no note about your color.`);
});

test('time: plans current_time with the named timezone and answers with an ISO time in that zone', async () => {
  assert.deepEqual(toolCalls(await plan('what time is it in Europe/Paris')), [['current_time', { timezone: 'Europe/Paris' }]]);
  assert.deepEqual(toolCalls(await plan('what time is it?')), [['current_time', {}]]);
  const tokyo = await drive('what time is it in Asia/Tokyo');
  assert.match(tokyo.finalAnswer ?? '', /^\[offline demo model\] The time is \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+09:00\.$/);
});

test('wait: plans a wait step with the seconds asked for, and says it waited', async () => {
  assert.deepEqual(toolCalls(await plan('please wait 2 seconds')), [['wait', { seconds: 2 }]]);
  assert.equal((await drive('wait 0.05 seconds')).finalAnswer, `${TAG} I waited 0.05 seconds.`);
});

test('a mixture of requests becomes one tool step per request, in order, answered together', async () => {
  const goal = 'remember that my city is Paris and what is (3+4)*2 and what time is it in Asia/Tokyo';
  assert.deepEqual(toolCalls(await plan(goal)), [
    ['notes_write', { key: 'city', value: 'Paris' }],
    ['calculator', { expression: '(3+4)*2' }],
    ['current_time', { timezone: 'Asia/Tokyo' }],
  ]);
  const done = await drive(goal);
  assert.match(done.finalAnswer ?? '', /^\[offline demo model\] I saved your city\. \(3\+4\)\*2 = 14\.? The time is .*\+09:00\.$/);
});

test('an unclear goal makes the demo ask what the user wants instead of guessing', async () => {
  const steps = await plan('hello there');
  assert.equal(steps.length, 1);
  assert.equal(steps[0]?.type, 'ask_user');
  const waiting = await drive('hello there');
  assert.equal(waiting.status, 'waiting_user');
  assert.match(pendingQuestion(waiting) ?? '', /offline demo model.*What would you like me to do\?/);
});

test('after the user replies, the demo replans from the reply', async () => {
  const done = await drive('hello there', { replies: ['what is 6*7'] });
  assert.equal(done.status, 'completed');
  assert.deepEqual(
    done.steps.map((s) => `${s.type}:${s.status}`),
    ['ask_user:completed', 'tool:completed', 'respond:completed'],
  );
  assert.equal(done.finalAnswer, `${TAG} 6*7 = 42.`);

  const still = await drive('hello there', { replies: ['dunno'] });
  assert.equal(still.status, 'completed');
  assert.match(still.finalAnswer ?? '', /^\[offline demo model\] I still could not tell what to do with "dunno"\./);
});

test('a failing tool is reported honestly in the answer', async () => {
  const done = await drive('what time is it in Mars/Olympus');
  assert.match(done.finalAnswer ?? '', /^\[offline demo model\] Something went wrong: current_time failed: unknown timezone "Mars\/Olympus"$/);
});

test('a note whose value contains digits and dashes (a date, a phone number) is only saved, not also calculated', async () => {
  // Seen: "1990-05-03" also became a calculator step, so the answer read "I saved your birthday. 1990-05-03 = 1982".
  assert.deepEqual(toolCalls(await plan('remember that my birthday is 1990-05-03')), [['notes_write', { key: 'birthday', value: '1990-05-03' }]]);
  assert.deepEqual(toolCalls(await plan('remember my phone is 555-1234')), [['notes_write', { key: 'phone', value: '555-1234' }]]);
});

test('property: every answer of the demo, whatever the goal and replies, starts with the demo label', async () => {
  const fragment = fc.constantFrom('what is', '12*7', '1/0', 'remember that my pet is a cat', 'what is my pet', 'time', 'Europe/Paris', 'and', 'hello', '?', 'sqrt(2)', 'note', 'Mars/Olympus');
  const text = fc.array(fragment, { maxLength: 6 }).map((parts) => parts.join(' '));
  await fc.assert(
    fc.asyncProperty(text, fc.array(text, { maxLength: 2 }), async (goal, replies) => {
      const end = await drive(goal || 'hello', { replies: [...replies] });
      if (end.status === 'completed') assert.ok(end.finalAnswer?.startsWith(`${TAG} `), end.finalAnswer ?? '(none)');
      else assert.equal(end.status, 'waiting_user');
    }),
    { numRuns: 150 },
  );
});

test('demoIntents finds nothing in small talk', () => {
  assert.deepEqual(demoIntents('how are you today?'), []);
  assert.deepEqual(demoIntents(''), []);
});

test('the demo model answers the memory passes offline: a plain summary, the facts a rule sees, an episode when tools ran', async () => {
  const { DemoProvider } = await import('../../src/llm/demo-provider');
  const { memoryPassMessages } = await import('../../src/calls/memory-passes');
  const { parseReply } = await import('../../src/llm/structured');
  const { replyJsonSchema } = await import('../../src/calls/registry');
  const context = {
    call: 'memory_extraction' as const,
    goals: ['remember that my sister is Ana'],
    transcript: [
      { role: 'user' as const, text: 'remember that my sister is Ana and I live in Lisbon' },
      { role: 'tool' as const, text: '{"tool":"notes_write","args":{"key":"sister","value":"Ana"}}' },
      { role: 'assistant' as const, text: 'Noted: your sister is Ana.' },
    ],
    known: ['The user lives in Lisbon.'],
  };
  const text = await new DemoProvider().complete({ name: 'memory_extraction', schema: replyJsonSchema('memory_extraction'), messages: memoryPassMessages(context), context });
  const reply = parseReply('memory_extraction', text);
  assert.ok(reply.ok, text);
  assert.match(reply.value.summary, /The user asked: remember that my sister is Ana\. The agent answered: Noted: your sister is Ana\./);
  // "I live in Lisbon" is already known: only the sister is new.
  assert.deepEqual(
    reply.value.facts.map((f) => [f.subject, f.predicate, f.object, f.text]),
    [['user', 'sister', 'Ana', "The user's sister is Ana."]],
  );
  assert.equal(reply.value.episode?.steps.length, 1);
  const promotion = JSON.parse(
    await new DemoProvider().complete({
      name: 'memory_promotion',
      schema: replyJsonSchema('memory_promotion'),
      messages: memoryPassMessages({ ...context, call: 'memory_promotion' }),
      context: { ...context, call: 'memory_promotion' },
    }),
  ) as Record<string, unknown>;
  assert.deepEqual(Object.keys(promotion).sort(), ['episode', 'facts']);
});

test('the demo understands "remind me in N minutes to …" as one schedule_run, and a reminder’s own run answers with the reminder', () => {
  assert.deepEqual(demoIntents('remind me in 10 minutes to stretch my legs.'), [
    { type: 'tool', description: 'Schedule a reminder in 10m', tool: 'schedule_run', args: { goal: 'Remind me to stretch my legs', in: '10m' } },
  ]);
  assert.deepEqual(demoIntents('Remind me to stretch my legs'), []);
});
