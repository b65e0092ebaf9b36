/**
 * Per-user limits over real HTTP, a real Temporal server and worker: runs started per minute (429
 * with Retry-After) and event streams open at once.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { apiLimitsOf } from '../../src/config';
import { answer, respondStep } from '../helpers/scenarios';
import { requestJson } from '../helpers/http';
import { startRunsApi, type RunsApi } from '../helpers/runs-api';
import { StubModelServer } from '../helpers/stub-model-server';
import { waitFor } from '../helpers/temporal-env';

const stub = new StubModelServer();
let api: RunsApi;

before(async () => {
  api = await startRunsApi(stub, { app: { limits: { runsPerMinute: 3, streamsPerUser: 1 } } });
  stub.script('limited', { execution_plan: [{ steps: [respondStep] }], final_answer: [answer('ok')] });
});
after(async () => {
  await api?.stop();
});

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

test('limits are on by default once the API is authenticated, off for a local unauthenticated API, and configurable', () => {
  const base = { RATE_LIMIT_RUNS_PER_MINUTE: undefined, RATE_LIMIT_MESSAGES_PER_MINUTE: undefined, MAX_STREAMS_PER_USER: undefined };
  assert.deepEqual(apiLimitsOf({ ...base, THREADLINE_AUTH: 'apikey' }), { runsPerMinute: 120, messagesPerMinute: 600, streamsPerUser: 20 });
  assert.deepEqual(apiLimitsOf({ ...base, THREADLINE_AUTH: 'none' }), { runsPerMinute: 0, messagesPerMinute: 0, streamsPerUser: 0 });
  assert.equal(apiLimitsOf({ ...base, THREADLINE_AUTH: 'none', RATE_LIMIT_RUNS_PER_MINUTE: 5 }).runsPerMinute, 5);
});
