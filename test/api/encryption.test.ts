/**
 * Payload encryption end to end: the real Temporal server, a worker and the API with
 * THREADLINE_ENCRYPTION_KEY, the stub model server behind the real `openai` client. History
 * holds no plaintext; the API and the codec endpoint (the Web UI's way in) read it back.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { payloadCodecs } from '../../src/temporal/data-converter';
import { answer, cont, respondStep, toolStep } from '../helpers/scenarios';
import { requestJson } from '../helpers/http';
import { startRunsApi, type RunsApi } from '../helpers/runs-api';
import { StubModelServer } from '../helpers/stub-model-server';
import { testConfig, waitFor } from '../helpers/temporal-env';

const stub = new StubModelServer();
let api: RunsApi;
const config = testConfig({ THREADLINE_ENCRYPTION_KEY: randomBytes(32).toString('base64') });

before(async () => {
  api = await startRunsApi(stub, { config, app: { codecs: payloadCodecs(config) } });
});
after(async () => {
  await api?.stop();
});

type JsonPayload = { metadata: Record<string, string>; data: string };
const asJson = (p: temporal.api.common.v1.IPayload): JsonPayload => ({
  metadata: Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v).toString('base64')])),
  data: Buffer.from(p.data ?? []).toString('base64'),
});

test('with a key set, history holds no plaintext of goals, tool arguments or tool results, while the API reads the run as usual', async () => {
  const goal = 'keep SECRET-GOAL-31 in my notes';
  stub.script(goal, {
    execution_plan: [{ steps: [toolStep('notes_write', { key: 'pin', value: 'SECRET-PIN-4711' }), toolStep('notes_read', { key: 'pin' }), respondStep] }],
    replan_decision: [cont, cont],
    final_answer: [answer('Stored SECRET-ANSWER-9.')],
  });
  const started = await requestJson<{ runId: string }>(api.url, 'POST', '/v1/runs', { userId: 'alice', goal });
  assert.equal(started.status, 201);
  const { runId } = started.body;
  const done = await waitFor('the run to complete', async () => {
    const res = await requestJson<{ status: string; finalAnswer: string | null; goal: string; observations: { content: string }[] }>(api.url, 'GET', `/v1/runs/${runId}`);
    return res.body.status === 'completed' ? res.body : null;
  });
  assert.equal(done.finalAnswer, 'Stored SECRET-ANSWER-9.');
  assert.equal(done.goal, goal);
  assert.ok(
    done.observations.some((o) => o.content.includes('SECRET-PIN-4711')),
    'the tool result reads back through the API',
  );

  const raw = await api.env.client.workflowService.getWorkflowExecutionHistory({ namespace: config.TEMPORAL_NAMESPACE, execution: { workflowId: runId } });
  const bytes = Buffer.from(temporal.api.history.v1.History.encode(raw.history ?? {}).finish());
  assert.ok(bytes.length > 1000);
  // (Search attributes — user id, status — stay readable: the server indexes them for listing.)
  for (const secret of ['SECRET-GOAL-31', 'SECRET-PIN-4711', 'SECRET-ANSWER-9', 'notes_write']) {
    assert.ok(!bytes.includes(secret), `history contains "${secret}" in plaintext`);
  }

  // A client without the key sees only sealed payloads.
  const keyless = new Client({ connection: api.env.client.connection, namespace: config.TEMPORAL_NAMESPACE });
  await assert.rejects(keyless.workflow.getHandle(runId).result(), /encrypted|encoding/i);

  // The codec endpoint opens what is in history, as the Web UI asks it to.
  const input = raw.history?.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0];
  assert.ok(input);
  const decoded = await requestJson<{ payloads: JsonPayload[] }>(api.url, 'POST', '/v1/codec/decode', { payloads: [asJson(input)] }, { 'x-namespace': 'default' });
  assert.equal(decoded.status, 200);
  const opened = decoded.body.payloads[0];
  assert.ok(opened);
  assert.equal(Buffer.from(opened.metadata.encoding ?? '', 'base64').toString(), 'json/plain');
  assert.equal((JSON.parse(Buffer.from(opened.data, 'base64').toString()) as { goal: string }).goal, goal);
});

test('the codec endpoint seals and opens round trip, answers the browser preflight, and refuses payloads it cannot open with 422', async () => {
  const payload = { metadata: { encoding: Buffer.from('json/plain').toString('base64') }, data: Buffer.from('"hello"').toString('base64') };
  const sealed = await requestJson<{ payloads: JsonPayload[] }>(api.url, 'POST', '/v1/codec/encode', { payloads: [payload] });
  assert.equal(sealed.status, 200);
  const [one] = sealed.body.payloads;
  assert.ok(one);
  assert.equal(Buffer.from(one.metadata.encoding ?? '', 'base64').toString(), 'binary/encrypted');
  const opened = await requestJson<{ payloads: JsonPayload[] }>(api.url, 'POST', '/v1/codec/decode', sealed.body);
  assert.deepEqual(opened.body.payloads, [payload]);

  const tampered = { ...one, data: Buffer.from(Buffer.from(one.data, 'base64').map((b, i) => (i === 15 ? b ^ 1 : b))).toString('base64') };
  const refused = await requestJson<{ error: { code: string } }>(api.url, 'POST', '/v1/codec/decode', { payloads: [tampered] });
  assert.equal(refused.status, 422);
  const invalid = await requestJson<{ error: { code: string } }>(api.url, 'POST', '/v1/codec/decode', { payloads: 'nope' });
  assert.equal(invalid.status, 400);

  const preflight = await fetch(`${api.url}/v1/codec/decode`, {
    method: 'OPTIONS',
    headers: { origin: 'http://127.0.0.1:8233', 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type,x-namespace' },
  });
  assert.ok(preflight.status === 204 || preflight.status === 200);
  // Only the Web UI's origin (either loopback name) gets CORS headers: never a wildcard.
  assert.equal(preflight.headers.get('access-control-allow-origin'), 'http://127.0.0.1:8233');
  assert.match(preflight.headers.get('access-control-allow-headers') ?? '', /X-Namespace/i);
  const other = await fetch(`${api.url}/v1/codec/decode`, { method: 'OPTIONS', headers: { origin: 'http://evil.example', 'access-control-request-method': 'POST' } });
  assert.equal(other.headers.get('access-control-allow-origin'), null);
  const named = await fetch(`${api.url}/v1/codec/decode`, { method: 'OPTIONS', headers: { origin: 'http://localhost:8233', 'access-control-request-method': 'POST' } });
  assert.equal(named.headers.get('access-control-allow-origin'), 'http://localhost:8233');
  // Encode takes what a person types, not a history's batch.
  const big = await requestJson<{ error: { code: string } }>(api.url, 'POST', '/v1/codec/encode', { payloads: [{ metadata: {}, data: 'A'.repeat(300_000) }] });
  assert.equal(big.status, 413);
});
