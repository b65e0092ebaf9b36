/**
 * User ids differing only in case are one user (issue 32, item 7) on the file store and on real
 * PostgreSQL: `Alice` and `alice` see the same long-term memory and spend the same token budget,
 * while each response echoes the id as its request spelt it. So on Temporal: runs, sessions and
 * schedules started for `Alice` are listed, counted and owned by `alice` too, showing `Alice`.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { SearchHit } from '../../src/longterm/contract';
import type { ExecutionState } from '../../src/planning/execution-state';
import { openLongTerm, type OpenLongTerm } from '../../src/store/longterm/open-longterm';
import { openMemory, type OpenMemory } from '../../src/store/open-memory';
import { createUsageStore, type summarize, type UsageStore } from '../../src/store/usage/usage-store';
import { Runs, type RunSummary } from '../../src/temporal/runs';
import { Schedules, type ScheduleView } from '../../src/temporal/schedules';
import { Sessions, type SessionSummary } from '../../src/temporal/sessions';
import type { MessageOutcome } from '../../src/workflows/session-definitions';
import { requestJson } from '../helpers/http';
import { startKeyedApi, type KeyedApi } from '../helpers/keyed-api';
import { startRunsApi, type RunsApi } from '../helpers/runs-api';
import { askStep, cont, respondStep } from '../helpers/scenarios';
import { createDatabase, dropDatabases } from '../helpers/scratch-postgres';
import { STUB_USAGE, StubModelServer } from '../helpers/stub-model-server';
import { testConfig, waitFor } from '../helpers/temporal-env';

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

/** A run that asks one question, then answers; and one that answers at once. */
function scriptRuns(stub: StubModelServer, asking: string, answering: string): void {
  stub.script(asking, { execution_plan: [{ steps: [askStep('Which colour?'), respondStep] }], replan_decision: [cont], final_answer: [{ answer: 'Painted.' }] });
  stub.script(answering, { execution_plan: [{ steps: [respondStep] }], final_answer: [{ answer: 'Done.' }] });
}

/** The three spellings of one user, unique to this test. */
const spellings = () => {
  const tag = randomBytes(3).toString('hex');
  return [`Alice-${tag}`, `alice-${tag}`, `ALICE-${tag}`] as const;
};

describe('user ids differing only in case: runs, sessions and schedules on Temporal', () => {
  const stub = new StubModelServer();
  let api: RunsApi;
  let memory: OpenMemory;
  const call = <T = Record<string, unknown>>(method: string, route: string, body?: unknown) => requestJson<T>(api.url, method, route, body);
  /** What a listing shows once visibility has caught up with `ids`. */
  const listed = <T extends Record<string, unknown>>(route: string, key: string, ids: string[], idOf: (item: T) => string) =>
    waitFor(`${route} to list ${ids.join(', ')}`, async () => {
      const res = await call<Record<string, T[]>>('GET', route);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      const items = res.body[key] ?? [];
      return ids.every((id) => items.some((i) => idOf(i) === id)) ? items : undefined;
    });

  before(async () => {
    const config = testConfig();
    memory = await openMemory(config);
    api = await startRunsApi(stub, {
      config,
      app: (env) => ({
        sessions: new Sessions(env.client, memory.memory, env.config),
        schedules: new Schedules(env.client, new Runs(env.client, env.config), { perUser: 1 }),
        memory: memory.memory,
        limits: { openSessionsPerUser: 1 },
      }),
    });
  });
  after(async () => {
    await api?.stop();
    await memory?.close();
  });

  test("Alice's runs and session are listed for alice and ALICE, showing Alice; replies and cancels reach them", async () => {
    const [upper, lower, shout] = spellings();
    const [asking, answering] = [`paint the fence (${upper})`, `say done (${upper})`];
    scriptRuns(stub, asking, answering);

    const started = await call<{ runId: string }>('POST', '/v1/runs', { userId: upper, goal: asking });
    assert.equal(started.status, 201, JSON.stringify(started.body));
    const runId = started.body.runId;
    const created = await call<{ sessionId: string }>('POST', '/v1/sessions', { userId: upper });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const sessionId = created.body.sessionId;
    const sent = await call<MessageOutcome>('POST', `/v1/sessions/${sessionId}/messages`, { text: answering });
    assert.equal(sent.status, 200, JSON.stringify(sent.body));
    const sessionRun = sent.body.runId ?? '';
    assert.equal(sent.body.kind, 'new_run');

    for (const who of [lower, shout, upper]) {
      const runs = await listed<RunSummary & Record<string, unknown>>(`/v1/runs?userId=${who}`, 'runs', [runId, sessionRun], (r) => r.runId);
      assert.deepEqual(
        runs.map((r) => r.userId),
        runs.map(() => upper),
        `${who} sees Alice's runs as Alice's`,
      );
      const sessions = await listed<SessionSummary & Record<string, unknown>>(`/v1/sessions?userId=${who}`, 'sessions', [sessionId], (s) => s.sessionId);
      assert.deepEqual(
        sessions.map((s) => [s.sessionId, s.userId]),
        [[sessionId, upper]],
      );
    }
    const waiting = await listed<RunSummary & Record<string, unknown>>(`/v1/runs?userId=${lower}&status=waiting_user`, 'runs', [runId], (r) => r.runId);
    assert.deepEqual(
      waiting.map((r) => r.runId),
      [runId],
    );
    // Another user's listing has none of them.
    const [other] = spellings();
    assert.deepEqual((await call<{ runs: RunSummary[] }>('GET', `/v1/runs?userId=${other}`)).body.runs, []);

    // One user: alice may not open a second session while Alice's is open (at most one each).
    const second = await call<{ error: { code: string } }>('POST', '/v1/sessions', { userId: lower });
    assert.equal(second.status, 429, JSON.stringify(second.body));

    const replied = await call('POST', `/v1/runs/${runId}/reply`, { text: 'green' });
    assert.equal(replied.status, 202, JSON.stringify(replied.body));
    await waitFor('the run to complete', async () => (await call<ExecutionState>('GET', `/v1/runs/${runId}`)).body.status === 'completed');
    const state = (await call<ExecutionState>('GET', `/v1/runs/${runId}`)).body;
    assert.equal(state.userId, upper, 'the run keeps the spelling it was started with');
    const ended = await call('DELETE', `/v1/sessions/${sessionId}`);
    assert.ok(ended.status < 300, JSON.stringify(ended.body));
  });

  test("Alice's schedule is listed for alice, showing Alice, and counts against alice's limit", async () => {
    const [upper, lower, shout] = spellings();
    const made = await call<{ scheduleId: string }>('POST', '/v1/schedules', { userId: upper, goal: `scheduled (${upper})`, cron: '0 0 1 1 *' });
    assert.equal(made.status, 201, JSON.stringify(made.body));
    for (const who of [lower, shout]) {
      const schedules = await listed<ScheduleView & Record<string, unknown>>(`/v1/schedules?userId=${who}`, 'schedules', [made.body.scheduleId], (v) => v.scheduleId);
      assert.deepEqual(
        schedules.map((v) => [v.scheduleId, v.userId]),
        [[made.body.scheduleId, upper]],
      );
    }
    // At most one schedule per user here: alice has Alice's already.
    const refused = await call<{ error: { message: string } }>('POST', '/v1/schedules', { userId: lower, goal: 'one more', cron: '0 0 1 1 *' });
    assert.equal(refused.status, 400, JSON.stringify(refused.body));
    assert.match(refused.body.error.message, /1 schedules/);
    assert.equal((await call('DELETE', `/v1/schedules/${made.body.scheduleId}`)).status, 204);
  });
});

describe('user ids differing only in case: API keys', () => {
  const stub = new StubModelServer();
  let api: KeyedApi;
  before(async () => {
    api = await startKeyedApi(stub);
  });
  after(async () => {
    await api?.stop();
  });

  test("a key of alice's lists, reads and answers Alice's run and session, and may run a message in Alice's session", async () => {
    const [upper, lower] = spellings();
    const [asking, answering] = [`paint the fence (${upper})`, `say done (${upper})`];
    scriptRuns(stub, asking, answering);
    const [aliceKey, lowerKey, bobKey] = await Promise.all([api.keyFor(upper), api.keyFor(lower), api.keyFor(`bob-${upper}`)]);
    const as = <T = Record<string, unknown>>(key: string, method: string, route: string, body?: unknown) => requestJson<T>(api.url, method, route, body, { authorization: `Bearer ${key}` });

    const started = await as<{ runId: string }>(aliceKey, 'POST', '/v1/runs', { goal: asking });
    assert.equal(started.status, 201, JSON.stringify(started.body));
    const runId = started.body.runId;
    const created = await as<{ sessionId: string }>(aliceKey, 'POST', '/v1/sessions', {});
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const sessionId = created.body.sessionId;

    const runs = await waitFor('alice to list the run', async () => {
      const res = await as<{ runs: RunSummary[] }>(lowerKey, 'GET', '/v1/runs');
      assert.equal(res.status, 200, JSON.stringify(res.body));
      return res.body.runs.some((r) => r.runId === runId) ? res.body.runs : undefined;
    });
    assert.equal(runs.find((r) => r.runId === runId)?.userId, upper);
    await waitFor('the run to wait', async () => (await as<ExecutionState>(lowerKey, 'GET', `/v1/runs/${runId}`)).body.status === 'waiting_user');
    assert.equal((await as(bobKey, 'GET', `/v1/runs/${runId}`)).status, 404, "another user's run is still a 404");
    assert.equal((await as(lowerKey, 'POST', `/v1/runs/${runId}/reply`, { text: 'green' })).status, 202);

    // A run naming Alice's session, started with alice's key; and a message to it.
    const inSession = await as<{ runId: string }>(lowerKey, 'POST', '/v1/runs', { goal: answering, sessionId });
    assert.equal(inSession.status, 201, JSON.stringify(inSession.body));
    assert.equal((await as(bobKey, 'POST', '/v1/runs', { goal: answering, sessionId })).status, 404);
    const sent = await as<MessageOutcome>(lowerKey, 'POST', `/v1/sessions/${sessionId}/messages`, { text: '/help' });
    assert.equal(sent.status, 200, JSON.stringify(sent.body));
    const sessions = await waitFor('alice to list the session', async () => {
      const res = await as<{ sessions: SessionSummary[] }>(lowerKey, 'GET', '/v1/sessions');
      return res.body.sessions.some((s) => s.sessionId === sessionId) ? res.body.sessions : undefined;
    });
    assert.equal(sessions.find((s) => s.sessionId === sessionId)?.userId, upper);
    assert.equal((await as(lowerKey, 'POST', `/v1/runs/${runId}/cancel`)).status, 202);
  });
});
