// The Temporal part of the production-shaped cluster, reusable by `npm run cluster` and by
// `npm test`'s cluster phase: the server, its SQL tool and the UI server built from the Go module
// proxy into .tools/ (once), Temporal's PostgreSQL databases created and migrated, and the frontend,
// history, matching and worker services started as separate processes. Built-ins only, like lib.mjs.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { CLUSTER, CLUSTER_CONFIG_DIR, CLUSTER_CONFIG_ENV, serverEnvironment } from './cluster-settings.mjs';
import { IS_WINDOWS, ROOT, appendOutput, canConnect, ensureSearchAttributes, execFileP, findGo, goInstall, log, sleep, stopProcess, waitForTcp } from './lib.mjs';

const exe = (name) => (IS_WINDOWS ? `${name}.exe` : name);
/** Per version, so that a version bump builds next to the old binaries instead of over them. */
export const SERVER_GOBIN = path.join(ROOT, '.tools', `temporal-server-v${CLUSTER.serverVersion}`);
export const UI_SERVER_GOBIN = path.join(ROOT, '.tools', `ui-server-v${CLUSTER.uiServerVersion}`);

/** The ports of one cluster on 127.0.0.1: the defaults of `npm run cluster` (frontend on 7233, as the dev server). */
export const DEFAULT_PORTS = Object.freeze({
  frontendGrpc: 7233,
  frontendHttp: 7243,
  frontendMembership: 6933,
  historyGrpc: 7234,
  historyMembership: 6934,
  matchingGrpc: 7235,
  matchingMembership: 6935,
  workerGrpc: 7239,
  workerMembership: 6939,
});

function portIsFree(port, host = '127.0.0.1') {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, host, () => srv.close(() => resolve(true)));
  });
}

/**
 * Free ports for each of DEFAULT_PORTS, for a cluster beside another one (tests). Below 32768: the
 * server keeps membership ports in a SMALLINT column, so the OS's ephemeral ports will not do.
 */
export async function freePorts() {
  const keys = Object.keys(DEFAULT_PORTS);
  for (let attempt = 0; attempt < 50; attempt++) {
    const base = 17_000 + Math.floor(Math.random() * 1_500) * 10;
    const ports = Object.fromEntries(keys.map((key, i) => [key, base + i]));
    const free = await Promise.all(Object.values(ports).map((port) => portIsFree(port)));
    if (free.every(Boolean)) return ports;
  }
  throw new Error('found no 9 consecutive free ports between 17000 and 32000 on 127.0.0.1');
}

function goOrThrow() {
  const go = findGo();
  if (!go) {
    throw new Error(
      `the Temporal server v${CLUSTER.serverVersion} is not built yet (${path.relative(ROOT, SERVER_GOBIN)}), and building it needs Go 1.25 or newer ` +
        '(https://go.dev/dl/, on PATH or at /usr/local/go).',
    );
  }
  return go;
}

/**
 * Paths of the server, its SQL tool and the directory of its PostgreSQL schemas, building them with
 * `go install` on first use (≈ 3 min on 2 cores; lowPriority: niced, beside running tests).
 * Returns { serverBin, sqlBin, schemaRoot, buildMs }.
 */
export async function ensureClusterServer({ lowPriority = false } = {}) {
  const serverBin = path.join(SERVER_GOBIN, exe('server'));
  const sqlBin = path.join(SERVER_GOBIN, exe('sql'));
  let buildMs = 0;
  const go = existsSync(serverBin) && existsSync(sqlBin) ? findGo() : goOrThrow();
  if (!existsSync(serverBin) || !existsSync(sqlBin)) {
    const v = `v${CLUSTER.serverVersion}`;
    buildMs = await goInstall(go, {
      what: `Temporal server ${v} and its SQL tool`,
      targets: [`go.temporal.io/server/cmd/server@${v}`, `go.temporal.io/server/cmd/tools/sql@${v}`],
      gobin: SERVER_GOBIN,
      produces: [serverBin, sqlBin],
      lowPriority,
    });
  }
  // The schema files ship in the server's module, which `go install` has put in the module cache.
  // Synchronously: npm test starts this beside its typecheck, whose spawnSync stalls the event loop
  // past an async child's timeout.
  const modCache = go ? spawnSync(go.go, ['env', 'GOMODCACHE'], { encoding: 'utf8', timeout: 30_000 }).stdout?.trim() : '';
  if (!modCache) throw new Error("`go env GOMODCACHE` gave no module cache: the server's PostgreSQL schemas are read from it (Go must be installed)");
  const schemaRoot = path.join(modCache, 'go.temporal.io', `server@v${CLUSTER.serverVersion}`, 'schema', 'postgresql', 'v12');
  if (!existsSync(schemaRoot)) {
    // A binary built elsewhere and a cleaned module cache: fetch the module (source only, no build).
    const r = await execFileP(go.go, ['mod', 'download', `go.temporal.io/server@v${CLUSTER.serverVersion}`], 300_000);
    if (!existsSync(schemaRoot)) throw new Error(`the Temporal server's PostgreSQL schemas are not at ${schemaRoot}: ${r.out}`);
  }
  return { serverBin, sqlBin, schemaRoot, buildMs };
}

/** The standalone Temporal Web UI server (the one the CLI embeds), built on first use. */
export async function ensureUiServer() {
  const bin = path.join(UI_SERVER_GOBIN, exe('server'));
  if (existsSync(bin)) return bin;
  await goInstall(goOrThrow(), {
    what: `Temporal UI server v${CLUSTER.uiServerVersion}`,
    targets: [`github.com/temporalio/ui-server/v2/cmd/server@v${CLUSTER.uiServerVersion}`],
    gobin: UI_SERVER_GOBIN,
    produces: [bin],
  });
  return bin;
}

/** PostgreSQL of the cluster: 127.0.0.1:5432 with trust auth by default (PGHOST, PGPORT, PGUSER, PGPASSWORD override). */
export function postgresFromEnv(env = process.env) {
  return {
    host: env.PGHOST || '127.0.0.1',
    port: Number(env.PGPORT || 5432),
    user: env.PGUSER || 'postgres',
    password: env.PGPASSWORD || '',
  };
}

function sqlToolArgs(pg, database) {
  return ['--plugin', CLUSTER.sqlPlugin, '--endpoint', pg.host, '--port', String(pg.port), '--user', pg.user, '--password', pg.password, '--database', database];
}

/** The newest schema version under a `versioned` dir (v1.0 … v1.17): what update-schema migrates to. */
function newestVersion(versionedDir) {
  const versions = readdirSync(versionedDir)
    .filter((d) => /^v\d+\.\d+$/.test(d))
    .map((d) => d.slice(1).split('.').map(Number));
  versions.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  return versions.length ? versions[versions.length - 1].join('.') : null;
}

/**
 * The schema steps of CLUSTER.schema with temporal-sql-tool, idempotent (as the server image's
 * auto-setup): create-database, setup-schema -v 0.0, update-schema -d <versioned dir>.
 * databases: name of each database (CLUSTER.databases by default; tests use scratch names).
 */
export async function setupSchemas({ sqlBin, schemaRoot, pg = postgresFromEnv(), databases = CLUSTER.databases }) {
  for (const step of CLUSTER.schema) {
    const db = databases[step.database];
    const versioned = path.join(schemaRoot, step.dir, 'versioned');
    const base = sqlToolArgs(pg, db);
    await createDatabase({ sqlBin, pg, name: db });
    const setup = await execFileP(sqlBin, [...base, 'setup-schema', '-v', '0.0'], 60_000);
    if (!setup.ok) throw new Error(`temporal-sql-tool setup-schema ${db} failed: ${setup.out}`);
    const update = await execFileP(sqlBin, [...base, 'update-schema', '-d', versioned], 180_000);
    if (!update.ok) throw new Error(`temporal-sql-tool update-schema ${db} (to v${newestVersion(versioned)}) failed: ${update.out}`);
  }
}

/** Creates database `name` (idempotent), e.g. the memory store's beside Temporal's. */
export async function createDatabase({ sqlBin, pg = postgresFromEnv(), name }) {
  const r = await execFileP(sqlBin, [...sqlToolArgs(pg, name), 'create-database', '--defaultdb', 'postgres'], 60_000);
  if (!r.ok && !/already exists/i.test(r.out)) throw new Error(`temporal-sql-tool create-database ${name} failed: ${r.out}`);
}

/** Drops database `name` (scratch databases of tests and benchmarks). */
export async function dropDatabase({ sqlBin, pg = postgresFromEnv(), name }) {
  await execFileP(sqlBin, [...sqlToolArgs(pg, name), 'drop-database', '--defaultdb', 'postgres', '--force'], 60_000);
}

/** Drops Temporal's databases of a cluster (tests' and benchmarks' scratch ones). */
export async function dropDatabases({ sqlBin, pg = postgresFromEnv(), databases }) {
  for (const step of CLUSTER.schema) await dropDatabase({ sqlBin, pg, name: databases[step.database] });
}

/** The environment of one service process (the same variables docker-compose.yml sets per container). */
function serviceEnv({ pg, databases, ports, connectionPools, dynamicConfigFile }) {
  return {
    ...process.env,
    ...serverEnvironment({ ...CLUSTER, databases, connectionPools }),
    POSTGRES_SEEDS: pg.host,
    DB_PORT: String(pg.port),
    POSTGRES_USER: pg.user,
    POSTGRES_PWD: pg.password,
    DYNAMIC_CONFIG_FILE_PATH: dynamicConfigFile,
    BIND_ON_IP: '127.0.0.1',
    TEMPORAL_BROADCAST_ADDRESS: '127.0.0.1',
    FRONTEND_GRPC_PORT: String(ports.frontendGrpc),
    FRONTEND_HTTP_PORT: String(ports.frontendHttp),
    FRONTEND_MEMBERSHIP_PORT: String(ports.frontendMembership),
    HISTORY_GRPC_PORT: String(ports.historyGrpc),
    HISTORY_MEMBERSHIP_PORT: String(ports.historyMembership),
    MATCHING_GRPC_PORT: String(ports.matchingGrpc),
    MATCHING_MEMBERSHIP_PORT: String(ports.matchingMembership),
    WORKER_GRPC_PORT: String(ports.workerGrpc),
    WORKER_MEMBERSHIP_PORT: String(ports.workerMembership),
  };
}

/**
 * Starts the four services (each its own process, logging to <logDir>/temporal-<service>.log), then
 * registers the namespace and the search attributes. The frontend goes first: the namespace and the
 * search attributes are written before history and matching load their caches of them.
 *
 * connectionPools: PostgreSQL connections per process (CLUSTER.connectionPools; tests take fewer, so
 * that two suites' clusters fit beside each other in PostgreSQL's 100).
 * dynamicConfigFile: the dynamic config the services read (re-read every 10 s); the benchmark hands a
 * copy it rewrites to measure each setting.
 *
 * Returns { address, ports, databases, processes (service → ChildProcess), restart(service), stop() }.
 */
export async function startClusterTemporal({
  serverBin,
  temporalBin,
  logDir,
  pg = postgresFromEnv(),
  databases = CLUSTER.databases,
  ports = DEFAULT_PORTS,
  connectionPools = CLUSTER.connectionPools,
  dynamicConfigFile = path.join(CLUSTER_CONFIG_DIR, 'dynamicconfig.yaml'),
  timeoutMs = 120_000,
  onExit,
}) {
  mkdirSync(logDir, { recursive: true });
  const host = '127.0.0.1';
  const address = `${host}:${ports.frontendGrpc}`;
  for (const [name, port] of Object.entries(ports)) {
    if (await canConnect(host, port)) throw new Error(`port ${port} (${name}) is already in use on ${host}; a cluster left over from an earlier run?`);
  }
  const env = serviceEnv({ pg, databases, ports, connectionPools, dynamicConfigFile });
  const processes = {};
  let stopping = false;

  const startService = (service) => {
    const logFile = path.join(logDir, `temporal-${service}.log`);
    const args = ['--root', ROOT, '--config', path.relative(ROOT, CLUSTER_CONFIG_DIR), '--env', CLUSTER_CONFIG_ENV, '--allow-no-auth', 'start', '--service', service];
    const child = spawn(serverBin, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'], detached: !IS_WINDOWS });
    appendOutput(child, logFile);
    child.on('exit', (code, signal) => {
      if (!stopping && processes[service] === child) onExit?.(service, signal ? `signal ${signal}` : `exit code ${code}`, logFile);
    });
    processes[service] = child;
    return child;
  };
  const stop = async () => {
    stopping = true;
    // Frontend first (no new requests), the history service last (it owns the shards).
    for (const service of ['frontend', 'worker', 'matching', 'history']) {
      await stopProcess(processes[service], { signal: 'SIGTERM', graceMs: 10_000, group: true });
    }
  };
  const exited = () => Object.entries(processes).find(([, c]) => c.exitCode !== null || c.signalCode !== null)?.[0];
  const abort = () => {
    const service = exited();
    return service ? `the ${service} service exited (see ${path.join(logDir, `temporal-${service}.log`)})` : null;
  };

  try {
    const deadline = Date.now() + timeoutMs;
    startService('frontend');
    await waitForTcp(host, ports.frontendGrpc, { timeoutMs, shouldAbort: abort });
    // The frontend answers before it serves; creating the namespace is the first call that must work.
    const common = ['--address', address];
    for (;;) {
      const r = await execFileP(temporalBin, ['operator', 'namespace', 'describe', ...common, '--namespace', CLUSTER.namespace], 10_000);
      if (r.ok) break;
      const c = await execFileP(temporalBin, ['operator', 'namespace', 'create', ...common, '--namespace', CLUSTER.namespace, '--retention', CLUSTER.namespaceRetention], 10_000);
      if (c.ok || /already (exists|registered)/i.test(c.out)) continue;
      const why = abort();
      if (why) throw new Error(why);
      if (Date.now() > deadline) throw new Error(`could not create namespace ${CLUSTER.namespace} within ${timeoutMs / 1000}s: ${c.out}`);
      await sleep(500);
    }
    // A new namespace reaches the frontend's namespace cache within its refresh interval (≈ 10 s).
    for (;;) {
      try {
        await ensureSearchAttributes(temporalBin, address, CLUSTER.namespace);
        break;
      } catch (err) {
        const why = abort();
        if (why) throw new Error(why);
        if (Date.now() > deadline) throw err;
        await sleep(500);
      }
    }
    for (const service of ['history', 'matching', 'worker']) startService(service);
    for (const service of ['history', 'matching', 'worker']) {
      // The worker service serves no gRPC of its own, only its membership port.
      const port = ports[service === 'worker' ? 'workerMembership' : `${service}Grpc`];
      await waitForTcp(host, port, { timeoutMs: Math.max(5_000, deadline - Date.now()), shouldAbort: abort });
    }
    // Serving once a workflow can be started: the history service owns its shards and matching is up.
    const probeId = `threadline-cluster-probe-${Date.now()}`;
    for (;;) {
      const r = await execFileP(
        temporalBin,
        ['workflow', 'start', ...common, '--namespace', CLUSTER.namespace, '--type', 'probe', '--task-queue', 'threadline-cluster-probe', '--workflow-id', probeId],
        15_000,
      );
      if (r.ok || /already (started|running)/i.test(r.out)) break;
      const why = abort();
      if (why) throw new Error(why);
      if (Date.now() > deadline) throw new Error(`the cluster did not accept a workflow within ${timeoutMs / 1000}s: ${r.out}`);
      await sleep(500);
    }
    await execFileP(temporalBin, ['workflow', 'terminate', ...common, '--namespace', CLUSTER.namespace, '--workflow-id', probeId, '--reason', 'start-up probe'], 15_000);
  } catch (err) {
    await stop();
    throw err;
  }

  return {
    address,
    ports,
    databases,
    processes,
    /** Starts a stopped or killed service again (chaos). */
    restart: (service) => startService(service),
    stop,
  };
}
