/**
 * THREADLINE_AUTH=apikey end to end: real HTTP to the app, a real Temporal server and worker, the
 * stub model server behind the real `openai` client; and `npm run keys` as a person runs it.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, before, test } from 'node:test';
import { checkBinding } from '../../src/api/server';
import { FileApiKeyStore } from '../../src/store/keys/key-store';
import { generateKey } from '../../src/auth/keys';
import { answer, askThenAnswer, respondStep } from '../helpers/scenarios';
import { readEvents } from '../helpers/sse-client';
import { requestJson } from '../helpers/http';
import { startRunsApi, type RunsApi } from '../helpers/runs-api';
import { StubModelServer } from '../helpers/stub-model-server';

const ADMIN_KEY = 'admin-bootstrap-key-for-tests-0001';
const stub = new StubModelServer();
const keyDir = mkdtempSync(path.join(os.tmpdir(), 'threadline-auth-'));
const store = new FileApiKeyStore(path.join(keyDir, 'auth', 'keys'));
let api: RunsApi;

before(async () => {
  await store.setup();
  api = await startRunsApi(stub, { app: { auth: { mode: 'apikey', store, adminKey: ADMIN_KEY }, events: { keyCheckMs: 100 } } });
  stub.script('say hi', { execution_plan: [{ steps: [respondStep] }], final_answer: [answer('hi')] });
});
after(async () => {
  await api?.stop();
});

const call = <T = Record<string, unknown>>(method: string, route: string, key?: string, body?: unknown) => requestJson<T>(api.url, method, route, body, key ? { authorization: `Bearer ${key}` } : {});

async function newKey(userId: string, role: 'user' | 'admin' = 'user'): Promise<string> {
  const res = await call<{ keyId: string; key: string }>('POST', '/v1/admin/keys', ADMIN_KEY, { userId, role });
  assert.equal(res.status, 201);
  return res.body.key;
}

test('without a valid key every route is 401 with the error envelope; /healthz and browser preflights stay open', async () => {
  for (const [method, route] of [
    ['GET', '/v1/runs'],
    ['POST', '/v1/runs'],
    ['GET', '/v1/runs/x'],
    ['GET', '/v1/admin/keys'],
    ['POST', '/v1/codec/decode'],
    ['GET', '/v1/nope'],
  ] as const) {
    const res = await call<{ error: { code: string; message: string } }>(method, route);
    assert.equal(res.status, 401, `${method} ${route}`);
    assert.equal(res.body.error.code, 'unauthorized');
  }
  for (const header of ['Bearer tl_0123456789abcdef_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA', 'Bearer nonsense', 'Basic YTpi', 'Bearer']) {
    const res = await requestJson<{ error: { code: string } }>(api.url, 'GET', '/v1/runs', undefined, { authorization: header });
    assert.equal(res.status, 401, header);
  }
  assert.equal((await call('GET', '/healthz')).status, 200);
  const preflight = await fetch(`${api.url}/v1/codec/decode`, { method: 'OPTIONS', headers: { origin: 'http://127.0.0.1:8233', 'access-control-request-method': 'POST' } });
  assert.equal(preflight.status, 204);
});

test('the codec is for operators: a user key is 403 on decode and encode, an admin key decodes', async () => {
  const alice = await newKey('alice-codec');
  const body = { payloads: [{ metadata: { encoding: Buffer.from('json/plain').toString('base64') }, data: Buffer.from('"hi"').toString('base64') }] };
  for (const route of ['/v1/codec/decode', '/v1/codec/encode']) {
    const res = await call<{ error: { code: string } }>('POST', route, alice, body);
    assert.equal(res.status, 403, route);
    assert.equal(res.body.error.code, 'forbidden');
  }
  const admin = await newKey('ops', 'admin');
  const decoded = await call<{ payloads: unknown[] }>('POST', '/v1/codec/decode', admin, body);
  assert.equal(decoded.status, 200);
  assert.deepEqual(decoded.body.payloads, body.payloads);
});

test('a user key acts only as its user: userId comes from the key, another one is 403, lists show only its runs; an admin may act for anyone', async () => {
  const alice = await newKey('alice-auth');
  const started = await call<{ runId: string }>('POST', '/v1/runs', alice, { goal: 'say hi' });
  assert.equal(started.status, 201);
  const state = await call<{ userId: string }>('GET', `/v1/runs/${started.body.runId}`, alice);
  assert.equal(state.body.userId, 'alice-auth');
  const forged = await call<{ error: { code: string } }>('POST', '/v1/runs', alice, { userId: 'bob-auth', goal: 'say hi' });
  assert.equal(forged.status, 403);
  assert.equal(forged.body.error.code, 'forbidden');
  assert.equal((await call('GET', '/v1/runs?userId=bob-auth', alice)).status, 403);
  const listed = await call<{ runs: { userId: string }[] }>('GET', '/v1/runs', alice);
  assert.equal(listed.status, 200);
  assert.ok(listed.body.runs.length >= 1 && listed.body.runs.every((r) => r.userId === 'alice-auth'));
  const forBob = await call<{ runId: string }>('POST', '/v1/runs', ADMIN_KEY, { userId: 'bob-auth', goal: 'say hi' });
  assert.equal(forBob.status, 201);
  // Admin routes are for admins.
  assert.equal((await call('GET', '/v1/admin/keys', alice)).status, 403);
  assert.equal((await call('POST', '/v1/admin/keys', alice, { userId: 'alice-auth', role: 'admin' })).status, 403);
});

test('admins list keys without their secrets; a revoked key is refused on the next request; an expired key is refused', async () => {
  const carol = await newKey('carol-auth');
  const admin = await newKey('ops-auth', 'admin');
  const listed = await call<{ keys: Record<string, unknown>[] }>('GET', '/v1/admin/keys?userId=carol-auth', admin);
  assert.equal(listed.status, 200);
  assert.equal(listed.body.keys.length, 1);
  const [info] = listed.body.keys;
  assert.ok(info && !('hash' in info) && !('key' in info));
  assert.equal(info.userId, 'carol-auth');
  assert.equal((await call('GET', '/v1/runs', carol)).status, 200);
  assert.equal((await call('DELETE', `/v1/admin/keys/${String(info.keyId)}`, admin)).status, 204);
  const refused = await call<{ error: { message: string } }>('GET', '/v1/runs', carol);
  assert.equal(refused.status, 401);
  assert.match(refused.body.error.message, /revoked/);
  assert.equal((await call('DELETE', '/v1/admin/keys/0123456789abcdef', admin)).status, 404);
  assert.equal((await call('POST', '/v1/admin/keys', admin, { userId: 'x', expiresAt: '2020-01-01T00:00:00Z' })).status, 400);

  const { key, record } = generateKey({ userId: 'dave-auth', expiresAt: new Date(Date.now() - 1000).toISOString() }, new Date(Date.now() - 60_000));
  await store.create(record);
  const expired = await call<{ error: { message: string } }>('GET', '/v1/runs', key);
  assert.equal(expired.status, 401);
  assert.match(expired.body.error.message, /expired/);
});

test('an open event stream ends with an unauthorized error once its key is revoked, or expires', async () => {
  const [goal, script] = askThenAnswer('wait here while my key goes away', 'Still there?');
  stub.script(goal, script);
  const frank = await newKey('frank-auth');
  const started = await call<{ runId: string }>('POST', '/v1/runs', frank, { goal });
  assert.equal(started.status, 201);
  const { runId } = started.body;
  let waiting = () => {};
  const isWaiting = new Promise<void>((resolve) => (waiting = resolve));
  const stream = (key: string) =>
    readEvents(`${api.url}/v1/runs/${runId}/events`, {
      headers: { authorization: `Bearer ${key}` },
      timeoutMs: 60_000, // the expiring key's stream stays open about ten seconds; a loaded machine adds to both
      onEvent: (e) => {
        if (e.event === 'state' && (JSON.parse(e.data) as { status: string }).status === 'waiting_user') waiting();
      },
    });
  const revokedStream = stream(frank);
  await Promise.race([isWaiting, revokedStream]); // the run waits for a reply: the stream would stay open for as long as it waits
  const keyId = frank.split('_')[1];
  assert.equal((await call('DELETE', `/v1/admin/keys/${String(keyId)}`, ADMIN_KEY)).status, 204);
  const revoked = await revokedStream;
  assert.ok(revoked.ended);
  const last = revoked.events.at(-1);
  assert.equal(last?.event, 'error');
  assert.deepEqual(JSON.parse(last.data), { error: { code: 'unauthorized', message: 'the API key was revoked; the stream ends' } });

  // Another key of the same user, expiring while its stream is open: valid long enough, on a loaded machine too, to open
  // the stream (the key checked, the run read) and send its first state.
  const soon = await call<{ key: string }>('POST', '/v1/admin/keys', ADMIN_KEY, { userId: 'frank-auth', expiresAt: new Date(Date.now() + 10_000).toISOString() });
  assert.equal(soon.status, 201);
  const expired = await stream(soon.body.key);
  assert.ok(expired.ended);
  assert.ok(expired.events.some((e) => e.event === 'state'));
  assert.match(expired.events.at(-1)?.data ?? '', /"code":"unauthorized".*expired/);
});

test('`npm run keys -- create` makes a key the API takes, and `revoke` ends it', async () => {
  const run = (...args: string[]) => promisify(execFile)(process.execPath, ['--import', 'tsx', 'src/cli/keys.ts', ...args], { env: { ...process.env, DATA_DIR: keyDir, MEMORY_STORE: 'file' } });
  const created = await run('create', '--user', 'erin-auth');
  const key = /^(tl_\S+)$/m.exec(created.stdout)?.[1];
  assert.ok(key, created.stdout);
  assert.equal((await call('GET', '/v1/runs', key)).status, 200);
  const keyId = key.split('_')[1] ?? '';
  assert.match((await run('list', '--user', 'erin-auth')).stdout, new RegExp(keyId));
  await run('revoke', keyId);
  assert.equal((await call('GET', '/v1/runs', key)).status, 401);
});

test('without auth the API refuses to listen beyond loopback', () => {
  assert.throws(() => checkBinding({ HOST: '0.0.0.0', THREADLINE_AUTH: 'none' }), /THREADLINE_AUTH=apikey/);
  assert.throws(() => checkBinding({ HOST: '192.168.1.5', THREADLINE_AUTH: 'none' }), /without authentication/);
  checkBinding({ HOST: '127.0.0.1', THREADLINE_AUTH: 'none' });
  checkBinding({ HOST: '::1', THREADLINE_AUTH: 'none' });
  checkBinding({ HOST: '0.0.0.0', THREADLINE_AUTH: 'apikey' });
});
