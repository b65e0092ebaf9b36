/** Structured model calls: parsing a reply, and asking again with the problem when the model gets it wrong. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { applyPlan, initialState, type ExecutionState } from '../../src/planning/execution-state';
import { replyJsonSchema } from '../../src/calls/registry';
import type { PlannerContext } from '../../src/calls/planner';
import { callModel, InvalidModelReplyError, parseReply } from '../../src/llm/structured';
import { ToolRegistry } from '../../src/tools/registry';
import { ScriptedModel } from '../helpers/scripted-model';

function state(): ExecutionState {
  const at = new Date('2025-01-01T00:00:00.000Z');
  const s = initialState({ runId: 'run-1', userId: 'ada', goal: 'What is 40+2?', model: 'scripted' }, at);
  return applyPlan(s, [{ type: 'tool', description: 'Add', tool: 'calculator', args: { expression: '40+2' } }], at);
}

function ctx<N extends PlannerContext['call']>(call: N): PlannerContext & { call: N } {
  return { call, state: state(), tools: new ToolRegistry().describe(), maxSteps: 25, maxDepth: 2 };
}

const GOOD_PLAN = JSON.stringify({ steps: [{ type: 'respond', description: 'Answer the user' }] });
const TOOL_WITHOUT_NAME = JSON.stringify({ steps: [{ type: 'tool', description: 'Add' }] });

test('parseReply accepts valid JSON of the schema', () => {
  assert.deepEqual(parseReply('final_answer', '{"answer":"42"}'), { ok: true, value: { answer: '42' } });
  assert.deepEqual(parseReply('replan_decision', '  {"decision":"continue"}\n'), { ok: true, value: { decision: 'continue' } });
});

test('parseReply accepts a reply wrapped in a ```json (or bare ```) fence', () => {
  assert.deepEqual(parseReply('reasoning', '```json\n{"thought":"40+2 is 42"}\n```'), { ok: true, value: { thought: '40+2 is 42' } });
  assert.deepEqual(parseReply('reasoning', '```\n{"thought":"ok"}\n```'), { ok: true, value: { thought: 'ok' } });
});

test('parseReply reports text that is not JSON as such', () => {
  const result = parseReply('execution_plan', 'Sure! Here is my plan: add the numbers.');
  assert.equal(result.ok, false);
  assert.match(result.ok ? '' : result.problem, /^not valid JSON \(/);
});

test('parseReply reports a schema violation as one readable line naming the field and the rule', () => {
  const result = parseReply('execution_plan', TOOL_WITHOUT_NAME);
  assert.equal(result.ok, false);
  const problem = result.ok ? '' : result.problem;
  assert.match(problem, /a tool step needs "tool"/);
  assert.match(problem, /steps\[0\]\.tool/);
  assert.doesNotMatch(problem, /\n/, 'one line, so it reads well inside the repair prompt');

  const empty = parseReply('execution_plan', '{"steps":[]}');
  assert.match(empty.ok ? '' : empty.problem, /steps/);
  const wrongCall = parseReply('final_answer', '{"thought":"x"}');
  assert.match(wrongCall.ok ? '' : wrongCall.problem, /answer/);
});

test('callModel returns the first valid reply and sends the call name, its JSON schema and the rendered messages', async () => {
  const model = new ScriptedModel([GOOD_PLAN]);
  const reply = await callModel(model, ctx('execution_plan'), 3);
  assert.deepEqual(reply, { steps: [{ type: 'respond', description: 'Answer the user' }] });
  assert.equal(model.requests.length, 1);
  const [request] = model.requests;
  assert.equal(request?.name, 'execution_plan');
  assert.deepEqual(request?.schema, replyJsonSchema('execution_plan'));
  assert.deepEqual(
    request?.messages.map((m) => m.role),
    ['system', 'user'],
  );
  assert.match(request?.messages[1]?.content ?? '', /Goal: What is 40\+2\?/);
  assert.equal(request && 'state' in request.context ? request.context.state.goal : undefined, 'What is 40+2?');
});

test('callModel repairs after one invalid reply: the second request carries the rejected reply and the problem', async () => {
  const model = new ScriptedModel([TOOL_WITHOUT_NAME, GOOD_PLAN]);
  const reply = await callModel(model, ctx('execution_plan'), 3);
  assert.deepEqual(
    reply.steps.map((s) => s.type),
    ['respond'],
  );
  assert.equal(model.requests.length, 2);
  const [first, second] = model.requests;
  assert.ok(first && second);
  assert.equal(first.messages.length, 2, 'the first request is not changed after the fact');
  assert.deepEqual(second.messages.slice(0, 2), first.messages);
  assert.deepEqual(second.messages[2], { role: 'assistant', content: TOOL_WITHOUT_NAME });
  assert.equal(second.messages[3]?.role, 'user');
  assert.match(second.messages[3]?.content ?? '', /rejected: .*a tool step needs "tool"/);
  assert.match(second.messages[3]?.content ?? '', /"execution_plan" schema/);
});

test('callModel gives up after maxAttempts invalid replies with InvalidModelReplyError carrying the count and last problem', async () => {
  const model = new ScriptedModel(['not json', TOOL_WITHOUT_NAME, '{"steps":[]}', GOOD_PLAN]);
  const err = await callModel(model, ctx('execution_plan'), 3).then(
    () => assert.fail('expected InvalidModelReplyError'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof InvalidModelReplyError);
  assert.equal(err.attempts, 3);
  assert.equal(err.call, 'execution_plan');
  assert.match(err.lastProblem, /steps/);
  assert.match(err.message, /invalid 3 time\(s\)/);
  assert.equal(model.requests.length, 3, 'no fourth request after the limit');
  assert.equal(model.requests[2]?.messages.length, 6, 'each failed attempt adds the reply and the problem');
});

test('callModel with maxAttempts 1 does not repair', async () => {
  const model = new ScriptedModel([TOOL_WITHOUT_NAME, GOOD_PLAN]);
  await assert.rejects(callModel(model, ctx('execution_plan'), 1), (e: unknown) => e instanceof InvalidModelReplyError && e.attempts === 1);
  assert.equal(model.requests.length, 1);
});

test('a provider failure propagates as is (the scripted model throws when its script runs out)', async () => {
  const model = new ScriptedModel([TOOL_WITHOUT_NAME]);
  await assert.rejects(callModel(model, ctx('execution_plan'), 3), (e: unknown) => {
    assert.ok(!(e instanceof InvalidModelReplyError));
    assert.match((e as Error).message, /no reply left for call #2/);
    return true;
  });
});
