// The production-shaped cluster's settings, in one plain object: `npm run cluster` and the test
// phase on the cluster start from it, and test/unit/cluster-compose.test.ts fails when
// docker-compose.yml (which describes the same topology for containers) drifts from it.
// Built-ins only, like lib.mjs.
import path from 'node:path';
import { LOW_LATENCY_DYNAMIC_CONFIG, ROOT, SEARCH_ATTRIBUTES } from './lib.mjs';

/** Where the shared server config template and dynamic config live (docker-compose.yml mounts the same folder). */
export const CLUSTER_CONFIG_DIR = path.join(ROOT, 'deploy', 'temporal');

export const CLUSTER = Object.freeze({
  /** The Temporal server the CLI (TEMPORAL_CLI_VERSION 1.5.1 in lib.mjs) embeds: its go.mod requires go.temporal.io/server v1.29.1. */
  serverVersion: '1.29.1',
  /** The UI server the same CLI embeds (github.com/temporalio/ui-server/v2 v2.42.1 in its go.mod). */
  uiServerVersion: '2.42.1',
  /** ≥ 16 (issue 27); fixed for the life of the databases. */
  numHistoryShards: 16,
  /** Persistence and visibility both on PostgreSQL ≥ 12, through the server's `postgres12` plugin. */
  sqlPlugin: 'postgres12',
  /** Temporal's own databases (never the memory store's, `memory`). */
  databases: Object.freeze({ temporal: 'threadline_temporal', visibility: 'threadline_temporal_visibility', memory: 'threadline' }),
  /**
   * Schema steps per database, as `temporal-sql-tool` runs them: create-database, setup-schema -v 0.0
   * (its version table), then update-schema to the newest version under schema/postgresql/v12/<dir>/versioned.
   */
  schema: Object.freeze([Object.freeze({ database: 'temporal', dir: 'temporal' }), Object.freeze({ database: 'visibility', dir: 'visibility' })]),
  /** Each a separate process (container), so one can be killed alone. */
  services: Object.freeze(['frontend', 'history', 'matching', 'worker']),
  namespace: 'default',
  /** How long closed runs stay readable (the dev server keeps them 24 h). */
  namespaceRetention: '72h',
  searchAttributes: Object.freeze(SEARCH_ATTRIBUTES.map((name) => Object.freeze({ name, type: 'Keyword' }))),
  /**
   * Dynamic config; deploy/temporal/dynamicconfig.yaml holds the same in the server's file format, and
   * both the cluster and docker-compose.yml load that file. The queue readers' poll limits of the dev
   * server (LOW_LATENCY_DYNAMIC_CONFIG: a task otherwise waits ≈ 38 ms per hop for its shard's reader),
   * and the dev server's visibility rate (the API lists runs; the server's default is 10/s per frontend).
   */
  dynamicConfig: Object.freeze({ ...LOW_LATENCY_DYNAMIC_CONFIG, 'frontend.namespaceRPS.visibility': 100 }),
  /**
   * PostgreSQL connections per service process (persistence, idle kept, visibility). The server's
   * defaults (20 + 10 per process) would let four processes take 120 of PostgreSQL's default 100
   * connections; these keep the four under 55, beside the workers' and APIs' own pools.
   */
  connectionPools: Object.freeze({ persistence: 10, persistenceIdle: 5, visibility: 3 }),
  threadlineWorkers: 2,
  threadlineApis: 2,
});

/** The server config template the services render (the server itself fills it from the environment). */
export const CLUSTER_CONFIG_ENV = 'cluster'; // → deploy/temporal/cluster.yaml

/**
 * Environment of every Temporal service process for the settings above, the part that is the same on
 * one machine and in containers (docker-compose.yml's `x-temporal-server` environment must hold it).
 */
export function serverEnvironment(settings = CLUSTER) {
  return {
    NUM_HISTORY_SHARDS: String(settings.numHistoryShards),
    DBNAME: settings.databases.temporal,
    VISIBILITY_DBNAME: settings.databases.visibility,
    SQL_MAX_CONNS: String(settings.connectionPools.persistence),
    SQL_MAX_IDLE_CONNS: String(settings.connectionPools.persistenceIdle),
    SQL_VIS_MAX_CONNS: String(settings.connectionPools.visibility),
  };
}
