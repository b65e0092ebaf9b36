/**
 * User ids differing only in case are refused on every route that names a user, whichever store is
 * behind it (Temporal, memory threads, long-term memory, schedules, keys): otherwise `Alice` and
 * `alice` are two users in PostgreSQL and one — sharing memory and notes — in a file store on a
 * case-insensitive disk. The whole API with keys, a real worker and Temporal server.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, before, test } from 'node:test';
import { requestJson } from '../helpers/http';
import { startKeyedApi, type KeyedApi } from '../helpers/keyed-api';
import { answer, respondStep } from '../helpers/scenarios';
import { StubModelServer } from '../helpers/stub-model-server';

const ADMIN = 'admin-key-of-the-user-id-test';
const stub = new StubModelServer();
let api: KeyedApi;

before(async () => {
  api = await startKeyedApi(stub, { adminKey: ADMIN });
  stub.script('case check', { execution_plan: [{ steps: [respondStep] }], final_answer: [answer('ok')] });
});
after(async () => {
  await api?.stop();
});

const as = (key: string, method: string, route: string, body?: unknown) => requestJson<{ error?: { code: string; message: string } }>(api.url, method, route, body, { authorization: `Bearer ${key}` });

test('a user id with capital letters is 400 on every route that names a user; its lowercase twin is served', async () => {
  const conversations = [{ messages: [{ role: 'user', text: 'hello' }] }];
  for (const [method, route, body] of [
    ['POST', '/v1/runs', { userId: 'Alice', goal: 'case check' }],
    ['GET', '/v1/runs?userId=Alice', undefined],
    ['POST', '/v1/sessions', { userId: 'Alice' }],
    ['POST', '/v1/threads', { userId: 'Alice' }],
    ['POST', '/v1/users/Alice/memory/import', { conversations }],
    ['POST', '/v1/users/Alice/memory/search', { query: 'hello' }],
    ['GET', '/v1/users/Alice/facts', undefined],
    ['POST', '/v1/schedules', { userId: 'Alice', goal: 'case check', every: '1h' }],
    ['POST', '/v1/admin/keys', { userId: 'Alice' }],
  ] as const) {
    const res = await as(ADMIN, method, route, body);
    assert.equal(res.status, 400, `${method} ${route}: ${JSON.stringify(res.body)}`);
    assert.match(res.body.error?.message ?? '', /capital letters/, route);
  }
  assert.equal((await as(ADMIN, 'POST', '/v1/runs', { userId: 'alice', goal: 'case check' })).status, 201);
  assert.equal((await as(ADMIN, 'POST', '/v1/users/alice/memory/import', { conversations })).status, 201);
});

test('a key made for a capitalised id before the rule serves nothing, and the CLI makes no new one', async () => {
  const old = await api.keyFor('Bob');
  const res = await as(old, 'POST', '/v1/runs', { goal: 'case check' });
  assert.equal(res.status, 400);
  assert.match(res.body.error?.message ?? '', /capital letters/);
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'threadline-user-ids-'));
  const cli = promisify(execFile)(process.execPath, ['--import', 'tsx', 'src/cli/keys.ts', 'create', '--user', 'Bob'], { env: { ...process.env, DATA_DIR: dataDir, MEMORY_STORE: 'file' } });
  await assert.rejects(cli, /capital letters/);
});
