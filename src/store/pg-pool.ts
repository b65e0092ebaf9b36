/**
 * What every PostgreSQL store of Threadline does with its pool: open it, run a transaction, create
 * its tables.
 *
 * `openPool` is the one way Threadline opens a PostgreSQL pool. pg's `Pool` emits `error` when the server drops an
 * idle connection (a restart, a failover, an administrator's terminate); with no listener Node throws
 * it, and the whole process — a worker, an API — exits. The next query opens a new connection, so the
 * event is dropped here; a query in flight still fails, and its caller sees that.
 */
import { Pool, type PoolClient, type PoolConfig } from 'pg';

export function openPool(config: PoolConfig): Pool {
  const pool = new Pool(config);
  pool.on('error', () => undefined);
  return pool;
}

/** Runs `fn` in a transaction on one pooled connection; a connection whose rollback failed is discarded. */
export async function inTransaction<T>(pool: Pool, fn: (db: PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken = false;
  try {
    await client.query('BEGIN');
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {
      broken = true;
    });
    throw err;
  } finally {
    client.release(broken);
  }
}

/**
 * Creates a store's tables (`CREATE … IF NOT EXISTS` statements) in one transaction under an advisory
 * lock. Without the lock, two processes setting up one fresh database at once — the two APIs and two
 * workers of `npm run cluster` — race in PostgreSQL's catalog (`duplicate key value violates unique
 * constraint "pg_type_typname_nsp_index"`), and one of them fails to start.
 */
export async function ensureTables(pool: Pool, statements: readonly string[]): Promise<void> {
  await inTransaction(pool, async (db) => {
    await db.query('SELECT pg_advisory_xact_lock(hashtext($1))', ['threadline tables']);
    for (const sql of statements) await db.query(sql);
  });
}
