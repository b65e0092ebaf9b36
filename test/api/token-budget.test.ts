/**
 * USER_TOKEN_BUDGET within runs and beyond them, over real HTTP with a real Temporal server and
 * worker: a run whose user's budget runs out mid-run fails at its next model call with a clear
 * error (no retries, no further call); and the embeddings of long-term searches count against the
 * budget, and past it are not made.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import type { ExecutionState } from '../../src/planning/execution-state';
import { openLongTerm, type OpenLongTerm } from '../../src/store/longterm/open-longterm';
import { createUsageStore, type summarize, type UsageStore } from '../../src/store/usage/usage-store';
import { answer, cont, respondStep, toolStep } from '../helpers/scenarios';
import { requestJson } from '../helpers/http';
import { startRunsApi, type RunsApi } from '../helpers/runs-api';
import { STUB_USAGE, StubModelServer } from '../helpers/stub-model-server';
import { testConfig, waitFor } from '../helpers/temporal-env';

/** Three chat calls' tokens. */
const CALL = STUB_USAGE.prompt + STUB_USAGE.completion;
const BUDGET = 3 * CALL;

const stub = new StubModelServer();
/** The embeddings server of the API's long-term memory (the worker's runs embed nothing). */
const embeddings = new StubModelServer();
const config = testConfig({ USER_TOKEN_BUDGET: String(BUDGET) });
let usage: UsageStore;
let longterm: OpenLongTerm;
let api: RunsApi;

before(async () => {
  await embeddings.start();
  usage = createUsageStore(config);
  await usage.setup();
  longterm = await openLongTerm({ ...config, EMBEDDING_MODEL: 'stub-embed', EMBEDDING_BASE_URL: embeddings.url });
  api = await startRunsApi(stub, { config, app: { usage: { store: usage, budget: BUDGET }, longterm: { longterm: longterm.longterm } } });
});
after(async () => {
  await api?.stop();
  await longterm?.close();
  await usage?.end();
  await embeddings.stop();
});

const newUser = (what: string) => `${what}-${randomUUID().slice(0, 8)}`;
const usageOf = async (userId: string) => (await requestJson<ReturnType<typeof summarize>>(api.url, 'GET', `/v1/users/${userId}/usage`)).body;

test("a run whose user's budget runs out mid-run fails at its next model call with a clear error, without retrying it", async () => {
  const user = newUser('spender');
  const goal = `spend it all ${user}`;
  const calc = toolStep('calculator', { expression: '1+1' });
  stub.script(goal, { execution_plan: [{ steps: [calc, calc, calc, respondStep] }], replan_decision: [cont, cont, cont], final_answer: [answer('done')] });
  const started = await requestJson<{ runId: string }>(api.url, 'POST', '/v1/runs', { userId: user, goal });
  assert.equal(started.status, 201, JSON.stringify(started.body));
  // The plan and two replans reach the budget: the third replan is refused before it is sent.
  const failed = await waitFor('the run to fail', async () => {
    const state = (await requestJson<ExecutionState>(api.url, 'GET', `/v1/runs/${started.body.runId}`)).body;
    return state.status === 'failed' ? state : state.status === 'completed' ? assert.fail('the run completed past its budget') : undefined;
  });
  assert.match(failed.lastError ?? '', new RegExp(`user "${user}" used ${BUDGET} of a ${BUDGET}-token monthly budget \\(USER_TOKEN_BUDGET\\); model calls resume on \\d{4}-\\d{2}-01`));
  assert.doesNotMatch(failed.lastError ?? '', /attempts/, 'refused once, not retried');
  // Not retried: every regular call in the run's history started once (a local call's retries would name their attempts above).
  const events = (await api.env.client.workflow.getHandle(started.body.runId).fetchHistory()).events ?? [];
  const retried = events.filter((e) => (e.activityTaskStartedEventAttributes?.attempt ?? 1) > 1);
  assert.deepEqual(retried, [], 'no retries with backoff');
  assert.equal(stub.requestsFor(goal).length, 3, 'no model call past the budget');
  assert.equal((await usageOf(user)).total.calls, 3);
  // And the API refuses the next run of that user.
  const refused = await requestJson<{ error: { code: string } }>(api.url, 'POST', '/v1/runs', { userId: user, goal });
  assert.equal(refused.status, 403);
  assert.equal(refused.body.error.code, 'budget_exceeded');
});

test("a long-term search's embedding counts against the user's budget; past it, searches are lexical and embed nothing", async () => {
  const user = newUser('searcher');
  const imported = await requestJson(api.url, 'POST', `/v1/users/${user}/memory/import`, { conversations: [{ messages: [{ role: 'user', text: 'my kitten is called Pixel' }] }] });
  assert.equal(imported.status, 201);
  const afterImport = await usageOf(user);
  assert.equal(afterImport.total.calls, 1, 'the import embedded its message');
  const sent = embeddings.embeddingRequests.length;
  const hits = await requestJson<{ results: { text: string }[] }>(api.url, 'POST', `/v1/users/${user}/memory/search`, { query: 'feline' });
  assert.equal(hits.status, 200);
  assert.equal(hits.body.results[0]?.text, 'my kitten is called Pixel', 'found by its embedding');
  assert.equal(embeddings.embeddingRequests.length, sent + 1);
  const afterSearch = await usageOf(user);
  assert.equal(afterSearch.total.calls, 2);
  assert.equal(afterSearch.total.promptTokens, afterImport.total.promptTokens + 1, "the stub counts a token per input: the query's");
  const searched = (await usage.records(user)).filter((r) => r.source === 'api/memory-search');
  assert.deepEqual(
    searched.map((r) => [r.model, r.promptTokens, r.calls]),
    [['stub-embed', 1, 1]],
    'recorded under the embeddings model',
  );
  // A fact the person states is embedded too, and counted.
  assert.equal((await requestJson(api.url, 'POST', `/v1/users/${user}/facts`, { subject: 'user', predicate: 'lives in', object: 'Lisbon', text: 'The user lives in Lisbon.' })).status, 201);
  assert.deepEqual(
    (await usage.records(user)).filter((r) => r.source === 'api/memory-fact').map((r) => [r.model, r.calls]),
    [['stub-embed', 1]],
  );
  const spent = embeddings.embeddingRequests.length;
  // The rest of the month's budget spent elsewhere: the next search embeds nothing and finds by words alone.
  await usage.record({
    userId: user,
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
  const lexical = await requestJson<{ results: { text: string }[] }>(api.url, 'POST', `/v1/users/${user}/memory/search`, { query: 'Pixel' });
  assert.equal(lexical.status, 200);
  assert.equal(lexical.body.results[0]?.text, 'my kitten is called Pixel');
  assert.equal(embeddings.embeddingRequests.length, spent, 'no embeddings call past the budget');
});
