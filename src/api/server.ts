/**
 * The REST API process (`npm run api`): one Temporal client, the memory store
 * (MEMORY_STORE), the express app, an HTTP listener, and a clean shutdown on
 * SIGINT/SIGTERM.
 */
import { randomUUID } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Client } from '@temporalio/client';
import type { Logger } from 'pino';
import { agentsConfigPath, loadAgents } from '../agents/load';
import { loadBlueprints } from '../blueprints/load';
import { apiLimitsOf, loadConfig, memoryPassSettingsOf, runUiUrl, type Config } from '../config';
import { sendMemoryJob } from '../activities/memory-jobs';
import { userMemoryWorkflowId } from '../workflows/memory-definitions';
import type { LongTermRouterOptions } from './longterm-routes';
import { createKeyStore } from '../store/keys/key-store';
import { createUsageStore } from '../store/usage/usage-store';
import { openLongTerm } from '../store/longterm/open-longterm';
import { openMemory } from '../store/open-memory';
import { openPool } from '../store/pg-pool';
import { dataConverterFor, payloadCodecs } from '../temporal/data-converter';
import { connectClient } from '../temporal/connection';
import { Schedules } from '../temporal/schedules';
import { RunHistory } from '../temporal/run-history';
import { Forks } from '../temporal/forks';
import { bundleWorkflowsInChild } from '../workflow-bundle';
import { Runs } from '../temporal/runs';
import { Sessions } from '../temporal/sessions';
import { createLogger } from '../telemetry/logger';
import { tracingFromConfig } from '../telemetry/tracing';
import { createApp } from './app';
import { PostgresRateLimitStore } from './rate-limit-store';
import { isLoopback } from './host-guard';
import { streamReadsSettled } from './sse';

/** A health probe must answer well within a load balancer's own timeout. */
const HEALTH_TIMEOUT_MS = 2_000;
/** Requests still running this long after shutdown began are cut off. */
const SHUTDOWN_GRACE_MS = 5_000;

export interface ApiServer {
  /** Base URL, e.g. `http://127.0.0.1:3000`. */
  url: string;
  /** Stops accepting requests, ends event streams, waits for the rest (briefly), closes the memory store and the Temporal client. */
  close(): Promise<void>;
}

/** Temporal is reachable when it answers for our namespace within the deadline. */
export async function temporalReachable(client: Client, timeoutMs = HEALTH_TIMEOUT_MS): Promise<boolean> {
  try {
    await client.connection.withDeadline(Date.now() + timeoutMs, () => client.workflowService.describeNamespace({ namespace: client.options.namespace }));
    return true;
  } catch {
    return false;
  }
}

function urlHost(host: string): string {
  if (host === '0.0.0.0' || host === '::') return 'localhost'; // listening everywhere: print an address one can open
  return host.includes(':') ? `[${host}]` : host;
}

/** True for addresses only this machine can reach. */
export { isLoopback };

/** Without authentication the API trusts every caller, so it may listen only where no one else can reach it. */
export function checkBinding(config: Pick<Config, 'HOST' | 'THREADLINE_AUTH'>): void {
  if (config.THREADLINE_AUTH === 'none' && !isLoopback(config.HOST)) {
    throw new Error(
      `refusing to listen on ${config.HOST} without authentication: anyone who can reach it could read and steer every user's runs.\n` +
        '  Set THREADLINE_AUTH=apikey (and THREADLINE_ADMIN_KEY, or create keys with `npm run keys -- create --user <id>`), or HOST=127.0.0.1.',
    );
  }
}

/**
 * With a model configured and react_mem's passes on, imported conversations are extracted in the
 * background by the user's memory workflow (src/workflows/user-memory.ts), whose progress the
 * Web UI shows; with the offline demo model there is nothing to learn from them.
 */
function importExtraction(config: Config, client: () => Client, logger: Logger): LongTermRouterOptions['onImported'] {
  const settings = memoryPassSettingsOf(config);
  if (!settings || (config.OPENAI_API_KEY === undefined && config.OPENAI_BASE_URL === undefined)) return undefined;
  return async ({ userId, sessionIds }) => {
    if (sessionIds.length === 0) return null;
    const job = { kind: 'import' as const, key: `import:${randomUUID()}`, sessionIds, at: new Date().toISOString() };
    try {
      await sendMemoryJob(userId, job, settings, client(), config.TASK_QUEUE);
    } catch (err) {
      logger.error({ err, userId }, 'the background extraction of an import could not be started; the messages are stored and searchable');
      return null;
    }
    const workflowId = userMemoryWorkflowId(userId);
    return { workflowId, uiUrl: runUiUrl(config, workflowId) };
  };
}

export async function startApi(config: Config, options: { logger?: Logger } = {}): Promise<ApiServer> {
  const logger = options.logger ?? createLogger('api', config);
  checkBinding(config);
  // Read before anything opens: a bad agents file stops the API with its name and the field at fault.
  const agents = loadAgents(agentsConfigPath(config));
  // DESIGN.md sets no length for the bootstrap key; a short one is allowed but said to be guessable.
  if (config.THREADLINE_AUTH === 'apikey' && config.THREADLINE_ADMIN_KEY && config.THREADLINE_ADMIN_KEY.length < 16) {
    logger.warn('THREADLINE_ADMIN_KEY is shorter than 16 characters: easy to guess; use e.g. `openssl rand -hex 24`');
  }
  const keys = config.THREADLINE_AUTH === 'apikey' ? createKeyStore(config) : undefined;
  await keys?.setup();
  const { memory, close: closeMemory } = await openMemory(config);
  const longterm = await openLongTerm(config, { warn: (message, details) => logger.warn(details, message) }).catch(async (err: unknown) => {
    await closeMemory();
    throw err;
  });
  const usage = createUsageStore(config);
  await usage.setup();
  // With PostgreSQL, the request limits count there (migration 8): every API process shares them.
  const counterPool = config.MEMORY_STORE === 'postgres' && config.DATABASE_URL ? openPool({ connectionString: config.DATABASE_URL, max: 2 }) : undefined;
  const closeStores = async () => {
    await closeMemory();
    await longterm.close();
    await keys?.end();
    await usage.end();
    await counterPool?.end();
  };
  let client: Client;
  try {
    client = await connectClient(config);
  } catch (err) {
    await closeStores();
    throw err;
  }
  const shutdown = new AbortController();
  // Every open event stream listens for the shutdown: a hundred watchers are normal, not a leak.
  setMaxListeners(0, shutdown.signal);
  const runs = new Runs(client, config);
  const history = new RunHistory(client, { bundle: () => bundleWorkflowsInChild({ history: true }), dataConverter: dataConverterFor(config) });
  const app = createApp({
    runs,
    sessions: new Sessions(client, memory, config),
    schedules: new Schedules(client, runs, { perUser: config.SCHEDULES_PER_USER }),
    history,
    forks: new Forks(client, runs, history),
    config,
    isHealthy: () => temporalReachable(client),
    logger,
    shutdown: shutdown.signal,
    memory,
    longterm: { longterm: longterm.longterm, onImported: importExtraction(config, () => client, logger) },
    blueprints: loadBlueprints(config.BLUEPRINTS_DIR),
    agents,
    codecs: payloadCodecs(config),
    limits: apiLimitsOf(config),
    ...(counterPool ? { limitCounters: (name: string) => new PostgresRateLimitStore(counterPool, name) } : {}),
    usage: { store: usage, budget: config.USER_TOKEN_BUDGET },
    auth: { mode: config.THREADLINE_AUTH, ...(keys ? { store: keys } : {}), ...(config.THREADLINE_ADMIN_KEY ? { adminKey: config.THREADLINE_ADMIN_KEY } : {}) },
  });
  const server = http.createServer(app);
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(config.PORT, config.HOST, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (err) {
    await client.connection.close();
    await closeStores();
    throw new Error(`cannot listen on ${config.HOST}:${config.PORT}: ${err instanceof Error ? err.message : String(err)}`);
  }
  const { port } = server.address() as AddressInfo;

  let closing: Promise<void> | undefined;
  return {
    url: `http://${urlHost(config.HOST)}:${port}`,
    close() {
      closing ??= (async () => {
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        shutdown.abort();
        // Keep-alive connections whose last request (e.g. an event stream) ends during
        // shutdown turn idle only later; close them as they do, and cut the rest after the grace.
        const reap = setInterval(() => server.closeIdleConnections(), 50);
        const force = setTimeout(() => server.closeAllConnections(), SHUTDOWN_GRACE_MS);
        await closed;
        clearInterval(reap);
        clearTimeout(force);
        await streamReadsSettled(shutdown.signal);
        await client.connection.close();
        await closeStores();
      })();
      return closing;
    },
  };
}

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger('api', config);
  // Before the Temporal client is made: it traces workflow starts only when tracing is installed.
  const tracing = tracingFromConfig(config, 'threadline-api');
  const api = await startApi(config, { logger });
  logger.info(
    {
      url: api.url,
      temporal: config.temporalAddress,
      namespace: config.TEMPORAL_NAMESPACE,
      taskQueue: config.TASK_QUEUE,
      memoryStore: config.MEMORY_STORE,
      auth: config.THREADLINE_AUTH,
      tracing: tracing ? config.OTEL_EXPORTER_OTLP_ENDPOINT : 'off',
    },
    `api: ${api.url} (Temporal ${config.temporalAddress}, namespace "${config.TEMPORAL_NAMESPACE}", task queue "${config.TASK_QUEUE}", memory store "${config.MEMORY_STORE}", auth ${config.THREADLINE_AUTH})`,
  );
  let stopping = false;
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) process.exit(1); // a second signal: do not wait any longer
    stopping = true;
    logger.info({ signal }, 'shutting down');
    api
      .close()
      .then(() => tracing?.shutdown())
      .then(
        () => process.exit(0),
        (err: unknown) => {
          logger.error({ err }, 'shutdown failed');
          process.exit(1);
        },
      );
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

if (require.main === module) {
  main().catch((err: unknown) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  });
}
