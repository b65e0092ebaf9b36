/**
 * Scratch PostgreSQL databases for tests: created through the server's `test` database, dropped
 * when the test file ends. Never skipped: without a reachable server the tests fail and say why.
 */
import { randomBytes } from 'node:crypto';
import { Client } from 'pg';

/** The server's maintenance database; per-run databases are created through it. */
export const ADMIN_URL = process.env.THREADLINE_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const databases: string[] = [];

function urlOf(database: string): string {
  const url = new URL(ADMIN_URL);
  url.pathname = `/${database}`;
  return url.toString();
}

export async function admin<T>(fn: (client: Client) => Promise<T>): Promise<T> {
  const client = new Client({ connectionString: ADMIN_URL, connectionTimeoutMillis: 5_000 });
  try {
    await client.connect();
  } catch (err) {
    throw new Error(
      `PostgreSQL is not reachable at ${ADMIN_URL} (${(err as Error).message}). These tests need a running server ` +
        '(trust auth, user postgres, database test), or THREADLINE_TEST_POSTGRES_URL pointing at one.',
    );
  }
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

export async function createDatabase(): Promise<string> {
  const name = `threadline_test_${randomBytes(6).toString('hex')}`;
  await admin((c) => c.query(`CREATE DATABASE ${name}`));
  databases.push(name);
  return urlOf(name);
}

/** Drops every database `createDatabase` made. */
export async function dropDatabases(): Promise<void> {
  for (const name of databases.splice(0)) await admin((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
}
