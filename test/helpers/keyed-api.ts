/**
 * The whole REST API with THREADLINE_AUTH=apikey, as the isolation and fuzz tests use it: runs,
 * sessions, memory threads and long-term memory on a real worker and Temporal server, the stub model server behind
 * the real `openai` client, keys in an in-process store.
 */
import pino from 'pino';
import { createApp } from '../../src/api/app';
import { MemoryApiKeyStore } from '../../src/store/keys/key-store';
import { generateKey } from '../../src/auth/keys';
import { openLongTerm } from '../../src/store/longterm/open-longterm';
import { openMemory, type OpenMemory } from '../../src/store/open-memory';
import { Runs } from '../../src/temporal/runs';
import { Schedules } from '../../src/temporal/schedules';
import { RunHistory } from '../../src/temporal/run-history';
import { Forks } from '../../src/temporal/forks';
import { dataConverterFor } from '../../src/temporal/data-converter';
import { bundleWorkflows } from '../../src/workflow-bundle';
import { Sessions } from '../../src/temporal/sessions';
import { listen, type Listening } from './http';
import type { StubModelServer } from './stub-model-server';
import { startTestEnv, stubProvider, type TestEnv } from './temporal-env';

export interface KeyedApi {
  env: TestEnv;
  runs: Runs;
  url: string;
  /** A new key of `userId`'s (created a little in the past, so an expiry just gone by is possible). */
  keyFor(userId: string, expiresAt?: string | null): Promise<string>;
  /** Stops the listener, the worker and client, the memory and the stub. */
  stop(): Promise<void>;
}

export async function startKeyedApi(stub: StubModelServer, options: { adminKey?: string } = {}): Promise<KeyedApi> {
  await stub.start();
  const keys = new MemoryApiKeyStore();
  const env = await startTestEnv({ provider: stubProvider(stub.url) });
  const memory: OpenMemory = await openMemory(env.config);
  const longterm = await openLongTerm(env.config);
  const runs = new Runs(env.client, env.config);
  const history = new RunHistory(env.client, { bundle: () => bundleWorkflows({ history: true }), dataConverter: dataConverterFor(env.config) });
  const server: Listening = await listen(
    createApp({
      runs,
      sessions: new Sessions(env.client, memory.memory, env.config),
      schedules: new Schedules(env.client, runs, { perUser: 3 }),
      history,
      forks: new Forks(env.client, runs, history),
      memory: memory.memory,
      longterm: { longterm: longterm.longterm },
      config: env.config,
      isHealthy: async () => true,
      logger: pino({ level: 'silent' }),
      events: { pollMs: 50, heartbeatMs: 100 },
      // The fuzz test sends hundreds of forged keys from one address; the throttle has its own test (auth-throttle).
      auth: { mode: 'apikey', store: keys, failuresPerMinute: 0, ...(options.adminKey ? { adminKey: options.adminKey } : {}) },
    }),
  );
  return {
    env,
    runs,
    url: server.url,
    async keyFor(userId, expiresAt = null) {
      const { key, record } = generateKey({ userId, expiresAt }, new Date(Date.now() - 120_000));
      await keys.create(record);
      return key;
    },
    async stop() {
      await server.close();
      await env.stop();
      await memory.close();
      await longterm.close();
      await stub.stop();
    },
  };
}
