/**
 * Request limits shared by two API processes (MEMORY_STORE=postgres): two apps on one Temporal
 * server and one real PostgreSQL database, each with its own pool, count one user's runs together,
 * so a user allowed 3 runs a minute gets 3 across both, not 6.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import type { Pool } from 'pg';
import pino from 'pino';
import { createApp } from '../../src/api/app';
import { PostgresRateLimitStore } from '../../src/api/rate-limit-store';
import { temporalReachable } from '../../src/api/server';
import { PostgresLongTermStore } from '../../src/store/longterm/postgres-store';
import { openPool } from '../../src/store/pg-pool';
import { Runs } from '../../src/temporal/runs';
import { answer, respondStep } from '../helpers/scenarios';
import { listen, requestJson } from '../helpers/http';
import { startRunsApi, type RunsApi } from '../helpers/runs-api';
import { createDatabase, dropDatabases } from '../helpers/scratch-postgres';
import { StubModelServer } from '../helpers/stub-model-server';

const stub = new StubModelServer();
let first: RunsApi;
let second: { url: string; close(): Promise<void> };
const pools: Pool[] = [];
const counters = (pool: Pool) => (name: string) => new PostgresRateLimitStore(pool, name);

before(async () => {
  const url = await createDatabase();
  // The memory store's migrations make the counters' table (migration 8), as the API's setup does.
  const migrations = new PostgresLongTermStore(url);
  await migrations.setup();
  await migrations.end();
  pools.push(openPool({ connectionString: url, max: 2 }), openPool({ connectionString: url, max: 2 }));
  first = await startRunsApi(stub, { app: { limits: { runsPerMinute: 3 }, limitCounters: counters(pools[0] as Pool) } });
  second = await listen(
    createApp({
      runs: new Runs(first.env.client, first.env.config),
      config: first.env.config,
      isHealthy: () => temporalReachable(first.env.client),
      logger: pino({ level: 'silent' }),
      limits: { runsPerMinute: 3 },
      limitCounters: counters(pools[1] as Pool),
    }),
  );
  stub.script('shared', { execution_plan: [{ steps: [respondStep] }], final_answer: [answer('ok')] });
});
after(async () => {
  await second?.close();
  await first?.stop();
  await Promise.all(pools.map((p) => p.end()));
  await dropDatabases();
});

test('two API processes count one user together: the fourth run across both is 429; another user is not affected', async () => {
  const user = `shared-${randomUUID().slice(0, 8)}`;
  const start = (url: string, userId = user) => requestJson<{ error?: { code: string } }>(url, 'POST', '/v1/runs', { userId, goal: 'shared' });
  assert.equal((await start(first.url)).status, 201);
  assert.equal((await start(second.url)).status, 201);
  assert.equal((await start(first.url)).status, 201);
  const refused = await start(second.url);
  assert.equal(refused.status, 429, 'the second API knows of the runs the first one started');
  assert.equal(refused.body.error?.code, 'rate_limited');
  assert.ok(Number(refused.headers.get('retry-after')) >= 1);
  assert.equal((await start(second.url, `${user}-other`)).status, 201);
});
