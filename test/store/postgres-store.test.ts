/**
 * The conformance suite against PostgreSQL, for real: a fresh database per run
 * (created through the `test` database, dropped afterwards), plus migrations.
 * Never skipped: without a reachable server these tests fail and say why.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Client } from 'pg';
import type { MemoryStore } from '../../src/store/memory-store';
import { MIGRATIONS } from '../../src/store/memory/migrations';
import { PostgresMemoryStore, USER_THREADS } from '../../src/store/memory/postgres-store';
import { admin, createDatabase, dropDatabases } from '../helpers/scratch-postgres';
import { Fixture, memoryStoreConformance } from './memory-store.conformance';

let databaseUrl = '';

before(async () => {
  databaseUrl = await createDatabase();
});

after(async () => {
  await dropDatabases();
});

async function open(url = databaseUrl): Promise<PostgresMemoryStore> {
  const store = new PostgresMemoryStore(url);
  await store.setup();
  return store;
}

memoryStoreConformance(
  'postgres',
  async () => {
    const store = await open();
    const opened: MemoryStore[] = [store];
    return {
      store,
      reopen: async () => {
        const another = await open();
        opened.push(another);
        return another;
      },
      storedBytes: () => store.storedBytes(),
      cleanup: async () => {
        for (const s of opened) await s.end();
      },
    };
  },
  { persistent: true },
);

test('postgres: setup applies the numbered migrations once, even when several processes start together', async () => {
  const url = await createDatabase();
  const stores = await Promise.all([1, 2, 3].map(() => new PostgresMemoryStore(url)).map(async (s) => (await s.setup(), s)));
  await stores[0]?.setup(); // idempotent
  const applied = await admin(async () => {
    const client = new Client({ connectionString: url });
    await client.connect();
    try {
      const migrations = await client.query<{ version: number }>('SELECT version FROM memory_migrations ORDER BY version');
      const tables = await client.query<{ table_name: string }>("SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY table_name");
      return { versions: migrations.rows.map((r) => r.version), tables: tables.rows.map((r) => r.table_name) };
    } finally {
      await client.end();
    }
  });
  assert.deepEqual(
    applied.versions,
    MIGRATIONS.map((m) => m.version),
  );
  assert.deepEqual(applied.tables, [
    'api_rate_limits',
    'longterm_audit',
    'longterm_entity_names',
    'longterm_kind_stats',
    'longterm_records',
    'longterm_term_stats',
    'memory_checkpoints',
    'memory_chunks',
    'memory_migrations',
    'memory_operations',
    'memory_reads',
    'memory_states',
    'memory_threads',
  ]);
  // The schema works from any of them.
  const f = new Fixture();
  const created = f.newThread();
  await stores[1]?.createThread(created);
  assert.deepEqual(await stores[2]?.getThread(created.thread.id), created.thread);
  for (const s of stores) await s.end();
});

test("postgres: one user's threads are listed through an index on the user's key, whatever the case of the id", async () => {
  const store = await open();
  const f = new Fixture();
  const user = `Case-${Date.now()}`;
  const mine = [f.newThread({ userId: user }), f.newThread({ userId: user.toLowerCase() })];
  for (const t of [...mine, f.newThread({ userId: 'someone-else' })]) await store.createThread(t);
  assert.deepEqual((await store.listThreads({ userId: user.toUpperCase() })).map((t) => t.id).sort(), mine.map((t) => t.thread.id).sort());
  const client = new Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    // A few rows would be scanned anyway: with scans priced out, the plan shows whether an index serves the query.
    await client.query('SET enable_seqscan = off; SET enable_bitmapscan = off');
    const { rows } = await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${USER_THREADS}`, [user.toLowerCase(), 10]);
    const plan = rows.map((r) => r['QUERY PLAN']).join('\n');
    assert.match(plan, /memory_threads_by_user_key/, plan);
    assert.doesNotMatch(plan, /Sort/, `the index gives the order: ${plan}`);
  } finally {
    await client.end();
  }
  await store.end();
});

test('postgres: states are stored as splices with snapshots now and then, not as full copies', async () => {
  const store = await open();
  const f = new Fixture();
  const created = f.newThread({ chunks: 0 });
  await store.createThread(created);
  let current = created.state;
  for (let i = 0; i < 200; i++) {
    const change = f.change(current, [f.chunk()]);
    await store.commit(change);
    current = change.state;
  }
  const client = new Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ snapshots: string; splices: string; ids: string }>(
      `SELECT count(*) FILTER (WHERE snapshot IS NOT NULL) AS snapshots, count(*) FILTER (WHERE splice IS NOT NULL) AS splices,
              coalesce(sum(jsonb_array_length(snapshot)), 0) AS ids
       FROM memory_states WHERE thread_id = $1`,
      [created.thread.id],
    );
    const row = rows[0];
    assert.ok(row);
    // 201 states of up to 200 ids: full copies would hold ~20,000 ids.
    assert.ok(Number(row.snapshots) <= 12, `${row.snapshots} snapshots`);
    assert.equal(Number(row.snapshots) + Number(row.splices), 201);
    assert.ok(Number(row.ids) < 1_000, `${row.ids} ids in snapshots`);
  } finally {
    await client.end();
  }
  // A cold instance materializes from those rows.
  const cold = await open();
  assert.deepEqual(await cold.getState(current.id), current);
  await cold.end();
  await store.end();
  await assert.rejects(store.getThread(created.thread.id), 'a query after end() fails: the pool is closed');
});
