/**
 * The long-term memory REST API (DESIGN.md "Long-term memory") against the real API: import then
 * search with the given ids, facts stated, superseded, ended and their history, episodes, request
 * limits; and with THREADLINE_AUTH=apikey, another user's memory and fact ids are 404.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { Fact, RecordedFact, SearchHit } from '../../src/longterm/contract';
import { openLongTerm, type OpenLongTerm } from '../../src/store/longterm/open-longterm';
import type { LongTermAuditEntry } from '../../src/store/longterm/store';
import { requestJson } from '../helpers/http';
import { startKeyedApi, type KeyedApi } from '../helpers/keyed-api';
import { startRunsApi, type RunsApi } from '../helpers/runs-api';
import { StubModelServer } from '../helpers/stub-model-server';
import { testConfig } from '../helpers/temporal-env';

const user = () => `lt-${randomUUID().slice(0, 8)}`;
const fact = (object: string, validFrom: string) => ({ subject: 'I', predicate: 'live in', object, text: `The user lives in ${object}`, validFrom });

describe('long-term memory API', () => {
  const stub = new StubModelServer();
  const config = testConfig();
  const imports: { userId: string; sessionIds: string[] }[] = [];
  let longterm: OpenLongTerm;
  let api: RunsApi;
  before(async () => {
    longterm = await openLongTerm(config);
    api = await startRunsApi(stub, { config, app: { longterm: { longterm: longterm.longterm, onImported: async (i) => (imports.push(i), null) } } });
  });
  after(async () => {
    await api?.stop();
    await longterm?.close();
  });

  test('import keeps given ids, creates session ids, is searchable on return and tells the hook', async () => {
    const u = user();
    const res = await requestJson<{ imported: number; sessionIds: string[] }>(api.url, 'POST', `/v1/users/${u}/memory/import`, {
      conversations: [
        {
          sessionId: 'support-2023',
          title: 'old support chat',
          messages: [
            { id: 'ext-1', role: 'user', text: 'My printer model is a Brother HL-L2350 and it jams on thick paper.', at: '2023-04-01T10:00:00Z' },
            { id: 'ext-2', role: 'assistant', text: 'Try the manual feed slot for card stock.', at: '2023-04-01T10:01:00Z' },
          ],
        },
        { messages: [{ role: 'user', name: 'Dana', text: 'We are planning a trip to Kyoto in the autumn.' }] },
      ],
    });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    assert.equal(res.body.imported, 3);
    assert.equal(res.body.sessionIds.length, 2);
    assert.equal(res.body.sessionIds[0], 'support-2023');
    assert.match(res.body.sessionIds[1] ?? '', /^session-/);
    assert.deepEqual(imports.at(-1), { userId: u, sessionIds: res.body.sessionIds });
    const search = await requestJson<{ results: SearchHit[] }>(api.url, 'POST', `/v1/users/${u}/memory/search`, { query: 'which printer jams?', k: 2 });
    assert.equal(search.status, 200);
    assert.equal(search.body.results[0]?.id, 'ext-1');
    assert.deepEqual(search.body.results[0]?.source, { sessionId: 'support-2023', messageIds: ['ext-1'] });
    assert.equal(search.body.results[0]?.kind, 'message');
    const kyoto = await requestJson<{ results: SearchHit[] }>(api.url, 'POST', `/v1/users/${u}/memory/search`, { query: 'Kyoto trip', kinds: ['message'], asOf: '2024-01-01T00:00:00Z' });
    assert.equal(kyoto.body.results.length, 0, 'imported just now: after asOf');
    const again = await requestJson<{ imported: number }>(api.url, 'POST', `/v1/users/${u}/memory/import`, {
      conversations: [{ sessionId: 'support-2023', messages: [{ id: 'ext-1', role: 'user', text: 'different' }] }],
    });
    assert.equal(again.body.imported, 0, 'a given id already there is kept as it was');
  });

  test('facts: stated, superseded, listed at a date, ended (kept), history; episodes', async () => {
    const u = user();
    const first = await requestJson<RecordedFact>(api.url, 'POST', `/v1/users/${u}/facts`, fact('Lisbon', '2020-01-01T00:00:00Z'));
    assert.equal(first.status, 201, JSON.stringify(first.body));
    assert.equal(first.body.outcome, 'added');
    const second = await requestJson<RecordedFact>(api.url, 'POST', `/v1/users/${u}/facts`, fact('Porto', '2023-01-01T00:00:00Z'));
    assert.equal(second.body.outcome, 'superseded');
    assert.equal(second.body.previous?.id, first.body.fact.id);
    const now = await requestJson<{ facts: Fact[] }>(api.url, 'GET', `/v1/users/${u}/facts`);
    assert.deepEqual(
      now.body.facts.map((f) => f.object),
      ['Porto'],
    );
    const then = await requestJson<{ facts: Fact[] }>(api.url, 'GET', `/v1/users/${u}/facts?asOf=2021-06-01T00:00:00Z&q=where%20do%20I%20live`);
    assert.deepEqual(
      then.body.facts.map((f) => f.object),
      ['Lisbon'],
    );
    const all = await requestJson<{ facts: Fact[] }>(api.url, 'GET', `/v1/users/${u}/facts?includeInvalid=true`);
    assert.equal(all.body.facts.length, 2);
    const ended = await requestJson<Fact>(api.url, 'DELETE', `/v1/users/${u}/facts/${second.body.fact.id}`);
    assert.equal(ended.status, 200);
    assert.ok(ended.body.validTo);
    assert.equal((await requestJson<{ facts: Fact[] }>(api.url, 'GET', `/v1/users/${u}/facts`)).body.facts.length, 0);
    const history = await requestJson<{ facts: Fact[] }>(api.url, 'GET', `/v1/users/${u}/facts/${second.body.fact.id}/history`);
    assert.deepEqual(
      history.body.facts.map((f) => f.object),
      ['Lisbon', 'Porto'],
    );
    assert.equal((await requestJson(api.url, 'DELETE', `/v1/users/${u}/facts/fact_nope`)).status, 404);
    assert.equal((await requestJson(api.url, 'GET', `/v1/users/${u}/facts/fact_nope/history`)).status, 404);
    const episodes = await requestJson<{ episodes: unknown[] }>(api.url, 'GET', `/v1/users/${u}/episodes?q=anything`);
    assert.deepEqual(episodes.body, { episodes: [] });
  });

  test('the audit lists every write and read of the user’s long-term memory, the agent’s recall included, with filters', async () => {
    const u = user();
    const stated = await requestJson<RecordedFact>(api.url, 'POST', `/v1/users/${u}/facts`, fact('Lyon', '2022-01-01T00:00:00Z'));
    assert.equal((await requestJson(api.url, 'POST', `/v1/users/${u}/memory/search`, { query: 'where do I live' })).status, 200);
    // A run's recall into its prompt, as the worker makes it (another process in production: the same store).
    await longterm.longterm.contextFor(u, 'Where do I live?', {}, { origin: 'agent', reason: 'recall at the start of the run', runId: 'run-audit-1' });
    const audit = await requestJson<{ entries: LongTermAuditEntry[] }>(api.url, 'GET', `/v1/users/${u}/memory/audit`);
    assert.equal(audit.status, 200, JSON.stringify(audit.body));
    assert.deepEqual(
      audit.body.entries.map((e) => [e.kind, e.action, e.origin]),
      [
        ['read', 'context', 'agent'],
        ['read', 'search', 'person'],
        ['write', 'record_fact', 'person'],
      ],
    );
    assert.deepEqual(audit.body.entries[0]?.targetIds, [stated.body.fact.id]);
    assert.equal(audit.body.entries[0]?.runId, 'run-audit-1');
    const list = async (query: string) => (await requestJson<{ entries: LongTermAuditEntry[] }>(api.url, 'GET', `/v1/users/${u}/memory/audit?${query}`)).body.entries.map((e) => e.action);
    assert.deepEqual(await list('kind=write'), ['record_fact']);
    assert.deepEqual(await list('kind=read&runId=run-audit-1'), ['context']);
    assert.deepEqual(await list('action=search'), ['search']);
    assert.deepEqual(await list('limit=1'), ['context']);
    assert.deepEqual(await list('until=2001-01-01T00:00:00%2B02:00'), []);
    assert.equal((await list(`since=${encodeURIComponent(audit.body.entries[2]?.at ?? '')}`)).length, 3);
    // Listing the audit is not itself a read of memory: the audit did not grow.
    assert.equal((await list('')).length, 3);
    for (const bad of ['kind=maybe', 'since=yesterday', 'limit=0', 'action=drop_table']) {
      assert.equal((await requestJson(api.url, 'GET', `/v1/users/${u}/memory/audit?${bad}`)).status, 400, bad);
    }
  });

  test('bad requests are 400, an import beyond 10 MB is 413, a search body beyond 64 kB is 413', async () => {
    const u = user();
    const bad = await requestJson<{ error: { code: string } }>(api.url, 'POST', `/v1/users/${u}/facts`, { subject: 'x' });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.code, 'invalid_request');
    assert.equal((await requestJson(api.url, 'POST', `/v1/users/${u}/memory/search`, { query: '', k: 5 })).status, 400);
    assert.equal((await requestJson(api.url, 'GET', `/v1/users/${u}/facts?asOf=yesterday`)).status, 400);
    assert.equal((await requestJson(api.url, 'POST', `/v1/users/${u}/memory/import`, { conversations: [{ messages: [{ role: 'robot', text: 'hi' }] }] })).status, 400);
    const huge = 'x'.repeat(90_000);
    const tooBig = { conversations: [{ messages: Array.from({ length: 120 }, () => ({ role: 'user', text: huge })) }] };
    const res = await requestJson<{ error: { code: string } }>(api.url, 'POST', `/v1/users/${u}/memory/import`, tooBig);
    assert.equal(res.status, 413);
    assert.equal(res.body.error.code, 'payload_too_large');
    assert.equal((await requestJson(api.url, 'POST', `/v1/users/${u}/memory/search`, { query: 'q', pad: huge })).status, 413);
  });
});

describe('long-term memory API with API keys', () => {
  const stub = new StubModelServer();
  let api: KeyedApi;
  before(async () => {
    api = await startKeyedApi(stub);
  });
  after(async () => {
    await api?.stop();
  });

  test("another user's memory and fact ids are 404; one's own works", async () => {
    const [alice, bob] = [user(), user()];
    const [aliceKey, bobKey] = [await api.keyFor(alice), await api.keyFor(bob)];
    const as = (key: string) => ({ authorization: `Bearer ${key}` });
    const bobs = await requestJson<RecordedFact>(
      api.url,
      'POST',
      `/v1/users/${bob}/facts`,
      { subject: 'I', predicate: 'have', object: 'a secret garden', text: 'Bob has a secret garden' },
      as(bobKey),
    );
    assert.equal(bobs.status, 201, JSON.stringify(bobs.body));
    const bobFact = bobs.body.fact.id;
    assert.equal((await requestJson(api.url, 'GET', `/v1/users/${bob}/facts`, undefined, as(aliceKey))).status, 404);
    assert.equal((await requestJson(api.url, 'POST', `/v1/users/${bob}/memory/search`, { query: 'garden' }, as(aliceKey))).status, 404);
    assert.equal((await requestJson(api.url, 'POST', `/v1/users/${bob}/memory/import`, { conversations: [{ messages: [{ role: 'user', text: 'x' }] }] }, as(aliceKey))).status, 404);
    assert.equal((await requestJson(api.url, 'DELETE', `/v1/users/${bob}/facts/${bobFact}`, undefined, as(aliceKey))).status, 404);
    assert.equal((await requestJson(api.url, 'GET', `/v1/users/${bob}/episodes`, undefined, as(aliceKey))).status, 404);
    assert.equal((await requestJson(api.url, 'GET', `/v1/users/${bob}/memory/audit`, undefined, as(aliceKey))).status, 404);
    assert.equal((await requestJson(api.url, 'GET', `/v1/users/${bob}/memory/audit`, undefined, as(bobKey))).status, 200);
    // Bob's fact id under Alice's own path: not hers, so not found.
    assert.equal((await requestJson(api.url, 'DELETE', `/v1/users/${alice}/facts/${bobFact}`, undefined, as(aliceKey))).status, 404);
    assert.equal((await requestJson(api.url, 'GET', `/v1/users/${alice}/facts/${bobFact}/history`, undefined, as(aliceKey))).status, 404);
    const search = await requestJson<{ results: SearchHit[] }>(api.url, 'POST', `/v1/users/${alice}/memory/search`, { query: 'secret garden' }, as(aliceKey));
    assert.equal(search.status, 200);
    assert.deepEqual(search.body.results, []);
    assert.equal((await requestJson(api.url, 'GET', `/v1/users/${bob}/facts`)).status, 401);
    const own = await requestJson<{ facts: Fact[] }>(api.url, 'GET', `/v1/users/${bob}/facts`, undefined, as(bobKey));
    assert.deepEqual(
      own.body.facts.map((f) => f.id),
      [bobFact],
    );
  });
});
