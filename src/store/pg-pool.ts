/**
 * The one way Threadline opens a PostgreSQL pool. pg's `Pool` emits `error` when the server drops an
 * idle connection (a restart, a failover, an administrator's terminate); with no listener Node throws
 * it, and the whole process — a worker, an API — exits. The next query opens a new connection, so the
 * event is dropped here; a query in flight still fails, and its caller sees that.
 */
import { Pool, type PoolConfig } from 'pg';

export function openPool(config: PoolConfig): Pool {
  const pool = new Pool(config);
  pool.on('error', () => undefined);
  return pool;
}
