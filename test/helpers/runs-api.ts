/**
 * The runs API as the API tests use it: the express app on a loopback port, a real worker and
 * Temporal client on the test server, and the stub model server behind the real `openai` client.
 */
import pino from 'pino';
import { createApp, type AppOptions } from '../../src/api/app';
import { streamReadsSettled } from '../../src/api/sse';
import { temporalReachable } from '../../src/api/server';
import type { Config } from '../../src/config';
import { Runs } from '../../src/temporal/runs';
import { RunHistory } from '../../src/temporal/run-history';
import { Forks } from '../../src/temporal/forks';
import { dataConverterFor } from '../../src/temporal/data-converter';
import { bundleWorkflows } from '../../src/workflow-bundle';
import { listen } from './http';
import type { StubModelServer } from './stub-model-server';
import { startTestEnv, stubProvider, type TestEnv } from './temporal-env';

export interface RunsApi {
  env: TestEnv;
  runs: Runs;
  url: string;
  /** Stops the listener, the worker and client, and the stub. */
  stop(): Promise<void>;
}

/** Starts `stub`, a worker (with `config`, or a fresh test config) and the app (with `app` options added, or made from the env: sessions need its client). */
export async function startRunsApi(stub: StubModelServer, options: { config?: Config; app?: Partial<AppOptions> | ((env: TestEnv) => Partial<AppOptions>) } = {}): Promise<RunsApi> {
  await stub.start();
  const env = await startTestEnv({ provider: stubProvider(stub.url), ...(options.config ? { config: options.config } : {}) });
  const runs = new Runs(env.client, env.config);
  // Bundled with the history module only when a test first asks for a run's history.
  const history = new RunHistory(env.client, { bundle: () => bundleWorkflows({ history: true }), dataConverter: dataConverterFor(env.config) });
  const forks = new Forks(env.client, runs, history);
  // Stopping ends every event stream still open (and the app's live-token hub), as the API server does.
  const shutdown = new AbortController();
  const app = typeof options.app === 'function' ? options.app(env) : options.app;
  const server = await listen(
    createApp({ runs, history, forks, config: env.config, isHealthy: () => temporalReachable(env.client), logger: pino({ level: 'silent' }), shutdown: shutdown.signal, ...app }),
  );
  return {
    env,
    runs,
    url: server.url,
    async stop() {
      shutdown.abort();
      await server.close();
      await streamReadsSettled(shutdown.signal);
      await env.stop();
      await stub.stop();
    },
  };
}
