/** The key store's conformance spec on every backend (in-process, files, PostgreSQL), and what only the file store shows. */
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { FileApiKeyStore, MemoryApiKeyStore, PostgresApiKeyStore } from '../../src/store/keys/key-store';
import { generateKey, isAdminKey, parseKey, sameSecret, unusable } from '../../src/auth/keys';
import { scratchDirs } from '../helpers/scratch-dirs';
import { keyStoreConformance } from './key-store.conformance';
import { onEveryBackend } from './store-target';

onEveryBackend(keyStoreConformance, { memory: () => new MemoryApiKeyStore(), file: (dir) => new FileApiKeyStore(dir), postgres: (url) => new PostgresApiKeyStore(url) });

const dir = scratchDirs('threadline-keys-');

test('keys: only a hash is stored, the secret is checked in constant time, expiry and revocation make a key unusable', async () => {
  const where = dir();
  const store = new FileApiKeyStore(where);
  await store.setup();
  const { key, record } = generateKey({ userId: 'alice', expiresAt: '2026-06-01T00:00:00.000Z' }, new Date('2026-01-01T00:00:00Z'));
  await store.create(record);
  const onDisk = readdirSync(where)
    .map((f) => readFileSync(path.join(where, f), 'utf8'))
    .join('');
  const parsed = parseKey(key);
  assert.ok(parsed);
  assert.ok(!onDisk.includes(parsed.secret), 'the secret is on disk');
  assert.equal(sameSecret(parsed.secret, record.hash), true);
  assert.equal(sameSecret(`${parsed.secret.slice(0, -1)}x`, record.hash), false);
  assert.equal(parseKey('tl_nothex_abc'), null);
  assert.equal(unusable(record, new Date('2026-03-01T00:00:00Z')), null);
  assert.match(unusable(record, new Date('2026-07-01T00:00:00Z')) ?? '', /expired/);
  assert.match(unusable({ ...record, revokedAt: '2026-02-01T00:00:00Z' }, new Date('2026-03-01T00:00:00Z')) ?? '', /revoked/);
  assert.equal(isAdminKey('an admin key of some length', 'an admin key of some length'), true);
  assert.equal(isAdminKey('an admin key of some lengtH', 'an admin key of some length'), false);
  assert.equal(isAdminKey('anything', undefined), false);
});
