/** The memory_summary model call: what is sent, repair of bad replies, giving up, and the offline demo's summaries. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DemoProvider } from '../../src/llm/demo-provider';
import { demoSummary, isSummaryContext, MemorySummaryReplySchema } from '../../src/calls/memory-summary';
import { InvalidModelReplyError } from '../../src/llm/structured';
import { summarize } from '../../src/llm/summarize';
import { countTextTokens } from '../../src/memory/tokens';
import { replyJsonSchema } from '../../src/calls/registry';
import { ScriptedModel } from '../helpers/scripted-model';

const TEXTS = ['The user asked for a poem about the moon. They like short poems.', 'Step 1 wrote a 4-line poem; the user chose Latin American Spanish.'];
const reply = (summary: string) => JSON.stringify({ summary });

test('sends a memory_summary request: its schema, the texts numbered, and a summary context', async () => {
  const model = new ScriptedModel([reply('User wants a short moon poem in Latin American Spanish; poem written.')]);
  const summary = await summarize(model, TEXTS, { maxTokens: 60, attempts: 3 });
  assert.equal(summary, 'User wants a short moon poem in Latin American Spanish; poem written.');
  const [request] = model.requests;
  assert.ok(request);
  assert.equal(request.name, 'memory_summary');
  assert.deepEqual(request.schema, replyJsonSchema('memory_summary'));
  assert.deepEqual((request.schema as { required: string[] }).required, ['summary']);
  assert.deepEqual(
    request.messages.map((m) => m.role),
    ['system', 'user'],
  );
  assert.match(request.messages[0]?.content ?? '', /faithful: keep every fact, name, number, identifier, decision/);
  assert.match(request.messages[1]?.content ?? '', /at most 60 tokens/);
  assert.match(request.messages[1]?.content ?? '', /\[1\]\nThe user asked for a poem[^]*\[2\]\nStep 1 wrote/);
  assert.ok(isSummaryContext(request.context));
  assert.deepEqual(request.context, { call: 'memory_summary', texts: TEXTS, maxTokens: 60 });
});

test('an invalid reply is sent back with the problem and the second reply is used', async () => {
  const model = new ScriptedModel(['{"text": "wrong field"}', reply('A fine summary.')]);
  assert.equal(await summarize(model, TEXTS, { maxTokens: 60, attempts: 3 }), 'A fine summary.');
  assert.equal(model.requests.length, 2);
  const second = model.requests[1];
  assert.deepEqual(second?.messages[2], { role: 'assistant', content: '{"text": "wrong field"}' });
  assert.match(second?.messages[3]?.content ?? '', /rejected: .*summary.*"memory_summary" schema/);
});

test('a summary over maxTokens is sent back to be shortened', async () => {
  const long = 'word '.repeat(100).trim();
  const model = new ScriptedModel([reply(long), reply('Short.')]);
  assert.equal(await summarize(model, TEXTS, { maxTokens: 20, attempts: 2 }), 'Short.');
  assert.match(model.requests[1]?.messages[3]?.content ?? '', new RegExp(`has ${countTextTokens(long)} tokens, more than the 20 allowed`));
});

test('gives up after `attempts` bad replies with InvalidModelReplyError, and sends no more requests', async () => {
  const model = new ScriptedModel(['not json', reply(''), '{"summary": 5}', reply('too late')]);
  const err = await summarize(model, TEXTS, { maxTokens: 60, attempts: 3 }).then(
    () => assert.fail('expected InvalidModelReplyError'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof InvalidModelReplyError);
  assert.equal(err.call, 'memory_summary');
  assert.equal(err.attempts, 3);
  assert.match(err.lastProblem, /summary/);
  assert.equal(model.requests.length, 3);
});

test('nothing to summarize, or no room for a summary, is refused before any call', async () => {
  const model = new ScriptedModel([]);
  await assert.rejects(summarize(model, [], { maxTokens: 60, attempts: 3 }), RangeError);
  await assert.rejects(summarize(model, TEXTS, { maxTokens: 0, attempts: 3 }), RangeError);
  assert.equal(model.requests.length, 0);
});

test('the offline demo summarizes extractively: labelled, first sentence of each text, deterministic', async () => {
  const demo = new DemoProvider();
  const summary = await summarize(demo, TEXTS, { maxTokens: 200, attempts: 1 });
  assert.equal(summary, '[offline demo summary] The user asked for a poem about the moon. Step 1 wrote a 4-line poem; the user chose Latin American Spanish.');
  assert.equal(await summarize(demo, TEXTS, { maxTokens: 200, attempts: 1 }), summary);
});

test('the offline demo keeps within maxTokens, cutting with an ellipsis', async () => {
  const texts = Array.from({ length: 20 }, (_, i) => `Fact number ${i} is that the value of item ${i} equals ${i * 7}. More detail follows.`);
  for (const maxTokens of [20, 35, 80]) {
    const summary = await summarize(new DemoProvider(), texts, { maxTokens, attempts: 1 });
    assert.ok(countTextTokens(summary) <= maxTokens, `${countTextTokens(summary)} > ${maxTokens}`);
    assert.ok(summary.startsWith('[offline demo summary] Fact number 0 is'));
    assert.ok(summary.endsWith('…'));
    assert.doesNotMatch(summary, /More detail follows/);
  }
  const veryLong = 'x'.repeat(1000);
  assert.ok(demoSummary([veryLong], 10_000).length < 260, 'a sentence is capped at 200 characters');
  assert.ok(MemorySummaryReplySchema.safeParse({ summary: demoSummary([''], 50) }).success, 'even empty texts give a valid reply');
});
