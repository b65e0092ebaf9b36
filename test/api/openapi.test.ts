/**
 * The API description (`GET /openapi.json`, `GET /docs`, issue 26): valid OpenAPI 3.1, covering
 * every route the app mounts (found by walking express's router, so a route added without a
 * description fails here), and agreeing with what the API accepts and answers. The app runs without
 * Temporal and with every optional router: runs and sessions are stand-ins; memory threads, long-term
 * memory, usage and API keys are the in-memory implementations.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { Validator } from '@seriousme/openapi-schema-validator';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import express, { type Express } from 'express';
import pino from 'pino';
import request from 'supertest';
import { AgentProfileSchema } from '../../src/agents/profile';
import { createApp, type AppOptions } from '../../src/api/app';
import type { OpenApiDocument } from '../../src/api/openapi';
import { EVENTS, RESPONSES } from '../../src/api/inspector/responses';
import { routesOf } from '../../src/api/routes-registry';
import { schedulesRouter } from '../../src/api/schedules-routes';
import { MemoryApiKeyStore } from '../../src/store/keys/key-store';
import { BlueprintSchema } from '../../src/blueprints/blueprint';
import { LongTermService } from '../../src/longterm/service';
import { applyPlan, initialState } from '../../src/planning/execution-state';
import { MemoryService } from '../../src/store/memory-service';
import { InMemoryLongTermStore } from '../../src/store/longterm/in-memory-store';
import { InMemoryMemoryStore } from '../../src/store/memory/in-memory-store';
import { MemoryUsageStore } from '../../src/store/usage/usage-store';

const ADMIN_KEY = 'openapi-test-admin-key-0123456789';
const config = { uiUrl: 'http://127.0.0.1:8233', TEMPORAL_NAMESPACE: 'default' };
const at = new Date('2030-01-01T00:00:00.000Z');
const runState = applyPlan(initialState({ runId: 'run-doc-1', userId: 'ada', goal: 'plan a trip', model: 'offline-demo' }, at), [{ type: 'respond', description: 'answer' }], at);

/** Runs without Temporal: every call succeeds with a plausible answer. */
const runs: AppOptions['runs'] = {
  start: async () => ({ runId: 'run-doc-1', status: 'planning' }),
  get: async () => runState,
  reply: async () => {},
  review: async () => {},
  approve: async () => {},
  skip: async () => {},
  redo: async () => {},
  cancel: async () => {},
  list: async () => [{ runId: 'run-doc-1', userId: 'ada', sessionId: null, parentRunId: null, goal: 'plan a trip', status: 'running', startedAt: at.toISOString(), closedAt: null }],
  ownerOf: async () => 'ada',
};

const notHere = () => Promise.reject(new Error('not used by these tests'));
const sessions: NonNullable<AppOptions['sessions']> = {
  create: async () => ({ sessionId: 'session-ada-1', threadId: 'thr_session-ada-1' }),
  list: async () => [{ sessionId: 'session-ada-1', userId: 'ada', threadId: 'thr_session-ada-1', status: 'running', startedAt: at.toISOString(), closedAt: null }],
  get: async (sessionId) => ({
    sessionId,
    userId: 'ada',
    threadId: 'thr_session-ada-1',
    runs: [{ runId: 'run-doc-2', goal: 'Plan a trip', status: 'waiting_user', question: 'Which city?', finalAnswer: null, lastError: null, startedAt: at.toISOString(), askedAt: at.toISOString() }],
    turns: 1,
    version: 3,
    chatHistory: [{ role: 'user', text: 'Plan a trip', at: at.toISOString(), runId: 'run-doc-2' }],
    taskState: { CurrentGoal: 'Plan a trip', ActiveFlow: '', OpenLoops: ['Which city?'], ImportantFacts: [], LastDecision: '', UpdatedAt: at.toISOString() },
  }),
  send: async () => ({ kind: 'new_run', runId: 'run-doc-2' }),
  clear: notHere,
  end: async (sessionId) => ({ sessionId, status: 'closed', reply: null }),
  ownerOf: async () => 'ada',
};

/** The app with every optional router mounted (API keys on, so the admin routes are too). */
function fullApp(): Express {
  return createApp({
    runs,
    sessions,
    config,
    isHealthy: async () => true,
    logger: pino({ level: 'silent' }),
    memory: new MemoryService({ store: new InMemoryMemoryStore(), limits: { soft: 3000, hard: 4000 } }),
    longterm: { longterm: new LongTermService({ store: new InMemoryLongTermStore(), warn: () => {} }) },
    usage: { store: new MemoryUsageStore(), budget: 0 },
    auth: { mode: 'apikey', store: new MemoryApiKeyStore(), adminKey: ADMIN_KEY },
    blueprints: [
      BlueprintSchema.parse({
        name: 'trip',
        description: 'Plan a trip',
        params: { type: 'object', properties: { city: { type: 'string' } } },
        tree: { name: 'trip', goal: 'Plan {{city}}', subtasks: [{ name: 'book', goal: 'Book it' }] },
      }),
    ],
    agents: [AgentProfileSchema.parse({ name: 'researcher', description: 'Looks things up', instructions: 'Be thorough' })],
  });
}

const app = fullApp();
const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

async function openApi(target: Express = app): Promise<OpenApiDocument> {
  const res = await request(target).get('/openapi.json');
  assert.equal(res.status, 200, res.text);
  return res.body as OpenApiDocument;
}

/** Express's `:param` as OpenAPI's `{param}`; other path syntax (`*splat`, `{optional}`) would need its own mapping. */
function toOpenApiPath(path: string): string {
  assert.doesNotMatch(path, /[*{}()]/, `${path}: only :param segments are mapped to OpenAPI`);
  return path.replace(/:(\w+)/g, '{$1}');
}

interface Layer {
  route?: { path: string; methods: Record<string, boolean> };
  handle: unknown;
  rawPath?: unknown;
}

/** Every `METHOD path` mounted on the app, routers nested in routers included (express 5 / router 2 layers). */
function mountedRoutes(stack: readonly Layer[], prefix = ''): string[] {
  return stack.flatMap((layer) => {
    const route = layer.route;
    if (route) return Object.keys(route.methods).map((m) => `${m.toUpperCase()} ${toOpenApiPath(prefix + route.path)}`);
    const nested = (layer.handle as { stack?: unknown }).stack;
    if (!Array.isArray(nested)) return []; // middleware (authentication, body parsers, static files): no route
    const mountedAt = typeof layer.rawPath === 'string' && layer.rawPath !== '/' ? layer.rawPath : '';
    return mountedRoutes(nested as Layer[], prefix + mountedAt);
  });
}

/**
 * Routes the description may leave out: none. (The inspector's scripts and vendored modules are
 * static-file middleware, not routes, and so are not listed by `mountedRoutes`.)
 */
const UNDOCUMENTED: readonly string[] = [];

function documentedRoutes(doc: OpenApiDocument): string[] {
  return Object.entries(doc.paths ?? {}).flatMap(([path, item]) => METHODS.filter((m) => item[m]).map((m) => `${m.toUpperCase()} ${path}`));
}

function missingFrom(doc: OpenApiDocument, target: Express): string[] {
  const documented = new Set(documentedRoutes(doc));
  return mountedRoutes(target.router.stack as unknown as Layer[]).filter((r) => !documented.has(r) && !UNDOCUMENTED.includes(r));
}

test('GET /openapi.json is a valid OpenAPI 3.1 document: public, every operation with a summary and responses', async () => {
  // No API key: the description is public, like /healthz.
  const doc = await openApi();
  assert.match(doc.openapi, /^3\.1\./);
  const validation = await new Validator().validate(doc as unknown as Parameters<Validator['validate']>[0]);
  assert.equal(validation.valid, true, JSON.stringify(validation.errors, null, 2));

  const operations = documentedRoutes(doc);
  assert.ok(operations.length >= 40, `${operations.length} operations`);
  const ids = new Set<string>();
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    for (const method of METHODS) {
      const op = item[method];
      if (!op) continue;
      const where = `${method.toUpperCase()} ${path}`;
      assert.ok(op.summary, `${where} has a summary`);
      assert.ok(op.operationId && !ids.has(op.operationId), `${where} has a unique operationId`);
      ids.add(op.operationId);
      const statuses = Object.keys(op.responses ?? {});
      assert.ok(
        statuses.some((s) => /^[23]\d\d$/.test(s)),
        `${where} documents a success response`,
      );
      assert.ok(statuses.includes('default'), `${where} documents its other errors`);
      const pathParams = (op.parameters ?? []).flatMap((p) => ('in' in p && p.in === 'path' ? [p.name] : []));
      assert.deepEqual(pathParams.sort(), [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort(), `${where} declares each path parameter`);
    }
  }
  assert.ok(doc.components?.schemas?.Error, 'the error envelope is a shared component');
  assert.ok(doc.components?.securitySchemes?.apiKey, 'API keys are described when they are on');
  // What the document calls public answers without a key; the rest asks for one.
  const open = Object.entries(doc.paths ?? {}).flatMap(([path, item]) => (item.get?.security?.length === 0 ? [path] : []));
  assert.deepEqual(open.sort(), ['/docs', '/healthz', '/inspector', '/openapi.json']);
  for (const path of open) assert.notEqual((await request(app).get(path)).status, 401, `${path} without a key`);
  assert.equal((await request(app).get('/v1/blueprints')).status, 401);

  const page = await request(app).get('/docs');
  assert.equal(page.status, 200);
  assert.match(page.headers['content-type'] ?? '', /text\/html/);
  for (const route of operations) assert.ok(page.text.includes(`<code>${route.slice(route.indexOf(' ') + 1)}</code>`), `the page lists ${route}`);
});

test('every route the app mounts is in the document, and nothing else', async () => {
  const doc = await openApi();
  const mounted = mountedRoutes(app.router.stack as unknown as Layer[]);
  for (const expected of [
    'POST /v1/runs',
    'GET /v1/runs/{runId}/events',
    'POST /v1/runs/{runId}/reply',
    'POST /v1/runs/{runId}/cancel',
    'POST /v1/runs/{runId}/review',
    'POST /v1/runs/{runId}/tasks/{index}/skip',
    'POST /v1/runs/{runId}/tasks/{index}/redo',
    'GET /v1/blueprints',
    'GET /v1/agents',
    'POST /v1/sessions/{sessionId}/messages',
    'GET /v1/threads/{threadId}/stream',
    'POST /v1/users/{userId}/memory/import',
    'POST /v1/users/{userId}/memory/search',
    'DELETE /v1/users/{userId}/facts/{factId}',
    'GET /v1/users/{userId}/episodes',
    'POST /v1/admin/keys',
    'GET /v1/users/{userId}/usage',
    'POST /v1/codec/decode',
    'GET /inspector',
    'GET /healthz',
    'GET /openapi.json',
    'GET /docs',
  ]) {
    assert.ok(mounted.includes(expected), `the walk finds ${expected}`);
  }
  assert.deepEqual(missingFrom(doc, app), [], 'mounted but not in /openapi.json');
  assert.deepEqual(
    documentedRoutes(doc).filter((r) => !mounted.includes(r)),
    [],
    'in /openapi.json but not mounted',
  );
  for (const stream of ['/v1/runs/{runId}/events', '/v1/sessions/{sessionId}/events', '/v1/threads/{threadId}/stream']) {
    assert.ok(doc.paths?.[stream]?.get?.responses?.['200'] && 'content' in doc.paths[stream].get.responses['200'], `${stream} has content`);
    const ok = doc.paths[stream].get.responses['200'] as { content?: Record<string, unknown> };
    assert.deepEqual(Object.keys(ok.content ?? {}), ['text/event-stream'], `${stream} is an event stream`);
  }
});

test('the coverage check notices a route mounted without a description', async () => {
  const extended = fullApp();
  const undocumented = express.Router();
  undocumented.get('/v1/undocumented/:thingId', (_req, res) => void res.end());
  extended.use(undocumented);
  assert.deepEqual(missingFrom(await openApi(extended), extended), ['GET /v1/undocumented/{thingId}']);
});

test('the document describes the API as configured: without API keys, no security and no 401s', async () => {
  const doc = await openApi(createApp({ runs, config, isHealthy: async () => true, logger: pino({ level: 'silent' }) }));
  assert.equal(doc.security, undefined);
  assert.equal(doc.paths?.['/v1/runs']?.post?.responses?.['401'], undefined);
  assert.equal(doc.paths?.['/v1/admin/keys'], undefined, 'the admin routes are mounted only with API keys');
  assert.ok(doc.paths?.['/v1/runs/{runId}/reply']);
});

/** Validates request and response bodies against the document's schemas ($refs resolved in it). */
function schemaChecker(doc: OpenApiDocument) {
  const ajv = addFormats(new Ajv2020({ allErrors: true, strict: false }));
  const check = (schema: unknown, value: unknown, what: string) => {
    assert.ok(schema && typeof schema === 'object', `${what}: the document has a schema`);
    const validate = ajv.compile({ ...schema, components: doc.components });
    assert.ok(validate(value), `${what}: ${JSON.stringify(validate.errors)}\n${JSON.stringify(value)}`);
  };
  const operation = (op: string) => {
    const [method = '', path = ''] = op.split(' ');
    const found = doc.paths?.[path]?.[method.toLowerCase() as (typeof METHODS)[number]];
    assert.ok(found, `${op} is documented`);
    return found;
  };
  return {
    body(op: string, body: unknown) {
      const requestBody = operation(op).requestBody;
      const schema = requestBody && 'content' in requestBody ? requestBody.content['application/json']?.schema : undefined;
      check(schema, body, `${op} request body`);
    },
    response(op: string, status: number, body: unknown) {
      const response = operation(op).responses?.[String(status) as `2${string}`];
      assert.ok(response, `${op} documents ${status}`);
      const content = 'content' in response ? response.content : undefined;
      if (!content) return assert.equal(status, 204, `${op} ${status} has a body`);
      if (!content['application/json']) return;
      check(content['application/json'].schema, body, `${op} ${status} response`);
    },
  };
}

test('the documented schemas are the ones the API validates with: POST /v1/runs needs userId and goal', async () => {
  const doc = await openApi();
  const createRun = doc.paths?.['/v1/runs']?.post?.requestBody;
  assert.ok(createRun && 'content' in createRun);
  const schema = createRun.content['application/json']?.schema as { required?: string[]; properties?: Record<string, unknown> };
  assert.deepEqual([...(schema.required ?? [])].sort(), ['goal', 'userId']);
  for (const field of ['sessionId', 'engine', 'review', 'blueprint', 'params']) assert.ok(schema.properties?.[field], `documents ${field}`);

  const checker = schemaChecker(doc);
  const accepted = { userId: 'ada', goal: 'plan a trip', engine: 'tree', review: true };
  checker.body('POST /v1/runs', accepted);
  const started = await request(app).post('/v1/runs').set('authorization', `Bearer ${ADMIN_KEY}`).send(accepted);
  assert.equal(started.status, 201, started.text);
  checker.response('POST /v1/runs', 201, started.body);

  // What the API refuses, the schema refuses too, and the refusal is the documented error envelope.
  const refused = await request(app).post('/v1/runs').set('authorization', `Bearer ${ADMIN_KEY}`).send({ userId: 'ada' });
  assert.equal(refused.status, 400);
  checker.response('POST /v1/runs', 400, refused.body);
  assert.throws(() => checker.body('POST /v1/runs', { userId: 'ada' }), /goal/);
});

test('bodies the API accepts fit the documented request schemas, and its answers fit the documented responses', async () => {
  const doc = await openApi();
  const checker = schemaChecker(doc);
  const keyed = (method: 'get' | 'post' | 'delete', url: string) => request(app)[method](url).set('authorization', `Bearer ${ADMIN_KEY}`);
  const cases: { op: string; url?: string; body?: object; status: number }[] = [
    { op: 'GET /healthz', status: 200 },
    { op: 'GET /v1/runs', url: '/v1/runs?userId=ada&status=running', status: 200 },
    { op: 'GET /v1/runs/{runId}', url: '/v1/runs/run-doc-1', status: 200 },
    { op: 'POST /v1/runs/{runId}/reply', url: '/v1/runs/run-doc-1/reply', body: { text: 'yes' }, status: 202 },
    { op: 'POST /v1/runs/{runId}/review', url: '/v1/runs/run-doc-1/review', body: { decision: 'revise', planId: 'run-doc-1#plan1', feedback: 'shorter' }, status: 202 },
    { op: 'POST /v1/runs/{runId}/tasks/{index}/skip', url: '/v1/runs/run-doc-1/tasks/1-2/skip', body: { reason: 'done by hand' }, status: 202 },
    { op: 'POST /v1/runs/{runId}/cancel', url: '/v1/runs/run-doc-1/cancel', status: 202 },
    { op: 'GET /v1/blueprints', status: 200 },
    { op: 'GET /v1/agents', status: 200 },
    { op: 'POST /v1/sessions', body: { userId: 'ada' }, status: 201 },
    { op: 'GET /v1/sessions', status: 200 },
    { op: 'GET /v1/sessions/{sessionId}', url: '/v1/sessions/session-ada-1', status: 200 },
    { op: 'POST /v1/sessions/{sessionId}/messages', url: '/v1/sessions/session-ada-1/messages', body: { text: 'hello' }, status: 200 },
    { op: 'DELETE /v1/sessions/{sessionId}', url: '/v1/sessions/session-ada-1', status: 200 },
    { op: 'POST /v1/threads', body: { userId: 'ada', limits: { soft: 100, hard: 200 } }, status: 201 },
    {
      op: 'POST /v1/users/{userId}/memory/import',
      url: '/v1/users/ada/memory/import',
      body: { conversations: [{ sessionId: 'old-chat', messages: [{ role: 'user', text: 'I live in Lisbon', at: at.toISOString() }] }] },
      status: 201,
    },
    { op: 'POST /v1/users/{userId}/memory/search', url: '/v1/users/ada/memory/search', body: { query: 'Lisbon', k: 5 }, status: 200 },
    { op: 'POST /v1/users/{userId}/facts', url: '/v1/users/ada/facts', body: { subject: 'Ada', predicate: 'lives in', object: 'Lisbon', text: 'Ada lives in Lisbon' }, status: 201 },
    { op: 'GET /v1/users/{userId}/facts', url: '/v1/users/ada/facts', status: 200 },
    { op: 'GET /v1/users/{userId}/episodes', url: '/v1/users/ada/episodes', status: 200 },
    { op: 'GET /v1/users/{userId}/usage', url: '/v1/users/ada/usage', status: 200 },
    { op: 'POST /v1/admin/keys', body: { userId: 'ada', role: 'user' }, status: 201 },
    { op: 'GET /v1/admin/keys', status: 200 },
    { op: 'POST /v1/codec/encode', body: { payloads: [{ metadata: { encoding: Buffer.from('json/plain').toString('base64') }, data: Buffer.from('"hi"').toString('base64') }] }, status: 200 },
  ];
  for (const { op, url, body, status } of cases) {
    const [method = '', path = ''] = op.split(' ');
    if (body) checker.body(op, body);
    const call = keyed(method.toLowerCase() as 'get' | 'post' | 'delete', url ?? path);
    const res = body ? await call.send(body) : await call;
    assert.equal(res.status, status, `${op}: ${res.text}`);
    checker.response(op, status, res.body);
  }
  // A thread's listing and views, with a chunk in its head state (the inspector reads them with these schemas).
  const created = await keyed('post', '/v1/threads').send({ userId: 'ada' });
  const { threadId } = created.body as { threadId: string };
  const thread = `/v1/threads/${encodeURIComponent(threadId)}`;
  const added = await keyed('post', `${thread}/operations`).send({ operation: { op: 'add', chunks: [{ type: 'user', content: { kind: 'text', text: 'hello' } }] }, reason: 'a test' });
  assert.equal(added.status, 201, added.text);
  assert.equal((await keyed('post', `${thread}/checkpoints`).send({ name: 'first' })).status, 201);
  const head = encodeURIComponent((added.body as { stateId: string }).stateId);
  for (const [op, url] of [
    ['GET /v1/threads', '/v1/threads?userId=ada'],
    ['GET /v1/threads/{threadId}', thread],
    ['GET /v1/threads/{threadId}/states', `${thread}/states`],
    ['GET /v1/threads/{threadId}/states/{stateId}', `${thread}/states/${head}`],
    ['GET /v1/threads/{threadId}/checkpoints', `${thread}/checkpoints`],
    ['GET /v1/threads/{threadId}/diff', `${thread}/diff?from=${encodeURIComponent((created.body as { headStateId: string }).headStateId)}`],
  ] as const) {
    const res = await keyed('get', url);
    assert.equal(res.status, 200, `${op}: ${res.text}`);
    checker.response(op, 200, res.body);
  }
  // An ended fact and a fact's history are Facts too.
  const facts = await keyed('get', '/v1/users/ada/facts');
  const factId = (facts.body as { facts: { id: string }[] }).facts[0]?.id ?? '';
  const history = await keyed('get', `/v1/users/ada/facts/${encodeURIComponent(factId)}/history`);
  checker.response('GET /v1/users/{userId}/facts/{factId}/history', 200, history.body);
  const ended = await keyed('delete', `/v1/users/ada/facts/${encodeURIComponent(factId)}`);
  assert.equal(ended.status, 200, ended.text);
  checker.response('DELETE /v1/users/{userId}/facts/{factId}', 200, ended.body);
  // The long-term audit holds every kind of entry by now: writes (import, facts) and reads (search, listings).
  const audit = await keyed('get', '/v1/users/ada/memory/audit');
  assert.equal(audit.status, 200, audit.text);
  const kinds = new Set((audit.body as { entries: { kind: string }[] }).entries.map((e) => e.kind));
  assert.deepEqual([...kinds].sort(), ['read', 'write']);
  checker.response('GET /v1/users/{userId}/memory/audit', 200, audit.body);
});

test('the inspector reads answers and events with the schemas their routes declare, from a module built for the page', async () => {
  // The app above has no schedules service; their router declares its routes without one being called.
  const routes = [...routesOf(app), ...routesOf(schedulesRouter({ schedules: {} as Parameters<typeof schedulesRouter>[0]['schedules'] }))];
  const routeOf = (key: string) => {
    const [method, routePath] = key.split(' ');
    const route = routes.find((r) => r.method === method?.toLowerCase() && r.path === routePath);
    assert.ok(route, `${key} is not a route of the API`);
    return route;
  };
  for (const [key, schema] of Object.entries(RESPONSES)) {
    const declared = Object.entries(routeOf(key).responses).flatMap(([status, r]) => (status.startsWith('2') && r.schema ? [r.schema] : []));
    assert.ok(declared.includes(schema), `${key}: the inspector reads it with another schema than the route declares`);
  }
  for (const key of Object.keys(EVENTS))
    assert.ok(
      Object.values(routeOf(key).responses).some((r) => r.contentType === 'text/event-stream'),
      `${key} is not an event stream`,
    );

  // The module the page imports: public like the page, and it reads with those very schemas.
  const res = await request(app).get('/inspector/schemas.js');
  assert.equal(res.status, 200, res.text);
  assert.match(String(res.headers['content-type']), /javascript/);
  const dir = await mkdtemp(path.join(os.tmpdir(), 'inspector-schemas-'));
  try {
    await writeFile(path.join(dir, 'schemas.mjs'), res.text);
    const page = (await import(path.join(dir, 'schemas.mjs'))) as typeof import('../../src/api/inspector/responses');
    assert.deepEqual(page.readResponse('GET', '/v1/runs/run-doc-1', runState), runState);
    // Read as it came: a field the schema does not list stays for the page to show.
    assert.equal((page.readResponse('GET', '/v1/runs/run-doc-1', { ...runState, newField: 1 }) as { newField?: number }).newField, 1);
    assert.throws(() => page.readResponse('GET', '/v1/runs/run-doc-1', { ...runState, status: 'sleeping' }), /cannot read.*status/s);
    assert.throws(() => page.readEvent('/v1/runs/run-doc-1/events?after=3', 'state', { runId: 'run-doc-1' }), /"state" event this page cannot read/);
    // Routes without a declared schema pass their bodies through as they came.
    assert.deepEqual(page.readResponse('GET', '/v1/threads/thr_x/audit', { operations: [] }), { operations: [] });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
