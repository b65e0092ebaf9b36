/**
 * Dense vectors in long-term retrieval, through openLongTerm(config) as the API and the worker
 * open it, on the embedded file store and on PostgreSQL, with the stub model server's
 * /embeddings: a query sharing no stemmed word with a message, fact, episode or summary finds it
 * only when EMBEDDING_MODEL is set (and after a reopen: vectors are stored); with the embeddings
 * server down, every write still succeeds (without vectors, logged) and lexical search answers.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { loadConfig } from '../../src/config';
import type { MemoryKind, WriteMeta } from '../../src/longterm/contract';
import { analyze } from '../../src/longterm/text';
import { openLongTerm, type OpenLongTerm } from '../../src/store/longterm/open-longterm';
import { createDatabase, dropDatabases } from '../helpers/scratch-postgres';
import { StubModelServer } from '../helpers/stub-model-server';

const meta: WriteMeta = { origin: 'agent', reason: 'dense retrieval test' };
const TARGET = 'The cat knocked my grandmother’s vase off the shelf.';
const QUERY = 'feline smashed pottery';
const NOISE = [
  'Can you help me plan a trip to the mountains next summer?',
  'I need a recipe for a vegetarian lasagna with spinach.',
  'The weather today is rainy and cold, I stayed inside.',
  'Remind me to call the dentist about my appointment.',
  'Which running shoes are good for flat feet?',
  'Our team meeting moved to Thursday afternoon.',
];

const stub = new StubModelServer();
let root = '';
let databaseUrl = '';
before(async () => {
  await stub.start();
  root = await mkdtemp(path.join(tmpdir(), 'threadline-dense-'));
  databaseUrl = await createDatabase();
});
after(async () => {
  await stub.stop();
  await rm(root, { recursive: true, force: true });
});
after(dropDatabases);

const backends = [
  { name: 'file', env: () => ({ MEMORY_STORE: 'file', DATA_DIR: root }) },
  { name: 'postgres', env: () => ({ MEMORY_STORE: 'postgres', DATABASE_URL: databaseUrl, DATA_DIR: root }) },
];

for (const backend of backends) {
  describe(`dense retrieval: ${backend.name}`, () => {
    const open = (env: Record<string, string>, warnings: string[] = []): Promise<OpenLongTerm> =>
      openLongTerm(loadConfig({ ...backend.env(), OPENAI_BASE_URL: stub.url, ...env }), { warn: (message, details) => warnings.push(`${message} ${JSON.stringify(details)}`) });
    const user = () => `dense_${randomBytes(4).toString('hex')}`;

    /** One record of each kind that only the synonyms of the stub's embedding model link to its query. */
    async function plant(lt: OpenLongTerm, u: string): Promise<Record<MemoryKind, { id: string; query: string }>> {
      const { sessionIds } = await lt.longterm.importConversations(
        u,
        [{ messages: [{ id: 'target', role: 'user', text: TARGET }, ...NOISE.map((text) => ({ role: 'user' as const, text }))] }],
        meta,
        () => `session-${u}`,
      );
      const fact = await lt.longterm.recordFact(u, { subject: 'I', predicate: 'drive', object: 'a sedan', text: 'The user drives a sedan' }, { messageIds: [] }, meta);
      const episode = await lt.longterm.recordEpisode(
        u,
        { goal: 'Find a physician nearby', steps: ['searched the clinic list'], outcome: 'booked Dr. Lee', lessons: [] },
        'invocation',
        { messageIds: [] },
        meta,
      );
      const summary = await lt.longterm.addSummary(u, sessionIds[0] ?? '', 'They talked about moving residence to the coast.', { messageIds: [] }, meta);
      return {
        message: { id: 'target', query: QUERY },
        fact: { id: fact.fact.id, query: 'which automobile' },
        episode: { id: episode.id, query: 'seeing a doctor' },
        summary: { id: summary.id, query: 'new house' },
      };
    }

    test('a query with no word in common finds the message, fact, episode and summary only with EMBEDDING_MODEL', async () => {
      assert.equal(analyze(QUERY).filter((t) => analyze(TARGET).includes(t)).length, 0, 'no stemmed word shared');
      const u = user();
      const withVectors = await open({ EMBEDDING_MODEL: 'stub-embed' });
      const planted = await plant(withVectors, u);
      for (const [kind, { id, query }] of Object.entries(planted) as [MemoryKind, { id: string; query: string }][]) {
        const hits = await withVectors.longterm.search(u, { query, kinds: [kind], k: 3 });
        assert.equal(hits[0]?.id, id, `${kind}: ${JSON.stringify(hits)}`);
      }
      const mixed = await withVectors.longterm.search(u, { query: QUERY, k: 3 });
      assert.equal(mixed[0]?.id, 'target', JSON.stringify(mixed));
      await withVectors.close();

      const lexicalOnly = await open({});
      for (const [kind, { id, query }] of Object.entries(planted) as [MemoryKind, { id: string; query: string }][]) {
        const hits = await lexicalOnly.longterm.search(u, { query, kinds: [kind], k: 3 });
        assert.ok(!hits.some((h) => h.id === id), `${kind} is not found lexically: ${JSON.stringify(hits)}`);
      }
      await lexicalOnly.close();

      // Vectors were stored, not held in process: a new instance finds by them.
      const before = stub.embeddingRequests.length;
      const reopened = await open({ EMBEDDING_MODEL: 'stub-embed' });
      assert.equal((await reopened.longterm.search(u, { query: QUERY, kinds: ['message'], k: 1 }))[0]?.id, 'target');
      assert.equal(stub.embeddingRequests.length, before + 1, 'only the query was embedded');
      await reopened.close();
    });

    test('an import is embedded in batches; a repeated import embeds nothing', async () => {
      const u = user();
      const lt = await open({ EMBEDDING_MODEL: 'stub-embed' });
      const messages = Array.from({ length: 100 }, (_, i) => ({ id: `m${i}`, role: 'user' as const, text: `message number ${i}` }));
      const start = stub.embeddingRequests.length;
      assert.equal((await lt.longterm.importConversations(u, [{ sessionId: 's1', messages }], meta, () => 'unused')).imported, 100);
      assert.deepEqual(
        stub.embeddingRequests.slice(start).map((r) => r.input.length),
        [64, 36],
      );
      assert.equal((await lt.longterm.importConversations(u, [{ sessionId: 's1', messages }], meta, () => 'unused')).imported, 0);
      assert.equal(stub.embeddingRequests.length, start + 2);
      await lt.close();
    });

    test('with the embeddings server down, every write succeeds without vectors and lexical search still answers', async () => {
      const u = user();
      const warnings: string[] = [];
      const lt = await open({ EMBEDDING_MODEL: 'stub-embed' }, warnings);
      stub.embeddingsDown = true;
      try {
        const { imported } = await lt.longterm.importConversations(u, [{ sessionId: 's1', messages: [{ id: 'kept', role: 'user', text: 'My cat is called Miso.' }] }], meta, () => 'unused');
        assert.equal(imported, 1);
        const fact = await lt.longterm.recordFact(u, { subject: 'I', predicate: 'drive', object: 'a sedan', text: 'The user drives a sedan' }, { messageIds: ['kept'] }, meta);
        assert.equal(fact.outcome, 'added');
        await lt.longterm.recordEpisode(u, { goal: 'Find a physician', steps: [], outcome: 'found one', lessons: [] }, 'invocation', { messageIds: [] }, meta);
        await lt.longterm.addSummary(u, 's1', 'They talked about the cat Miso.', { messageIds: [] }, meta);
        assert.equal((await lt.longterm.getMessage(u, 'kept'))?.text, 'My cat is called Miso.');
        assert.equal((await lt.longterm.getFact(u, fact.fact.id))?.text, 'The user drives a sedan');
        const hits = await lt.longterm.search(u, { query: 'cat Miso' });
        assert.deepEqual(hits.map((h) => h.kind).sort(), ['message', 'summary']);
        assert.ok(
          warnings.some((w) => /embedding failed; records stored without vectors/.test(w) && /503/.test(w)),
          warnings.join('\n'),
        );
        assert.ok(
          warnings.some((w) => /query embedding failed/.test(w)),
          warnings.join('\n'),
        );
      } finally {
        stub.embeddingsDown = false;
        await lt.close();
      }
    });
  });
}
