/** The usage stores, one suite for all three: in-process, files under DATA_DIR, and PostgreSQL for real. */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { FileUsageStore, MemoryUsageStore, PostgresUsageStore, summarize, type UsageRecord, type UsageStore } from '../../src/store/usage/usage-store';

const POSTGRES_URL = process.env.THREADLINE_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const backends: [string, () => UsageStore][] = [
  ['memory', () => new MemoryUsageStore()],
  ['file', () => new FileUsageStore(mkdtempSync(path.join(os.tmpdir(), 'threadline-usage-')))],
  ['postgres', () => new PostgresUsageStore(POSTGRES_URL)],
];

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

for (const [name, make] of backends) {
  test(`${name} usage store: records read back per user, oldest first, from a time on; sums per run and session`, async () => {
    const store = make();
    await store.setup();
    try {
      const user = `u/${randomUUID()}`;
      await store.record(rec(user, '2026-01-01T00:00:00.000Z', 'r1', 's1', 1));
      await store.record(rec(user, '2026-01-02T00:00:00.000Z', 'r1', 's1', 2));
      await store.record(rec(user, '2026-01-03T00:00:00.000Z', 'r2', null, 3));
      await store.record(rec(`${user}-other`, '2026-01-03T00:00:00.000Z', 'r9', null, 9));
      const all = await store.records(user);
      assert.deepEqual(
        all.map((r) => r.promptTokens),
        [10, 20, 30],
      );
      const since = new Date('2026-01-02T00:00:00.000Z');
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
      assert.deepEqual(await store.records('nobody-at-all'), []);
    } finally {
      await store.end();
    }
  });
}
