/**
 * Per-user limits over real HTTP, a real Temporal server and worker: runs started per minute (429
 * with Retry-After), event streams open at once, sessions created per minute and open at once,
 * long-term imports per hour (and the conversations their extraction reads), searches and codec
 * calls per minute.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { apiLimitsOf, ConfigSchema } from '../../src/config';
import { openLongTerm, type OpenLongTerm } from '../../src/store/longterm/open-longterm';
import { openMemory, type OpenMemory } from '../../src/store/open-memory';
import { Sessions } from '../../src/temporal/sessions';
import { answer, respondStep } from '../helpers/scenarios';
import { requestJson } from '../helpers/http';
import { startRunsApi, type RunsApi } from '../helpers/runs-api';
import { StubModelServer } from '../helpers/stub-model-server';
import { testConfig, waitFor } from '../helpers/temporal-env';

const stub = new StubModelServer();
const config = testConfig();
let api: RunsApi;
let memory: OpenMemory;
let longterm: OpenLongTerm;
let sessions: Sessions;
const extractions: { userId: string; sessionIds: string[] }[] = [];

before(async () => {
  memory = await openMemory(config);
  longterm = await openLongTerm(config);
  api = await startRunsApi(stub, {
    config,
    app: (env) => {
      sessions = new Sessions(env.client, memory.memory, config);
      return {
        sessions,
        longterm: { longterm: longterm.longterm, onImported: async (i) => (extractions.push(i), null) },
        limits: { runsPerMinute: 3, streamsPerUser: 1, sessionsPerMinute: 4, openSessionsPerUser: 2, importsPerHour: 2, extractedPerImport: 2, searchesPerMinute: 2, codecPerMinute: 2 },
      };
    },
  });
  stub.script('limited', { execution_plan: [{ steps: [respondStep] }], final_answer: [answer('ok')] });
});
after(async () => {
  await api?.stop();
  await longterm?.close();
  await memory?.close();
});

const newUser = (what: string) => `${what}-${randomUUID().slice(0, 8)}`;

/** A 429 with the error envelope and a Retry-After of 1 s to `maxSeconds`; returns the message. */
function assertLimited(res: { status: number; headers: Headers; body: unknown }, maxSeconds: number): string {
  assert.equal(res.status, 429, JSON.stringify(res.body));
  const { error } = res.body as { error: { code: string; message: string } };
  assert.equal(error.code, 'rate_limited');
  const retryAfter = Number(res.headers.get('retry-after'));
  assert.ok(retryAfter >= 1 && retryAfter <= maxSeconds, `Retry-After ${retryAfter}`);
  return error.message;
}

test('a user past the runs-per-minute limit gets 429 with Retry-After and the error envelope; other users are not affected', async () => {
  for (let i = 0; i < 3; i++) assert.equal((await requestJson(api.url, 'POST', '/v1/runs', { userId: 'busy-user', goal: 'limited' })).status, 201);
  const refused = await requestJson<{ error: { code: string; message: string } }>(api.url, 'POST', '/v1/runs', { userId: 'busy-user', goal: 'limited' });
  assert.equal(refused.status, 429);
  assert.equal(refused.body.error.code, 'rate_limited');
  const retryAfter = Number(refused.headers.get('retry-after'));
  assert.ok(retryAfter >= 1 && retryAfter <= 60, `Retry-After ${retryAfter}`);
  assert.equal((await requestJson(api.url, 'POST', '/v1/runs', { userId: 'calm-user', goal: 'limited' })).status, 201);
});

test('a user may hold a limited number of event streams; closing one frees its place', async () => {
  const started = await requestJson<{ runId: string }>(api.url, 'POST', '/v1/runs', { userId: 'stream-user', goal: 'limited' });
  const route = `${api.url}/v1/runs/${started.body.runId}/events?userId=stream-user`;
  const first = new AbortController();
  const open = await fetch(route, { signal: first.signal });
  assert.equal(open.status, 200);
  const second = await fetch(route);
  assert.equal(second.status, 429);
  assert.ok(second.headers.get('retry-after'));
  first.abort();
  await waitFor('the stream to close', async () => {
    const again = new AbortController();
    const res = await fetch(route, { signal: again.signal });
    again.abort();
    return res.status === 200;
  });
});

test('sessions: at most so many open at once (ending one frees its place), and so many created a minute', async () => {
  const user = newUser('sessions');
  const create = () => requestJson<{ sessionId: string }>(api.url, 'POST', '/v1/sessions', { userId: user });
  const first = await create();
  assert.equal(first.status, 201, JSON.stringify(first.body));
  assert.equal((await create()).status, 201);
  // Visibility counts the open sessions a moment after they start.
  await waitFor('two open sessions to be counted', async () => (await sessions.countOpen(user)) === 2);
  assert.match(assertLimited(await create(), 60), /open sessions: at most 2/);
  assert.equal((await requestJson(api.url, 'DELETE', `/v1/sessions/${first.body.sessionId}`)).status, 200);
  await waitFor('the ended session to leave the count', async () => (await sessions.countOpen(user)) === 1);
  assert.equal((await create()).status, 201, 'an ended session frees its place');
  // Four asked for this minute (the refused one counts): the rate limit comes first.
  assert.match(assertLimited(await create(), 60), /sessions created: at most 4 a minute/);
  assert.equal((await requestJson(api.url, 'POST', '/v1/sessions', { userId: newUser('other') })).status, 201, 'other users are not affected');
});

test('long-term memory: imports an hour, the conversations an import hands to extraction, and searches (and queried listings) a minute are bounded per user', async () => {
  const user = newUser('importer');
  const conversation = (text: string) => ({ messages: [{ role: 'user', text }] });
  const importing = () =>
    requestJson(api.url, 'POST', `/v1/users/${user}/memory/import`, { conversations: [conversation('my cat is Pixel'), conversation('my dog is Rex'), conversation('my car is red')] });
  assert.equal((await importing()).status, 201);
  // Three conversations imported, two handed to the background extraction (the third stays searchable).
  assert.equal(extractions.at(-1)?.sessionIds.length, 2);
  assert.equal((await importing()).status, 201);
  assert.match(assertLimited(await importing(), 3600), /imports: at most 2 an hour/);
  const search = () => requestJson<{ results: unknown[] }>(api.url, 'POST', `/v1/users/${user}/memory/search`, { query: 'car' });
  assert.equal((await search()).status, 200);
  assert.equal((await search()).status, 200);
  assert.match(assertLimited(await search(), 60), /searches: at most 2 a minute/);
  assert.equal((await requestJson(api.url, 'POST', `/v1/users/${newUser('searcher')}/memory/search`, { query: 'car' })).status, 200, 'other users are not affected');
  // Listings with a query embed it too: they count as searches; listings without one do not.
  const lister = newUser('lister');
  assert.equal((await requestJson(api.url, 'GET', `/v1/users/${lister}/facts?q=cats`)).status, 200);
  assert.equal((await requestJson(api.url, 'GET', `/v1/users/${lister}/episodes?q=cats`)).status, 200);
  assert.match(assertLimited(await requestJson(api.url, 'GET', `/v1/users/${lister}/facts?q=dogs`), 60), /searches/);
  assert.equal((await requestJson(api.url, 'GET', `/v1/users/${lister}/facts`)).status, 200);
});

test('codec calls are bounded per minute', async () => {
  const decode = () => requestJson(api.url, 'POST', '/v1/codec/decode', { payloads: [] });
  assert.equal((await decode()).status, 200);
  assert.equal((await decode()).status, 200);
  assertLimited(await decode(), 60);
});

test('limits are on by default once the API is authenticated, off for a local unauthenticated API, and configurable', () => {
  // Every limit variable unset, as an environment without them parses.
  const unset = ConfigSchema.parse({});
  assert.deepEqual(apiLimitsOf({ ...unset, THREADLINE_AUTH: 'apikey' }), {
    runsPerMinute: 120,
    messagesPerMinute: 600,
    streamsPerUser: 20,
    sessionsPerMinute: 120,
    openSessionsPerUser: 500,
    importsPerHour: 240,
    extractedPerImport: 50,
    searchesPerMinute: 600,
    codecPerMinute: 600,
  });
  assert.ok(Object.values(apiLimitsOf({ ...unset, THREADLINE_AUTH: 'none' })).every((v) => v === 0));
  assert.equal(apiLimitsOf({ ...unset, THREADLINE_AUTH: 'none', RATE_LIMIT_RUNS_PER_MINUTE: 5 }).runsPerMinute, 5);
  const set = ConfigSchema.parse({ RATE_LIMIT_IMPORTS_PER_HOUR: '3', MAX_OPEN_SESSIONS_PER_USER: '0', RATE_LIMIT_SEARCHES_PER_MINUTE: '7', RATE_LIMIT_CODEC_PER_MINUTE: '9' });
  const limits = apiLimitsOf({ ...set, THREADLINE_AUTH: 'apikey' });
  assert.deepEqual([limits.importsPerHour, limits.openSessionsPerUser, limits.searchesPerMinute, limits.codecPerMinute], [3, 0, 7, 9]);
});
