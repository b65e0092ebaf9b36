/**
 * User ids differing only in case are one user (issue 32, item 7) on the file store and on real
 * PostgreSQL: `Alice` and `alice` see the same long-term memory and spend the same token budget,
 * while each response echoes the id as its request spelt it.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { SearchHit } from '../../src/longterm/contract';
import { openLongTerm, type OpenLongTerm } from '../../src/store/longterm/open-longterm';
import { createUsageStore, type summarize, type UsageStore } from '../../src/store/usage/usage-store';
import { requestJson } from '../helpers/http';
import { startRunsApi, type RunsApi } from '../helpers/runs-api';
import { createDatabase, dropDatabases } from '../helpers/scratch-postgres';
import { STUB_USAGE, StubModelServer } from '../helpers/stub-model-server';
import { testConfig } from '../helpers/temporal-env';

const BUDGET = 3 * (STUB_USAGE.prompt + STUB_USAGE.completion);

for (const backend of ['file', 'postgres'] as const) {
  describe(`user ids differing only in case: ${backend} store`, () => {
    const stub = new StubModelServer();
    let api: RunsApi;
    let longterm: OpenLongTerm;
    let usage: UsageStore;

    before(async () => {
      const store: Record<string, string> = backend === 'postgres' ? { MEMORY_STORE: 'postgres', DATABASE_URL: await createDatabase() } : { MEMORY_STORE: 'file' };
      const config = testConfig({ ...store, USER_TOKEN_BUDGET: String(BUDGET) });
      usage = createUsageStore(config);
      await usage.setup();
      longterm = await openLongTerm(config);
      api = await startRunsApi(stub, { config, app: { usage: { store: usage, budget: BUDGET }, longterm: { longterm: longterm.longterm } } });
    });
    after(async () => {
      await api?.stop();
      await longterm?.close();
      await usage?.end();
      if (backend === 'postgres') await dropDatabases();
    });

    test('Alice and alice share one long-term memory and one budget; responses keep each spelling', async () => {
      const tag = randomBytes(3).toString('hex');
      const [upper, lower, shout] = [`Alice-${tag}`, `alice-${tag}`, `ALICE-${tag}`];

      const imported = await requestJson(api.url, 'POST', `/v1/users/${upper}/memory/import`, { conversations: [{ messages: [{ id: 'k1', role: 'user', text: 'my kitten is called Pixel' }] }] });
      assert.equal(imported.status, 201);
      const found = await requestJson<{ results: SearchHit[] }>(api.url, 'POST', `/v1/users/${lower}/memory/search`, { query: 'what is the kitten called?' });
      assert.equal(found.status, 200);
      assert.equal(found.body.results[0]?.id, 'k1', 'alice finds what Alice imported');
      const stated = await requestJson(api.url, 'POST', `/v1/users/${lower}/facts`, { subject: 'user', predicate: 'lives in', object: 'Lisbon', text: 'The user lives in Lisbon.' });
      assert.equal(stated.status, 201);
      const facts = await requestJson<{ facts: { text: string }[] }>(api.url, 'GET', `/v1/users/${shout}/facts`);
      assert.deepEqual(
        facts.body.facts.map((f) => f.text),
        ['The user lives in Lisbon.'],
        'ALICE sees the fact alice stated',
      );

      // Alice's month is spent: alice may start no run, and both read the same usage, each under its own spelling.
      await usage.record({
        userId: upper,
        runId: null,
        sessionId: null,
        source: 'test',
        model: 'stub-model',
        at: new Date().toISOString(),
        promptTokens: BUDGET,
        completionTokens: 0,
        cachedTokens: 0,
        calls: 1,
      });
      const refused = await requestJson<{ error: { code: string } }>(api.url, 'POST', '/v1/runs', { userId: lower, goal: 'one more thing' });
      assert.equal(refused.status, 403);
      assert.equal(refused.body.error.code, 'budget_exceeded');
      const [a, b] = await Promise.all([upper, lower].map(async (u) => (await requestJson<ReturnType<typeof summarize>>(api.url, 'GET', `/v1/users/${u}/usage`)).body));
      assert.equal(a?.userId, upper);
      assert.equal(b?.userId, lower);
      assert.deepEqual(a?.total, b?.total);
      assert.ok((b?.total.promptTokens ?? 0) >= BUDGET);
    });
  });
}
