/**
 * The one conformance spec every UsageStore backend passes unchanged (in-process, files under
 * DATA_DIR, PostgreSQL): usage-store.test.ts only supplies an initializer per backend. Users carry a
 * random tag, so backends whose tests share storage never see each other's records.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import { summarize, type UsageRecord, type UsageStore } from '../../src/store/usage/usage-store';
import { withStore, type Backend } from './store-target';

const rec = (userId: string, at: string, runId: string | null, sessionId: string | null, n: number): UsageRecord => ({
  userId,
  runId,
  sessionId,
  source: `wf/act#${n}.1`,
  model: 'm',
  at,
  promptTokens: 10 * n,
  completionTokens: n,
  cachedTokens: 2 * n,
  calls: 1,
});

const day = (d: number) => `2026-01-0${d}T00:00:00.000Z`;

export function usageStoreConformance(name: string, backend: Backend<UsageStore>): void {
  describe(`${name} usage store`, () => {
    test("records read back whole, one user's only, oldest first; a user with none has none", () =>
      withStore(backend, async ({ store }) => {
        const user = `u/${randomUUID()}`; // a slash, as user ids may hold
        const written = [rec(user, day(1), 'r1', 's1', 1), rec(user, day(2), 'r1', 's1', 2), rec(user, day(3), 'r2', null, 3)];
        // Written out of time order (two workers' calls land as they finish): read back oldest first.
        await store.record(written[1]!);
        await store.record(rec(`${user}-other`, day(2), 'r9', null, 9));
        await store.record(written[0]!);
        await store.record(written[2]!);
        assert.deepEqual(await store.records(user), written);
        assert.deepEqual(await store.records(`nobody-${randomUUID()}`), []);
      }));

    test('from a time on: records at that time count, earlier ones do not; sums per run and session', () =>
      withStore(backend, async ({ store }) => {
        const user = `u-${randomUUID()}`;
        await store.record(rec(user, day(1), 'r1', 's1', 1));
        await store.record(rec(user, day(2), 'r1', 's1', 2));
        await store.record(rec(user, day(3), 'r2', null, 3));
        const since = new Date(day(2));
        assert.deepEqual(
          (await store.records(user, since)).map((r) => r.promptTokens),
          [20, 30],
        );
        const summary = summarize(user, await store.records(user, since), since);
        assert.deepEqual(summary.total, { promptTokens: 50, completionTokens: 5, cachedTokens: 10, calls: 2 });
        assert.deepEqual(
          summary.runs.map((r) => [r.runId, r.sessionId, r.promptTokens]),
          [
            ['r1', 's1', 20],
            ['r2', null, 30],
          ],
        );
        assert.deepEqual(
          summary.sessions.map((s) => [s.sessionId, s.calls]),
          [['s1', 1]],
        );
        assert.deepEqual(await store.records(user, new Date('2027-01-01T00:00:00.000Z')), []);
      }));

    test('what a caller does to a record it was given does not change the stored one', () =>
      withStore(backend, async ({ store }) => {
        const user = `u-${randomUUID()}`;
        const record = rec(user, day(1), 'r1', null, 1);
        await store.record(record);
        (await store.records(user))[0]!.promptTokens = 999;
        record.promptTokens = 998;
        assert.equal((await store.records(user))[0]?.promptTokens, 10);
      }));

    test("the tokens from a time on are the records' prompt and completion tokens, and follow later records", () =>
      withStore(backend, async ({ store }) => {
        const user = `u-${randomUUID()}`;
        assert.equal(await store.tokensSince(user, new Date(day(1))), 0, 'a user with no records');
        await store.record(rec(user, day(1), 'r1', null, 1)); // 10 + 1
        await store.record(rec(user, day(2), 'r1', null, 2)); // 20 + 2
        await store.record(rec(`${user}-other`, day(2), 'r9', null, 9));
        assert.equal(await store.tokensSince(user, new Date(day(1))), 33);
        assert.equal(await store.tokensSince(user, new Date(day(2))), 22, 'earlier records do not count');
        await store.record(rec(user, day(3), 'r2', null, 3)); // 30 + 3
        assert.equal(await store.tokensSince(user, new Date(day(2))), 55, 'a record written since counts');
        assert.equal(await store.tokensSince(user, new Date(day(1))), 66, 'another time counts from the start again');
        const since = new Date(day(2));
        assert.equal(await store.tokensSince(user, since), summarize(user, await store.records(user, since), since).total.promptTokens + 5, 'as the records sum up');
      }));

    if (backend.persistent) {
      test('a second instance (the API beside a worker) tallies what the first writes after it read', () =>
        withStore(backend, async ({ store, reopen }) => {
          const user = `u-${randomUUID()}`;
          const second = await reopen();
          await store.record(rec(user, day(1), 'r1', null, 1));
          assert.equal(await second.tokensSince(user, new Date(day(1))), 11);
          await store.record(rec(user, day(2), 'r1', null, 2));
          await second.record(rec(user, day(3), 'r2', null, 3));
          for (const s of [store, second]) assert.equal(await s.tokensSince(user, new Date(day(1))), 66);
        }));

      test('another instance on the same data (a restart, a second worker) reads what the first wrote, and adds to it', () =>
        withStore(backend, async ({ store, reopen }) => {
          const user = `u-${randomUUID()}`;
          await store.record(rec(user, day(1), 'r1', null, 1));
          const second = await reopen();
          await second.record(rec(user, day(2), 'r1', null, 2));
          for (const s of [store, second]) {
            assert.deepEqual(
              (await s.records(user)).map((r) => r.promptTokens),
              [10, 20],
            );
          }
        }));
    }
  });
}
