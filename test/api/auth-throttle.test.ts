/**
 * Failed authentication is throttled per client: the authentication middleware over real HTTP, keys
 * in an in-process store; clients told apart by their address (X-Forwarded-For behind `trust proxy`).
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import express from 'express';
import pino from 'pino';
import { authenticate } from '../../src/api/authenticate';
import { errorHandler } from '../../src/api/errors';
import { MemoryApiKeyStore } from '../../src/store/keys/key-store';
import { generateKey } from '../../src/auth/keys';
import { listen, requestJson, type Listening } from '../helpers/http';

const ADMIN_KEY = 'a-short-admin-key';
const store = new MemoryApiKeyStore();
let server: Listening;
let valid = '';

before(async () => {
  const { key, record } = generateKey({ userId: 'grace' }, new Date());
  await store.create(record);
  valid = key;
  const app = express();
  app.set('trust proxy', true); // as behind a reverse proxy: the client is X-Forwarded-For
  app.use(authenticate({ mode: 'apikey', store, adminKey: ADMIN_KEY, failuresPerMinute: 3 }));
  app.get('/v1/whoami', (_req, res) => res.json({ ok: true }));
  app.use(errorHandler(pino({ level: 'silent' })));
  server = await listen(app);
});
after(async () => {
  await server?.close();
});

const as = (client: string, key: string) =>
  requestJson<{ error?: { code: string; message: string } }>(server.url, 'GET', '/v1/whoami', undefined, { authorization: `Bearer ${key}`, 'x-forwarded-for': client });

test('past its failures a minute, a client is refused with 429 and Retry-After whatever key it sends; other clients are not', async () => {
  for (const guess of ['guess-1', 'guess-2', 'guess-3']) assert.equal((await as('203.0.113.7', guess)).status, 401, guess);
  const throttled = await as('203.0.113.7', 'guess-4');
  assert.equal(throttled.status, 429);
  assert.equal(throttled.body.error?.code, 'rate_limited');
  const retryAfter = Number(throttled.headers.get('retry-after'));
  assert.ok(retryAfter > 0 && retryAfter <= 60, String(retryAfter));
  // No oracle: a right key from the throttled client is refused too, the admin key as well.
  assert.equal((await as('203.0.113.7', valid)).status, 429);
  assert.equal((await as('203.0.113.7', ADMIN_KEY)).status, 429);
  // Another address is untouched, and its successes do not count.
  for (let i = 0; i < 5; i++) assert.equal((await as('198.51.100.2', valid)).status, 200);
  assert.equal((await as('198.51.100.2', 'wrong')).status, 401);
  // IPv6 clients count by /56: another address of the same network shares its budget.
  for (const guess of ['a', 'b', 'c']) assert.equal((await as('2001:db8:1:100::1', guess)).status, 401);
  assert.equal((await as('2001:db8:1:1ff::9', valid)).status, 429);
});

test('loopback clients are not throttled: behind one local address, one client could lock out all', async () => {
  for (let i = 0; i < 6; i++) assert.equal((await as('127.0.0.1', `guess-${i}`)).status, 401);
  assert.equal((await as('127.0.0.1', valid)).status, 200);
  for (let i = 0; i < 6; i++) assert.equal((await as('::1', `guess-${i}`)).status, 401);
  assert.equal((await as('::1', valid)).status, 200);
});
