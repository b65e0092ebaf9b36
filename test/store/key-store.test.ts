/** The API key stores, one suite for all three: in-process, files under DATA_DIR, and PostgreSQL for real. */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, readdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { FileApiKeyStore, MemoryApiKeyStore, PostgresApiKeyStore, type ApiKeyStore } from '../../src/store/keys/key-store';
import { generateKey, isAdminKey, parseKey, sameSecret, unusable } from '../../src/auth/keys';

const POSTGRES_URL = process.env.THREADLINE_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const backends: [string, () => ApiKeyStore][] = [
  ['memory', () => new MemoryApiKeyStore()],
  ['file', () => new FileApiKeyStore(mkdtempSync(path.join(os.tmpdir(), 'threadline-keys-')))],
  ['postgres', () => new PostgresApiKeyStore(POSTGRES_URL)],
];

for (const [name, make] of backends) {
  test(`${name} key store: create, find, list per user newest first, revoke (idempotent), unknown ids`, async () => {
    const store = make();
    await store.setup();
    try {
      const user = `u-${randomUUID()}`;
      const t0 = new Date('2026-01-01T00:00:00Z');
      const a = generateKey({ userId: user }, t0);
      const b = generateKey({ userId: user, role: 'admin', expiresAt: '2027-01-01T00:00:00.000Z' }, new Date(t0.getTime() + 1000));
      const other = generateKey({ userId: `${user}-other` }, t0);
      for (const k of [a, b, other]) await store.create(k.record);
      assert.deepEqual(await store.get(a.record.keyId), a.record);
      assert.deepEqual(
        (await store.list(user)).map((r) => r.keyId),
        [b.record.keyId, a.record.keyId],
      );
      assert.equal(await store.get('0123456789abcdef'), undefined);
      const at = new Date('2026-02-01T00:00:00Z');
      assert.equal(await store.revoke(a.record.keyId, at), true);
      assert.equal(await store.revoke(a.record.keyId, new Date('2026-03-01T00:00:00Z')), true);
      assert.equal((await store.get(a.record.keyId))?.revokedAt, at.toISOString());
      assert.equal(await store.revoke('0123456789abcdef', at), false);
    } finally {
      await store.end();
    }
  });
}

test('keys: only a hash is stored, the secret is checked in constant time, expiry and revocation make a key unusable', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'threadline-keys-'));
  const store = new FileApiKeyStore(dir);
  await store.setup();
  const { key, record } = generateKey({ userId: 'alice', expiresAt: '2026-06-01T00:00:00.000Z' }, new Date('2026-01-01T00:00:00Z'));
  await store.create(record);
  const onDisk = readdirSync(dir)
    .map((f) => readFileSync(path.join(dir, f), 'utf8'))
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
