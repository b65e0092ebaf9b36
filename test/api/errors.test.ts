/**
 * The API's edges: request validation, the one error shape, health, and the
 * guarantee that an unexpected failure is a 500 and never takes the process down.
 * `Runs` is replaced by a recorder here, so these tests also show that a bad
 * request never reaches Temporal.
 */
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { beforeEach, test } from 'node:test';
import { Client, Connection, ServiceError } from '@temporalio/client';
import pino from 'pino';
import request from 'supertest';
import { createApp, type AppOptions } from '../../src/api/app';
import { temporalReachable } from '../../src/api/server';
import { grpcError } from '../helpers/grpc';

interface ErrorReply {
  error: { code: string; message: string; details?: { path: string; message: string }[] };
}

const config = { uiUrl: 'http://127.0.0.1:8233', TEMPORAL_NAMESPACE: 'default' };
const silent = pino({ level: 'silent' });
let calls: { method: string; args: unknown[] }[] = [];

/** A `Runs` stand-in that records calls and starts every run. */
const recorder: AppOptions['runs'] = {
  async start(req) {
    calls.push({ method: 'start', args: [req] });
    return { runId: 'run-recorded-1', status: 'planning' };
  },
  async get(runId) {
    calls.push({ method: 'get', args: [runId] });
    throw new Error('not used');
  },
  async reply(runId, text) {
    calls.push({ method: 'reply', args: [runId, text] });
  },
  async approve(runId, decision) {
    calls.push({ method: 'approve', args: [runId, decision] });
  },
  async review(runId, decision) {
    calls.push({ method: 'review', args: [runId, decision] });
  },
  async skip(runId, index, reason) {
    calls.push({ method: 'skip', args: [runId, index, reason] });
  },
  async redo(runId, index, reason) {
    calls.push({ method: 'redo', args: [runId, index, reason] });
  },
  async cancel(runId) {
    calls.push({ method: 'cancel', args: [runId] });
  },
  async list(filter) {
    calls.push({ method: 'list', args: [filter] });
    return [];
  },
};

const app = createApp({ runs: recorder, config, isHealthy: async () => true, logger: silent });

beforeEach(() => {
  calls = [];
});

function assertInvalid(res: request.Response, paths: string[]): ErrorReply['error'] {
  assert.equal(res.status, 400, JSON.stringify(res.body));
  assert.match(res.headers['content-type'] ?? '', /application\/json/);
  const { error } = res.body as ErrorReply;
  assert.equal(error.code, 'invalid_request');
  assert.equal(typeof error.message, 'string');
  assert.ok(error.details, 'validation errors list their fields');
  assert.deepEqual([...new Set(error.details.map((d) => d.path))].sort(), [...paths].sort());
  for (const d of error.details) assert.ok(d.message.length > 0);
  assert.deepEqual(calls, [], 'an invalid request never reaches Temporal');
  return error;
}

test('POST /v1/runs without userId is 400 naming userId', async () => {
  assertInvalid(await request(app).post('/v1/runs').send({ goal: 'hello' }), ['userId']);
});

test('POST /v1/runs with a blank goal is 400 naming goal', async () => {
  const error = assertInvalid(await request(app).post('/v1/runs').send({ userId: 'ada', goal: '   ' }), ['goal']);
  assert.match(error.message, /goal/);
});

test('POST /v1/runs with fields of the wrong type is 400 naming each of them', async () => {
  assertInvalid(
    await request(app)
      .post('/v1/runs')
      .send({ userId: 42, goal: ['a'], sessionId: true }),
    ['userId', 'goal', 'sessionId'],
  );
});

test('POST /v1/runs rejects user ids with other characters or over 128 characters, and goals over 10,000', async () => {
  assertInvalid(await request(app).post('/v1/runs').send({ userId: 'ada lovelace', goal: 'x' }), ['userId']);
  assertInvalid(
    await request(app)
      .post('/v1/runs')
      .send({ userId: 'a'.repeat(129), goal: 'x' }),
    ['userId'],
  );
  assertInvalid(
    await request(app)
      .post('/v1/runs')
      .send({ userId: 'ada', goal: 'x'.repeat(10_001) }),
    ['goal'],
  );
  assertInvalid(await request(app).post('/v1/runs').send({ userId: 'ada', goal: 'x', sessionId: 'a/b' }), ['sessionId']);
});

test('a valid POST /v1/runs reaches Runs with the parsed body: goal trimmed, 201 with a Web UI link', async () => {
  const res = await request(app).post('/v1/runs').send({ userId: 'ada.l+test@example.com', goal: '  add 2 and 3 \n', sessionId: 's-1:a' });
  assert.equal(res.status, 201);
  assert.deepEqual(res.body, {
    runId: 'run-recorded-1',
    status: 'planning',
    uiUrl: 'http://127.0.0.1:8233/namespaces/default/workflows/run-recorded-1',
  });
  assert.deepEqual(calls, [{ method: 'start', args: [{ userId: 'ada.l+test@example.com', goal: 'add 2 and 3', sessionId: 's-1:a' }] }]);
});

test('a body that is not an object (or no JSON body at all) is 400', async () => {
  assertInvalid(await request(app).post('/v1/runs').send([1, 2]), ['body']);
  assertInvalid(await request(app).post('/v1/runs').set('content-type', 'text/plain').send('userId=ada'), ['body']);
});

test('malformed JSON is 400 invalid_request in the error shape', async () => {
  const res = await request(app).post('/v1/runs').set('content-type', 'application/json').send('{"userId": "ada", "goal": ');
  assert.equal(res.status, 400);
  assert.match(res.headers['content-type'] ?? '', /application\/json/);
  const { error } = res.body as ErrorReply;
  assert.equal(error.code, 'invalid_request');
  assert.match(error.message, /JSON/);
  assert.deepEqual(calls, []);
});

test('a body over 64 kB is 413 payload_too_large', async () => {
  const res = await request(app)
    .post('/v1/runs')
    .send({ userId: 'ada', goal: 'x'.repeat(70_000) });
  assert.equal(res.status, 413);
  assert.equal((res.body as ErrorReply).error.code, 'payload_too_large');
  assert.deepEqual(calls, []);
});

test('POST /v1/runs/:runId/reply needs a non-blank text of at most 10,000 characters', async () => {
  assertInvalid(await request(app).post('/v1/runs/run-x/reply').send({}), ['text']);
  assertInvalid(await request(app).post('/v1/runs/run-x/reply').send({ text: '' }), ['text']);
  assertInvalid(await request(app).post('/v1/runs/run-x/reply').send({ text: ' \n ' }), ['text']);
  assertInvalid(await request(app).post('/v1/runs/run-x/reply').send({ text: 7 }), ['text']);
  assertInvalid(
    await request(app)
      .post('/v1/runs/run-x/reply')
      .send({ text: 'y'.repeat(10_001) }),
    ['text'],
  );
});

test('GET /v1/runs accepts only run statuses and well-formed user ids', async () => {
  assertInvalid(await request(app).get('/v1/runs?status=sleeping'), ['status']);
  assertInvalid(await request(app).get('/v1/runs?userId=a%20b'), ['userId']);
  assertInvalid(await request(app).get('/v1/runs?userId=a&userId=b'), ['userId']);

  const ok = await request(app).get('/v1/runs?userId=ada&status=waiting_user');
  assert.equal(ok.status, 200);
  assert.deepEqual(ok.body, { runs: [] });
  assert.deepEqual(calls, [{ method: 'list', args: [{ userId: 'ada', status: 'waiting_user' }] }]);
});

test('unknown routes and methods are JSON 404s', async () => {
  for (const res of [await request(app).get('/v2/runs'), await request(app).delete('/v1/runs/run-x'), await request(app).get('/')]) {
    assert.equal(res.status, 404);
    assert.equal((res.body as ErrorReply).error.code, 'not_found');
  }
});

test('GET /healthz is 503 in the error shape when the health check fails or throws', async () => {
  for (const isHealthy of [async () => false, async () => Promise.reject(new Error('connection refused'))]) {
    const unhealthy = createApp({ runs: recorder, config, isHealthy, logger: silent });
    const res = await request(unhealthy).get('/healthz');
    assert.equal(res.status, 503);
    assert.equal(res.body.ok, false);
    assert.equal((res.body as ErrorReply).error.code, 'unavailable');
  }
});

test('GET /healthz is 503 within the probe deadline when the Temporal address does not answer', async () => {
  // Port 1 on loopback: nothing listens there, so the real probe must give up.
  const connection = Connection.lazy({ address: '127.0.0.1:1' });
  const client = new Client({ connection, namespace: 'default' });
  try {
    const unreachable = createApp({ runs: recorder, config, isHealthy: () => temporalReachable(client, 1_000), logger: silent });
    const started = Date.now();
    const res = await request(unreachable).get('/healthz');
    assert.equal(res.status, 503);
    assert.ok(Date.now() - started < 5_000, `answered in ${Date.now() - started} ms`);
  } finally {
    await connection.close();
  }
});

test('an unexpected error is a 500 "internal" that is logged, hides its details, and the app keeps serving', async () => {
  const lines: string[] = [];
  const logger = pino({ level: 'info' }, new Writable({ write: (chunk: Buffer, _enc, done) => (lines.push(chunk.toString()), done()) }));
  const failing = createApp({ runs: recorder, config, isHealthy: async () => true, logger });

  const res = await request(failing).get('/v1/runs/run-x');
  assert.equal(res.status, 500);
  assert.deepEqual(res.body, { error: { code: 'internal', message: 'internal error' } });
  assert.equal(lines.length, 1);
  const logged = JSON.parse(lines[0] ?? '{}') as { level: number; err?: { message: string }; url?: string };
  assert.equal(logged.level, 50, 'logged as an error');
  assert.equal(logged.err?.message, 'not used');
  assert.equal(logged.url, '/v1/runs/run-x');

  const after = await request(failing).get('/healthz');
  assert.equal(after.status, 200);
});

test('Temporal (or the worker a query needs) not answering in time is a 503 "unavailable", not a 500', async () => {
  // The shape @temporalio/client throws when a query finds no worker: a ServiceError caused by gRPC DEADLINE_EXCEEDED.
  const grpc = grpcError(4, 'query timed out before a worker could process it');
  const timingOut = createApp({
    runs: { ...recorder, get: async () => Promise.reject(new ServiceError('Failed to query Workflow', { cause: grpc })) },
    config,
    isHealthy: async () => true,
    logger: silent,
  });
  const res = await request(timingOut).get('/v1/runs/run-x');
  assert.equal(res.status, 503);
  assert.equal((res.body as ErrorReply).error.code, 'unavailable');
});

test('the parsed run id reaches Runs unchanged, and reply/cancel answer 202', async () => {
  const reply = await request(app).post('/v1/runs/run-ada-0123.s2/reply').send({ text: 'yes' });
  assert.equal(reply.status, 202);
  assert.deepEqual(reply.body, { runId: 'run-ada-0123.s2', status: 'running' });
  const cancel = await request(app).post('/v1/runs/run-ada-0123.s2/cancel');
  assert.equal(cancel.status, 202);
  assert.deepEqual(cancel.body, { runId: 'run-ada-0123.s2' });
  assert.deepEqual(calls, [
    { method: 'reply', args: ['run-ada-0123.s2', 'yes'] },
    { method: 'cancel', args: ['run-ada-0123.s2'] },
  ]);
});
