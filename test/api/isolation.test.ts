/**
 * Tenant isolation with THREADLINE_AUTH=apikey, over every route that names a resource: two users,
 * real HTTP, a real Temporal server and worker, the stub model server behind the real `openai`
 * client. Another user's run, session or thread is exactly a 404, never data.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { requestJson } from '../helpers/http';
import { startKeyedApi, type KeyedApi } from '../helpers/keyed-api';
import { answer, askStep, cont, respondStep } from '../helpers/scenarios';
import { StubModelServer } from '../helpers/stub-model-server';
import { waitFor } from '../helpers/temporal-env';

const stub = new StubModelServer();
let api: KeyedApi;
const ALICE = 'alice-iso';
const BOB = 'bob-iso';
let aliceKey = '';
let bobKey = '';

before(async () => {
  api = await startKeyedApi(stub);
  aliceKey = await api.keyFor(ALICE);
  bobKey = await api.keyFor(BOB);
});
after(async () => {
  await api?.stop();
});

const as = <T = Record<string, unknown>>(key: string, method: string, route: string, body?: unknown) => requestJson<T>(api.url, method, route, body, { authorization: `Bearer ${key}` });

/** The status of an event stream's response, without reading the stream. */
async function streamStatus(key: string, route: string): Promise<number> {
  const controller = new AbortController();
  const res = await fetch(`${api.url}${route}`, { headers: { authorization: `Bearer ${key}` }, signal: controller.signal });
  controller.abort();
  return res.status;
}

test("every route naming another user's run, session or thread answers 404, with nothing of it; its owner gets it", async () => {
  const goal = 'ask alice something';
  stub.script(goal, { execution_plan: [{ steps: [askStep('Which one?'), respondStep] }], replan_decision: [cont], final_answer: [answer('done')] });
  const run = await as<{ runId: string }>(aliceKey, 'POST', '/v1/runs', { goal });
  assert.equal(run.status, 201);
  const { runId } = run.body;
  await waitFor('the question', async () => (await as<{ status: string }>(aliceKey, 'GET', `/v1/runs/${runId}`)).body.status === 'waiting_user');
  const session = await as<{ sessionId: string; threadId: string }>(aliceKey, 'POST', '/v1/sessions', {});
  assert.equal(session.status, 201);
  const { sessionId } = session.body;
  const thread = await as<{ threadId?: string; id?: string }>(aliceKey, 'POST', '/v1/threads', {});
  assert.equal(thread.status, 201);
  const threadId = thread.body.threadId ?? thread.body.id ?? '';
  const view = await as<{ states?: unknown; thread?: { headStateId: string }; head?: { id: string } }>(aliceKey, 'GET', `/v1/threads/${threadId}`);
  assert.equal(view.status, 200);
  const secretText = JSON.stringify(view.body);

  const routes: [string, string, unknown?][] = [
    ['GET', `/v1/runs/${runId}`],
    ['POST', `/v1/runs/${runId}/reply`, { text: 'B' }],
    ['POST', `/v1/runs/${runId}/review`, { decision: 'approve', planId: 'p' }],
    ['POST', `/v1/runs/${runId}/approval`, { stepId: 's1', decision: 'approve' }],
    ['GET', `/v1/runs/${runId}/history`],
    ['GET', `/v1/runs/${runId}/history/1`],
    ['POST', `/v1/runs/${runId}/fork`, { version: 1 }],
    ['POST', `/v1/runs/${runId}/cancel`],
    ['POST', `/v1/runs/${runId}/tasks/1/skip`, {}],
    ['GET', `/v1/sessions/${sessionId}`],
    ['POST', `/v1/sessions/${sessionId}/messages`, { text: 'hello' }],
    ['DELETE', `/v1/sessions/${sessionId}/memory`],
    ['GET', `/v1/threads/${threadId}`],
    ['GET', `/v1/threads/${threadId}/states`],
    ['GET', `/v1/threads/${threadId}/diff?from=a&to=b`],
    ['GET', `/v1/threads/${threadId}/context`],
    ['GET', `/v1/threads/${threadId}/audit`],
    ['GET', `/v1/threads/${threadId}/checkpoints`],
    ['POST', `/v1/threads/${threadId}/operations`, { op: 'add', chunks: [{ type: 'user', content: { kind: 'text', text: 'x' } }] }],
    ['POST', `/v1/threads/${threadId}/rollback`, { stateId: 'st_x' }],
    ['POST', `/v1/threads/${threadId}/fork`, {}],
    ['POST', `/v1/threads/${threadId}/checkpoints`, { name: 'c' }],
  ];
  for (const [method, route, body] of routes) {
    const res = await as<{ error?: { code: string } }>(bobKey, method, route, body);
    assert.equal(res.status, 404, `${method} ${route} as bob: ${JSON.stringify(res.body)}`);
    assert.equal(res.body.error?.code, 'not_found');
    // (Ids name their user, e.g. run-alice-…; the error may repeat the id bob sent, nothing else of alice.)
    const said = [runId, sessionId, threadId].reduce((text, id) => text.split(id).join('<id>'), JSON.stringify(res.body));
    assert.ok(!said.includes(ALICE), `${method} ${route} leaks alice: ${said}`);
  }
  for (const route of [`/v1/runs/${runId}/events`, `/v1/sessions/${sessionId}/events`, `/v1/threads/${threadId}/stream`]) {
    assert.equal(await streamStatus(bobKey, route), 404, route);
    assert.equal(await streamStatus(aliceKey, route), 200, route);
  }
  // Lists show bob nothing of alice's, and he may not ask for them.
  for (const route of ['/v1/runs', '/v1/sessions', '/v1/threads']) {
    const res = await as(bobKey, 'GET', route);
    assert.equal(res.status, 200, route);
    assert.ok(!JSON.stringify(res.body).includes(ALICE), `${route} lists alice's`);
    assert.equal((await as(bobKey, 'GET', `${route}?userId=${ALICE}`)).status, 403, route);
  }
  // A run of bob's may not report into alice's session.
  assert.equal((await as(bobKey, 'POST', '/v1/runs', { goal: 'x', sessionId })).status, 404);

  // Alice still has all of it, untouched by bob's attempts.
  assert.equal((await as<{ status: string }>(aliceKey, 'GET', `/v1/runs/${runId}`)).body.status, 'waiting_user');
  assert.equal(JSON.stringify((await as(aliceKey, 'GET', `/v1/threads/${threadId}`)).body), secretText);
  assert.equal((await as(aliceKey, 'GET', `/v1/sessions/${sessionId}`)).status, 200);
  assert.equal((await as(aliceKey, 'POST', `/v1/runs/${runId}/reply`, { text: 'A' })).status, 202);
});
