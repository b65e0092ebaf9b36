/**
 * The OpenAI provider streaming (issue 29), with the real `openai` client over HTTP to the stub
 * model server: the reply and its usage are what they were without streaming, the pieces reach
 * the sink as they arrive, and servers that do not stream properly still get their reply read.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { withTextSink } from '../../src/llm/live-tokens';
import { OpenAIProvider } from '../../src/llm/openai-provider';
import type { ModelRequest } from '../../src/llm/provider';
import { tallyUsage } from '../../src/usage/usage';
import { STUB_USAGE, StubModelServer } from '../helpers/stub-model-server';

const stub = new StubModelServer();
const REPLY = { answer: 'Forty-two, streamed in pieces.' };
const request = (goal: string): ModelRequest => ({ name: 'final_answer', schema: {}, messages: [{ role: 'user', content: `Goal: ${goal}` }], context: {} as ModelRequest['context'] });

before(async () => {
  await stub.start();
  stub.fallback = () => REPLY;
  stub.chunkChars = 5;
});
after(() => stub.stop());

async function ask(provider: OpenAIProvider, goal: string, sink = true): Promise<{ text: string; pieces: string[]; usage: { promptTokens: number; completionTokens: number; calls: number } }> {
  const pieces: string[] = [];
  const { usage, result } = await tallyUsage(() =>
    sink
      ? withTextSink(
          (p) => pieces.push(p),
          () => provider.complete(request(goal)),
        )
      : provider.complete(request(goal)),
  );
  return { text: await result, pieces, usage };
}
const provider = (stream = true) => new OpenAIProvider({ baseURL: stub.url, apiKey: 'k', model: 'stub-model', timeoutMs: 5_000, stream });

test('a streamed reply: pieces to the sink, the whole text and the same usage as without streaming', async () => {
  stub.streaming = true;
  const streamed = await ask(provider(), 'streamed');
  assert.equal(streamed.text, JSON.stringify(REPLY));
  assert.ok(streamed.pieces.length > 3);
  assert.equal(streamed.pieces.join(''), streamed.text);
  assert.equal(stub.requestsFor('streamed')[0]?.body.stream, true);
  assert.deepEqual(stub.requestsFor('streamed')[0]?.body.stream_options, { include_usage: true });
  const plain = await ask(provider(false), 'not streamed');
  assert.equal(stub.requestsFor('not streamed')[0]?.body.stream, undefined, 'MODEL_STREAM=off asks without streaming');
  assert.equal(plain.text, streamed.text);
  assert.deepEqual(streamed.usage, plain.usage);
  assert.equal(streamed.usage.promptTokens, STUB_USAGE.prompt);
});

test('no sink (nobody could watch): no streaming request', async () => {
  stub.streaming = true;
  await ask(provider(), 'no sink', false);
  assert.equal(stub.requestsFor('no sink')[0]?.body.stream, undefined);
});

test('a server that answers stream:true with plain JSON: read whole, one request', async () => {
  stub.streaming = false;
  const r = await ask(provider(), 'plain json');
  assert.equal(r.text, JSON.stringify(REPLY));
  assert.equal(stub.requestsFor('plain json').length, 1);
  assert.equal(r.usage.calls, 1);
});

test('a stream sent under another content type is still read', async () => {
  stub.streaming = true;
  stub.streamContentType = 'application/json';
  try {
    const r = await ask(provider(), 'wrong type');
    assert.equal(r.text, JSON.stringify(REPLY));
    assert.equal(r.pieces.join(''), r.text);
    assert.equal(r.usage.completionTokens, STUB_USAGE.completion);
  } finally {
    stub.streamContentType = 'text/event-stream; charset=utf-8';
  }
});

test('a server that refuses streaming requests (400) is asked again without, and not asked to stream again', async () => {
  stub.streaming = true;
  stub.refuseStreaming = true;
  try {
    const p = provider();
    assert.equal((await ask(p, 'refuses')).text, JSON.stringify(REPLY));
    assert.deepEqual(
      stub.requestsFor('refuses').map((r) => r.body.stream ?? false),
      [true, false],
    );
    await ask(p, 'refuses again');
    assert.deepEqual(
      stub.requestsFor('refuses again').map((r) => r.body.stream ?? false),
      [false],
    );
  } finally {
    stub.refuseStreaming = false;
  }
});

test('a stream broken mid-reply is a retryable failure', async () => {
  stub.streaming = true;
  stub.failMidStream = 1;
  await assert.rejects(ask(provider(), 'broken'), (err: Error) => err.name === 'ModelUnavailableError');
});
