/**
 * The one conformance spec every BlobStore backend passes unchanged (in-process, files under
 * DATA_DIR/blobs, PostgreSQL): blob-store.test.ts only supplies an initializer per backend. Keys are
 * random, so backends whose tests share storage never see each other's blobs; the sweep tests cut
 * off at a moment between writes a few tens of milliseconds apart, so they need no clock of their own.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, test } from 'node:test';
import type { BlobStore } from '../../src/store/blobs/blob-store';
import { withStore, type Backend } from './store-target';

const newKey = () => randomBytes(32).toString('hex');
const bytes = (data: Uint8Array | null) => (data === null ? null : Buffer.from(data));

/** A moment with `ms` milliseconds of nothing on each side. */
async function cutOff(ms = 40): Promise<Date> {
  await sleep(ms);
  const at = new Date();
  await sleep(ms);
  return at;
}

export function blobStoreConformance(name: string, backend: Backend<BlobStore>): void {
  describe(`${name} blob store`, () => {
    test('a blob reads back byte for byte (empty, small, 200 KB); storing it again is harmless; a key never stored is null', () =>
      withStore(backend, async ({ store }) => {
        for (const data of [Buffer.alloc(0), Buffer.from('claim check'), randomBytes(200_000)]) {
          const key = newKey();
          await store.put(key, data);
          await store.put(key, data);
          assert.deepEqual(bytes(await store.get(key)), data);
        }
        assert.equal(await store.get(newKey()), null);
      }));

    test('a key that is not a hex SHA-256 is refused, so no key reaches outside the store', () =>
      withStore(backend, async ({ store }) => {
        for (const key of ['../../etc/passwd', 'A'.repeat(64), 'a'.repeat(63), '']) {
          await assert.rejects(store.get(key), /not a blob key/);
          await assert.rejects(store.put(key, Buffer.from('x')), /not a blob key/);
        }
      }));

    test('the sweep deletes what was neither written nor read since the cut-off, counts it, and keeps the rest', () =>
      withStore(backend, async ({ store }) => {
        await store.sweep(await cutOff()); // from an empty store: backends whose tests share storage hold earlier tests' blobs
        const [old, read, rewritten, fresh] = [newKey(), newKey(), newKey(), newKey()];
        for (const key of [old, read, rewritten]) await store.put(key, Buffer.from(key));
        const before = await cutOff();
        assert.ok(await store.get(read)); // a read marks it used
        await store.put(rewritten, Buffer.from(rewritten)); // so does storing it again
        await store.put(fresh, Buffer.from(fresh));
        assert.equal(await store.sweep(before), 1);
        assert.equal(await store.get(old), null);
        for (const key of [read, rewritten, fresh]) assert.deepEqual(bytes(await store.get(key)), Buffer.from(key));
        assert.equal(await store.sweep(before), 0);
      }));

    if (backend.persistent) {
      test('another instance on the same data (a worker, the API, the codec) reads what the first stored', () =>
        withStore(backend, async ({ store, reopen }) => {
          const key = newKey();
          const data = randomBytes(5_000);
          await store.put(key, data);
          const second = await reopen();
          assert.deepEqual(bytes(await second.get(key)), data);
        }));
    }
  });
}
