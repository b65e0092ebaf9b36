/**
 * A PostgreSQL restart drops every idle connection of every pool. pg's Pool then emits `error`, which
 * without a listener ends the whole process: `npm run chaos -- --cluster` saw both workers exit at
 * each restart of PostgreSQL (their usage store's pool). A pool from `openPool` outlives it and
 * carries on with a new connection. And two processes creating a store's tables in one fresh
 * database at once (two APIs starting together) must both succeed.
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { ensureTables, openPool } from '../../src/store/pg-pool';
import { admin, createDatabase, dropDatabases } from '../helpers/scratch-postgres';

after(() => dropDatabases());

test('a pool outlives the server dropping its idle connections, and its next query reconnects', async () => {
  const url = await createDatabase();
  const database = new URL(url).pathname.slice(1);
  const pool = openPool({ connectionString: url, max: 2 });
  try {
    await Promise.all([pool.query('SELECT 1'), pool.query('SELECT pg_sleep(0.05)')]);
    assert.equal(pool.idleCount, 2);
    const dropped = await admin((c) => c.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [database]));
    assert.equal(dropped.rowCount, 2);
    // The idle clients see their connections end; with no listener this would throw out of the process.
    for (let i = 0; i < 50 && pool.totalCount > 0; i++) await new Promise((r) => setTimeout(r, 20));
    assert.equal(pool.totalCount, 0, 'the pool let go of its dropped connections');
    const { rows } = await pool.query<{ n: number }>('SELECT 41 + 1 AS n');
    assert.equal(rows[0]?.n, 42);
  } finally {
    await pool.end();
  }
});

test('processes creating the same tables at once in a fresh database all succeed', async () => {
  // Without ensureTables' lock, one of two concurrent CREATE TABLE IF NOT EXISTS fails on PostgreSQL's
  // catalog (pg_type_typname_nsp_index) nearly every time.
  for (let round = 0; round < 3; round++) {
    const url = await createDatabase();
    const pools = [1, 2, 3].map(() => openPool({ connectionString: url, max: 1 }));
    try {
      const statements = ['CREATE TABLE IF NOT EXISTS t (id text PRIMARY KEY, n integer)', 'CREATE INDEX IF NOT EXISTS t_n ON t (n)'];
      const results = await Promise.allSettled(pools.map((pool) => ensureTables(pool, statements)));
      assert.deepEqual(
        results.filter((r) => r.status === 'rejected').map((r) => String(r.reason)),
        [],
      );
    } finally {
      await Promise.all(pools.map((pool) => pool.end()));
    }
  }
});
