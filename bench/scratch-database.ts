/** A PostgreSQL database of its own for one benchmark, created on BENCH_DATABASE_URL's server and dropped afterwards. */
import { Client as PgClient } from 'pg';

export const BENCH_DATABASE_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

export async function withScratchDatabase<T>(prefix: string, fn: (url: string) => Promise<T>): Promise<T> {
  const database = `${prefix}_${Date.now()}`;
  const admin = new PgClient({ connectionString: BENCH_DATABASE_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${database}`);
  try {
    const url = new URL(BENCH_DATABASE_URL);
    url.pathname = `/${database}`;
    return await fn(url.toString());
  } finally {
    await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
    await admin.end();
  }
}
