/**
 * The one conformance spec every ApiKeyStore backend passes unchanged (in-process, files under
 * DATA_DIR, PostgreSQL): key-store.test.ts only supplies an initializer per backend. Users carry a
 * random tag, so backends whose tests share storage never see each other's keys.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import { generateKey } from '../../src/auth/keys';
import type { ApiKeyStore } from '../../src/store/keys/key-store';
import { withStore, type Backend } from './store-target';

const T0 = new Date('2026-01-01T00:00:00Z');
const later = (seconds: number) => new Date(T0.getTime() + seconds * 1000);

export function keyStoreConformance(name: string, backend: Backend<ApiKeyStore>): void {
  describe(`${name} key store`, () => {
    test('a created key reads back as it was; ids never created, or not ids at all, read as absent', () =>
      withStore(backend, async ({ store }) => {
        const { record } = generateKey({ userId: `u-${randomUUID()}`, role: 'admin', expiresAt: '2027-01-01T00:00:00.000Z' }, T0);
        await store.create(record);
        assert.deepEqual(await store.get(record.keyId), record);
        assert.equal(await store.get('0123456789abcdef'), undefined);
        assert.equal(await store.get('not a key id/..'), undefined);
      }));

    test("a user's keys list newest first, without other users'; the whole list holds them all", () =>
      withStore(backend, async ({ store }) => {
        const user = `u-${randomUUID()}`;
        const a = generateKey({ userId: user }, T0);
        const b = generateKey({ userId: user, role: 'admin' }, later(1));
        const c = generateKey({ userId: user }, later(2));
        const other = generateKey({ userId: `${user}-other` }, later(3));
        for (const k of [b, a, other, c]) await store.create(k.record);
        assert.deepEqual(
          (await store.list(user)).map((r) => r.keyId),
          [c, b, a].map((k) => k.record.keyId),
        );
        assert.deepEqual(await store.list(`nobody-${randomUUID()}`), []);
        const all = new Set((await store.list()).map((r) => r.keyId));
        for (const k of [a, b, c, other]) assert.ok(all.has(k.record.keyId), `the whole list lacks ${k.record.keyId}`);
      }));

    test('revoking marks the key once (a second revocation keeps the first time) and is false for an unknown key', () =>
      withStore(backend, async ({ store }) => {
        const { record } = generateKey({ userId: `u-${randomUUID()}` }, T0);
        await store.create(record);
        const at = new Date('2026-02-01T00:00:00Z');
        assert.equal(await store.revoke(record.keyId, at), true);
        assert.equal(await store.revoke(record.keyId, new Date('2026-03-01T00:00:00Z')), true);
        assert.equal((await store.get(record.keyId))?.revokedAt, at.toISOString());
        assert.equal((await store.list(record.userId))[0]?.revokedAt, at.toISOString());
        assert.equal(await store.revoke('0123456789abcdef', at), false);
      }));

    test('what a caller does to a record it was given does not change the stored one', () =>
      withStore(backend, async ({ store }) => {
        const { record } = generateKey({ userId: `u-${randomUUID()}` }, T0);
        await store.create(record);
        const got = await store.get(record.keyId);
        assert.ok(got);
        got.revokedAt = '2026-05-01T00:00:00.000Z';
        (await store.list(record.userId))[0]!.role = 'admin';
        assert.deepEqual(await store.get(record.keyId), record);
      }));

    if (backend.persistent) {
      test('another instance on the same data (a restart, a second API) sees every key and revocation at once', () =>
        withStore(backend, async ({ store, reopen }) => {
          const { record } = generateKey({ userId: `u-${randomUUID()}` }, T0);
          await store.create(record);
          const second = await reopen();
          await second.setup(); // a second setup on set-up data is harmless
          assert.deepEqual(await second.get(record.keyId), record);
          await second.revoke(record.keyId, later(60));
          assert.equal((await store.get(record.keyId))?.revokedAt, later(60).toISOString(), 'no cache: a revoked key fails on the very next request');
        }));
    }
  });
}
