/**
 * The embedder (src/longterm/embedder.ts) with the real `openai` client over HTTP to the stub
 * model server: batches of 64, vectors in input order and unit length, a 500 retried, a server
 * that stays down failing (then failing fast during the cool-down), a wrong base URL explained,
 * and EMBEDDING_* configuration.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { loadConfig } from '../../src/config';
import { EmbeddingError, embedderFromConfig, OpenAIEmbedder } from '../../src/longterm/embedder';
import { StubModelServer, stubEmbedding } from '../helpers/stub-model-server';

describe('embedder', () => {
  const stub = new StubModelServer();
  let url = '';
  before(async () => {
    url = await stub.start();
  });
  after(() => stub.stop());
  const reset = () => {
    stub.embeddingRequests.length = 0;
    stub.embeddingFailures = 0;
    stub.embeddingsDown = false;
  };
  const embedder = (options: Partial<ConstructorParameters<typeof OpenAIEmbedder>[0]> = {}) =>
    new OpenAIEmbedder({ model: 'stub-embed', baseURL: url, apiKey: 'test-key', retryDelayMs: 10, cooldownMs: 0, ...options });

  test('inputs go in batches of 64; vectors come back in order, unit length', async () => {
    reset();
    const texts = Array.from({ length: 150 }, (_, i) => `note number ${i} about topic ${i % 7}`);
    const vectors = await embedder().embed(texts);
    assert.deepEqual(
      stub.embeddingRequests.map((r) => r.input.length),
      [64, 64, 22],
    );
    assert.ok(stub.embeddingRequests.every((r) => r.model === 'stub-embed'));
    assert.deepEqual(
      stub.embeddingRequests.flatMap((r) => r.input),
      texts,
    );
    assert.equal(vectors.length, 150);
    vectors.forEach((v, i) => {
      const expected = stubEmbedding(texts[i] ?? '');
      assert.equal(v.length, 64);
      assert.ok(
        expected.every((x, d) => Math.abs(x - (v[d] ?? 0)) < 1e-6),
        `vector ${i} is the embedding of input ${i}`,
      );
    });
    assert.deepEqual(await embedder().embed([]), []);
    assert.equal(stub.embeddingRequests.length, 3, 'nothing to embed, nothing sent');
  });

  test('EMBEDDING_DIMENSIONS is asked for and checked', async () => {
    reset();
    const [v] = await embedder({ dimensions: 16 }).embed(['a short vector']);
    assert.equal(v?.length, 16);
    assert.equal(stub.embeddingRequests[0]?.dimensions, 16);
  });

  test('a 500 is retried', async () => {
    reset();
    stub.embeddingFailures = 1;
    const [v] = await embedder().embed(['the cat sat']);
    assert.equal(v?.length, 64);
    assert.equal(stub.embeddingRequests.length, 2, 'the failed request, then the retry');
  });

  test('a server that stays down fails after the attempts, then fails fast during the cool-down', async () => {
    reset();
    stub.embeddingsDown = true;
    const down = embedder({ attempts: 3, cooldownMs: 3_600_000 });
    await assert.rejects(down.embed(['hello']), (err: unknown) => err instanceof EmbeddingError && err.retryable && /503/.test(err.message));
    assert.equal(stub.embeddingRequests.length, 3);
    await assert.rejects(down.embed(['hello again']), /cooling down/);
    assert.equal(stub.embeddingRequests.length, 3, 'no request while cooling down');
    stub.embeddingsDown = false;
    assert.equal((await embedder().embed(['back up'])).length, 1, 'an embedder without cool-down calls again');
  });

  test('a wrong base URL fails at once with what to check', async () => {
    reset();
    await assert.rejects(embedder({ baseURL: `${url}/nowhere` }).embed(['x']), (err: unknown) => {
      assert.ok(err instanceof EmbeddingError);
      assert.equal(err.retryable, false);
      assert.match(err.message, /404.*EMBEDDING_BASE_URL.*EMBEDDING_MODEL/s);
      return true;
    });
  });

  test('configuration: unset means no embedder; the model server is the default; a model without a server is refused', () => {
    assert.equal(embedderFromConfig(loadConfig({ OPENAI_BASE_URL: url })), undefined);
    assert.equal(embedderFromConfig(loadConfig({ OPENAI_BASE_URL: url, EMBEDDING_MODEL: '' })), undefined, 'blank is unset');
    assert.equal(embedderFromConfig(loadConfig({ OPENAI_BASE_URL: url, EMBEDDING_MODEL: 'stub-embed' }))?.model, 'stub-embed');
    const c = loadConfig({ EMBEDDING_MODEL: 'm', EMBEDDING_BASE_URL: url, EMBEDDING_DIMENSIONS: '32' });
    assert.equal(c.EMBEDDING_DIMENSIONS, 32);
    assert.throws(() => loadConfig({ EMBEDDING_MODEL: 'text-embedding-3-small' }), /EMBEDDING_MODEL is set but there is no embeddings server/);
    assert.throws(() => loadConfig({ EMBEDDING_MODEL: 'm', EMBEDDING_BASE_URL: 'not a url' }), /EMBEDDING_BASE_URL/);
  });
});
