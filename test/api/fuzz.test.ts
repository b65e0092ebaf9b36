/**
 * Fuzzing the API (property-based, fast-check): over a thousand malformed or hostile requests
 * across every route — bad JSON, wrong types, huge and deeply nested bodies, unicode edge cases,
 * path tricks, forged, expired or missing keys, other tenants' ids — against the real app with
 * API keys, a real Temporal server and worker, and the stub model server behind the real `openai`
 * client; then malformed model replies. Nothing may answer 5xx but 503, nothing may crash, no run
 * may be left stuck, and no response to another tenant may carry the owner's data.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import type { ExecutionState } from '../../src/planning/execution-state';
import type { Runs } from '../../src/temporal/runs';
import { requestJson } from '../helpers/http';
import { startKeyedApi, type KeyedApi } from '../helpers/keyed-api';
import { askStep, cont, respondStep } from '../helpers/scenarios';
import { StubModelServer } from '../helpers/stub-model-server';
import { waitFor } from '../helpers/temporal-env';

const stub = new StubModelServer();
const ADMIN = 'fuzz-admin-key-0123456789';
const SECRET = 'ALICE-PRIVATE-7c1f';
let api: KeyedApi;
let runs: Runs;
const key: Record<'alice' | 'bob' | 'expired', string> = { alice: '', bob: '', expired: '' };
const ids = { runId: '', sessionId: '', threadId: '' };

before(async () => {
  api = await startKeyedApi(stub, { adminKey: ADMIN });
  runs = api.runs;
  key.alice = await api.keyFor('alice-fuzz');
  key.bob = await api.keyFor('bob-fuzz');
  key.expired = await api.keyFor('alice-fuzz', new Date(Date.now() - 60_000).toISOString());
  const goal = `keep ${SECRET} safe`;
  stub.script(goal, { execution_plan: [{ steps: [askStep(`Where is ${SECRET}?`), respondStep] }], replan_decision: [cont] });
  const as = (path: string, body: unknown) => requestJson<Record<string, string>>(api.url, 'POST', path, body, { authorization: `Bearer ${key.alice}` });
  ids.runId = (await as('/v1/runs', { goal })).body.runId ?? '';
  ids.sessionId = (await as('/v1/sessions', {})).body.sessionId ?? '';
  ids.threadId = (await as('/v1/threads', { chunks: [{ type: 'user', content: { kind: 'text', text: SECRET } }] })).body.threadId ?? '';
  assert.ok(ids.runId && ids.sessionId && ids.threadId, JSON.stringify(ids));
  await waitFor('the run to ask', async () => (await runs.get(ids.runId)).status === 'waiting_user');
});
after(async () => {
  await api?.stop();
});

const ROUTES = [
  '/v1/runs',
  '/v1/runs/:runId',
  '/v1/runs/:runId/reply',
  '/v1/runs/:runId/review',
  '/v1/runs/:runId/cancel',
  '/v1/runs/:runId/events',
  '/v1/runs/:runId/tasks/:index/skip',
  '/v1/runs/:runId/tasks/:index/redo',
  '/v1/blueprints',
  '/v1/sessions',
  '/v1/sessions/:sessionId',
  '/v1/sessions/:sessionId/messages',
  '/v1/sessions/:sessionId/memory',
  '/v1/sessions/:sessionId/events',
  '/v1/threads',
  '/v1/threads/:threadId',
  '/v1/threads/:threadId/states',
  '/v1/threads/:threadId/states/:stateId',
  '/v1/threads/:threadId/diff',
  '/v1/threads/:threadId/operations',
  '/v1/threads/:threadId/rollback',
  '/v1/threads/:threadId/fork',
  '/v1/threads/:threadId/checkpoints',
  '/v1/threads/:threadId/audit',
  '/v1/threads/:threadId/context',
  '/v1/threads/:threadId/stream',
  '/v1/admin/keys',
  '/v1/admin/keys/:keyId',
  '/v1/codec/decode',
  '/v1/codec/encode',
  '/healthz',
  '/v1/nope',
];

const nasty = fc.oneof(
  fc.string(),
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.constantFrom('..', '../../etc/passwd', '%2e%2e%2f', '%00', 'a%2Fb', '\u0000', '\ud800', '🦜'.repeat(50), 'x'.repeat(5000), ' ', '%', '?', '#', 'run-bob-fuzz-1'),
);
const idFor = (name: string) =>
  fc.oneof({ weight: 3, arbitrary: fc.constant(name === 'runId' ? ids.runId : name === 'sessionId' ? ids.sessionId : name === 'threadId' ? ids.threadId : '1') }, { weight: 2, arbitrary: nasty });

/** A request: method, path (params filled with alice's ids or junk), whose key, and a body. */
const requestArb = fc.record({
  method: fc.constantFrom('GET', 'POST', 'DELETE', 'PUT', 'PATCH'),
  route: fc.constantFrom(...ROUTES),
  params: fc.record({ runId: idFor('runId'), sessionId: idFor('sessionId'), threadId: idFor('threadId'), index: idFor('index'), stateId: nasty, keyId: nasty }),
  query: fc.option(fc.dictionary(fc.constantFrom('userId', 'limit', 'status', 'after', 'from', 'to', 'kind', 'q'), fc.oneof(nasty, fc.constant('alice-fuzz'))), { nil: undefined }),
  who: fc.constantFrom('bob', 'bob', 'bob', 'forged', 'expired', 'none', 'garbage-header', 'admin', 'alice'),
  body: fc.oneof(
    fc.constant(undefined),
    fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v)),
    fc.record({ userId: fc.oneof(nasty, fc.constant('alice-fuzz')), goal: nasty, text: nasty, decision: nasty, planId: nasty, stateId: nasty }, { requiredKeys: [] }).map((v) => JSON.stringify(v)),
    fc.constantFrom('{', '{"goal": }', 'null', '[]', '"str"', '1e999', '{"__proto__": {"admin": true}}', '{"constructor": {"prototype": {"x": 1}}}'),
    fc.nat({ max: 20_000 }).map((depth) => '['.repeat(depth) + ']'.repeat(depth)),
    fc.constant(JSON.stringify({ goal: 'g'.repeat(200_000) })),
  ),
  contentType: fc.constantFrom('application/json', 'application/json', 'text/plain', 'application/x-www-form-urlencoded', 'application/json; charset=utf-16'),
});

/** A path segment, percent-encoded; a lone surrogate (which encodeURIComponent refuses) goes as invalid UTF-8. */
function encodePart(text: string): string {
  try {
    return encodeURIComponent(text);
  } catch {
    return encodeURIComponent(text.replace(/[\ud800-\udfff]/g, '\ufffd')).replace(/%EF%BF%BD/g, '%ED%A0%80');
  }
}

function authHeader(who: string): Record<string, string> {
  switch (who) {
    case 'none':
      return {};
    case 'garbage-header':
      return { authorization: 'Bearer tl_/../\u00ff' };
    case 'forged':
      return { authorization: `Bearer tl_${key.alice.split('_')[1]}_${'A'.repeat(43)}` };
    case 'admin':
      return { authorization: `Bearer ${ADMIN}` };
    default:
      return { authorization: `Bearer ${key[who as keyof typeof key]}` };
  }
}

test('1,200 malformed and hostile requests across every route: no 5xx but 503, no crash, nothing of alice for anyone else', async () => {
  let sent = 0;
  const statuses = new Map<number, number>();
  await fc.assert(
    fc.asyncProperty(requestArb, async (r) => {
      const path = r.route.replace(/:(\w+)/g, (_, name: string) => encodePart(String(r.params[name as keyof typeof r.params])));
      const query = r.query ? `?${new URLSearchParams(r.query).toString()}` : '';
      const controller = new AbortController();
      // Event streams stay open: read the status and headers, then hang up. The timer only stops a request that
      // hangs; a loaded machine may take seconds to answer one that does not.
      const timer = setTimeout(() => controller.abort(), 30_000);
      let status = 0;
      let text = '';
      try {
        const res = await fetch(`${api.url}${path}${query}`, {
          method: r.method,
          headers: { ...authHeader(r.who), ...(r.body !== undefined ? { 'content-type': r.contentType } : {}) },
          ...(r.body !== undefined && r.method !== 'GET' ? { body: r.body } : {}),
          signal: controller.signal,
        });
        status = res.status;
        text = (res.headers.get('content-type') ?? '').includes('text/event-stream') ? '' : await res.text();
      } finally {
        clearTimeout(timer);
        controller.abort();
      }
      sent++;
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
      assert.ok(status < 500 || status === 503, `${r.method} ${path}${query} as ${r.who} → ${status}: ${text.slice(0, 300)}`);
      if (r.who !== 'alice' && r.who !== 'admin') assert.ok(!text.includes(SECRET), `${r.method} ${path} as ${r.who} leaked alice's data: ${text.slice(0, 300)}`);
      if (r.who === 'bob' && path.includes(ids.threadId))
        assert.ok(status === 404 || status === 401 || status === 403 || status === 405 || status === 400 || status === 429, `${path} as bob → ${status}`);
    }),
    { numRuns: 1_200, seed: 4711, endOnFailure: true },
  );
  assert.ok(sent >= 1_000, `sent ${sent}`);
  assert.ok((statuses.get(200) ?? 0) + (statuses.get(201) ?? 0) + (statuses.get(202) ?? 0) > 0, `some requests must get through: ${JSON.stringify([...statuses])}`);
  assert.equal((await requestJson(api.url, 'GET', '/healthz')).status, 200);

  // Nothing is left stuck: every run the fuzzing started ends (the stub refuses unscripted goals, so they fail).
  const all = [...(await runs.list({ userId: 'alice-fuzz', limit: 500 })), ...(await runs.list({ userId: 'bob-fuzz', limit: 500 }))];
  for (const summary of all.filter((s) => s.runId !== ids.runId)) {
    await waitFor(`run ${summary.runId} to end or wait`, async () => ['completed', 'failed', 'cancelled', 'waiting_user', 'waiting_review'].includes((await runs.get(summary.runId)).status), 120_000);
  }
  // Alice's own run is as she left it, or ended by her own (fuzzed) hand, never by anyone else's.
  const mine = await runs.get(ids.runId);
  assert.ok(['waiting_user', 'cancelled', 'completed', 'failed'].includes(mine.status), mine.status);
});

test('malformed model replies end runs with a clear error, never a stuck run or a crash', async () => {
  const garbage = fc.sample(
    fc.oneof(
      fc.string(),
      fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)),
      fc.constantFrom('{"steps": "all"}', '{"steps": [{"type": "teleport"}]}', '```json\n{}\n```', ''),
    ),
    { numRuns: 12, seed: 99 },
  );
  const started = await Promise.all(
    garbage.map(async (reply, i) => {
      const goal = `garbled reply ${i}`;
      stub.script(goal, { execution_plan: [reply, reply, reply, reply] });
      return (await runs.start({ userId: 'carol-fuzz', goal })).runId;
    }),
  );
  for (const runId of started) {
    const state = (await api.env.client.workflow.getHandle(runId).result()) as ExecutionState;
    assert.equal(state.status, 'failed', runId);
    assert.ok(state.lastError && state.lastError.length > 0, `${runId} says why`);
  }
});
