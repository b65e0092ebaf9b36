// `npm run cluster` — Threadline in production shape on one machine, without Docker:
// the Temporal server (built from the Go module proxy on first run) on PostgreSQL with 16 history
// shards, its frontend, history, matching and worker services as separate processes, the Temporal
// Web UI, two Threadline workers and two REST APIs (PostgreSQL memory store, API keys, encrypted
// payloads). docker-compose.yml describes the same topology for containers (docs/cluster.md).
//
// Needs PostgreSQL at 127.0.0.1:5432 (PGHOST, PGPORT, PGUSER, PGPASSWORD; default user postgres,
// trust auth) and Go ≥ 1.25 for the first build. Data and logs: ${DATA_DIR:-./data}/cluster.
// Ctrl-C stops everything (the APIs, the workers, the UI, then the Temporal services).
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { CLUSTER } from './cluster-settings.mjs';
import { DEFAULT_PORTS, createDatabase, ensureClusterServer, ensureUiServer, postgresFromEnv, setupSchemas, startClusterTemporal } from './cluster-temporal.mjs';
import {
  IS_WINDOWS,
  ROOT,
  buildDist,
  nodeDist,
  nodeWorker,
  appendOutput,
  bold,
  canConnect,
  color,
  dim,
  ensureDeps,
  ensureTemporal,
  fail,
  log,
  sleep,
  stopProcess,
  waitForTcp,
  workerEnv,
} from './lib.mjs';

const env = process.env;
const startedAt = Date.now();
const apiPort = Number(env.PORT || 3000);
const uiPort = Number(env.TEMPORAL_UI_PORT || 8233);
const apiPorts = Array.from({ length: CLUSTER.threadlineApis }, (_, i) => apiPort + i);
const baseDir = path.join(env.DATA_DIR ? path.resolve(env.DATA_DIR) : path.join(ROOT, 'data'), 'cluster');
const logDir = path.join(baseDir, 'logs');
const pg = postgresFromEnv();
const databaseUrl = `postgres://${encodeURIComponent(pg.user)}${pg.password ? `:${encodeURIComponent(pg.password)}` : ''}@${pg.host}:${pg.port}/${CLUSTER.databases.memory}`;

for (const port of [...apiPorts, uiPort]) {
  if (!Number.isInteger(port) || port <= 0 || port > 65535) fail(`PORT=${env.PORT} / TEMPORAL_UI_PORT=${env.TEMPORAL_UI_PORT}: not a port number`);
  if (await canConnect('127.0.0.1', port)) fail(`port ${port} is already in use (PORT and the next ${CLUSTER.threadlineApis - 1} are the APIs', TEMPORAL_UI_PORT the Web UI's)`);
}
if (!(await canConnect(pg.host, pg.port))) fail(`PostgreSQL does not answer at ${pg.host}:${pg.port} (set PGHOST/PGPORT/PGUSER/PGPASSWORD)`);
mkdirSync(logDir, { recursive: true });

/** A path as a person types it from here: relative below the current directory, else absolute. */
const shown = (p) => (path.relative(process.cwd(), p).startsWith('..') ? p : path.relative(process.cwd(), p) || '.');

/**
 * The admin key and the payload encryption key: from the environment, else generated once and kept
 * in <data>/cluster/secrets.json (0600; keys given in the environment are never written there). The
 * encryption key must not change while histories exist.
 */
function secrets() {
  const file = path.join(baseDir, 'secrets.json');
  const kept = existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')) : {};
  const generated = {
    THREADLINE_ADMIN_KEY: kept.THREADLINE_ADMIN_KEY || randomBytes(24).toString('hex'),
    THREADLINE_ENCRYPTION_KEY: kept.THREADLINE_ENCRYPTION_KEY || randomBytes(32).toString('base64'),
  };
  writeFileSync(file, `${JSON.stringify(generated, null, 2)}\n`, { mode: 0o600 });
  return {
    THREADLINE_ADMIN_KEY: env.THREADLINE_ADMIN_KEY || generated.THREADLINE_ADMIN_KEY,
    THREADLINE_ENCRYPTION_KEY: env.THREADLINE_ENCRYPTION_KEY || generated.THREADLINE_ENCRYPTION_KEY,
    file,
    fromEnv: Boolean(env.THREADLINE_ADMIN_KEY),
  };
}

// ---- build (first run only) and schemas
ensureDeps();
const temporalBin = await ensureTemporal();
let tools;
try {
  tools = await ensureClusterServer();
} catch (err) {
  fail(err.message);
}
let uiBin = null;
try {
  uiBin = await ensureUiServer();
} catch (err) {
  log(color('33', `warning: the Temporal Web UI server did not build, the cluster runs without it: ${err.message.split('\n')[0]}`));
}
log(`PostgreSQL ${pg.host}:${pg.port}: schemas of ${CLUSTER.databases.temporal} and ${CLUSTER.databases.visibility} (temporal-sql-tool)…`);
try {
  await setupSchemas({ ...tools, pg });
  await createDatabase({ sqlBin: tools.sqlBin, pg, name: CLUSTER.databases.memory });
} catch (err) {
  fail(err.message);
}

// ---- processes, stopped in reverse order of start
/** [name, ChildProcess] in start order. */
const children = [];
let temporal = null;
let stopping = false;

async function shutdown(code, why) {
  if (stopping) return;
  stopping = true;
  if (why) log(why);
  for (const [, child] of [...children].reverse()) await stopProcess(child, { signal: 'SIGTERM', graceMs: 15_000, group: true });
  if (temporal) {
    log('stopping the Temporal services…');
    await temporal.stop();
  }
  process.exit(code);
}
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => void shutdown(0, `${signal}: stopping everything…`));

let running = false;
/** Before everything is up, a piece that exits stops the start; afterwards the rest carries on (as a cluster does), and we say so. */
const onExit = (name, how, logFile) => {
  if (stopping) return;
  const where = `its log: ${shown(logFile)}`;
  if (!running) void shutdown(1, `${name} exited while starting (${how}); ${where}. Stopping everything.`);
  else log(color('31', `${name} exited (${how}); the other processes carry on without it (${where}). Ctrl-C and \`npm run cluster\` start it again.`));
};

log(`starting the Temporal services (${CLUSTER.services.join(', ')}) on ${CLUSTER.numHistoryShards} history shards…`);
try {
  temporal = await startClusterTemporal({
    serverBin: tools.serverBin,
    temporalBin,
    logDir,
    pg,
    ports: DEFAULT_PORTS,
    onExit: (service, how, file) => onExit(`the Temporal ${service} service`, how, file),
  });
} catch (err) {
  if (!stopping) fail(`${err.message}\n  (a restart within 20 s of a stop waits ≈ 30 s for the old members; logs: ${logDir})`);
}
if (stopping) await new Promise(() => {});

/** Spawns `cmd args` in its own process group, its output appended to <logDir>/<name>.log. */
function startChild(name, cmd, args, childEnv) {
  const logFile = path.join(logDir, `${name}.log`);
  const child = spawn(cmd, args, { cwd: ROOT, env: childEnv, stdio: ['ignore', 'pipe', 'pipe'], shell: IS_WINDOWS, detached: !IS_WINDOWS });
  appendOutput(child, logFile);
  child.on('error', (err) => onExit(name, `error: ${err.message}`, logFile));
  child.on('exit', (code, signal) => onExit(name, signal ? `signal ${signal}` : `exit code ${code}`, logFile));
  children.push([name, child]);
  return child;
}

const keys = secrets();
const uiUrl = uiBin ? `http://127.0.0.1:${uiPort}` : null;
const threadlineEnv = {
  ...env,
  TEMPORAL_ADDRESS: temporal.address,
  TEMPORAL_NAMESPACE: CLUSTER.namespace,
  TASK_QUEUE: env.TASK_QUEUE || 'threadline',
  // Worker Deployment Versioning: a deploy (a worker on new code) never breaks a run waiting for a person.
  WORKER_DEPLOYMENT: env.WORKER_DEPLOYMENT || 'threadline',
  DATA_DIR: path.join(baseDir, 'threadline'),
  MEMORY_STORE: 'postgres',
  DATABASE_URL: databaseUrl,
  THREADLINE_AUTH: 'apikey',
  THREADLINE_ADMIN_KEY: keys.THREADLINE_ADMIN_KEY,
  THREADLINE_ENCRYPTION_KEY: keys.THREADLINE_ENCRYPTION_KEY,
  ...(uiUrl ? { TEMPORAL_UI_URL: uiUrl } : {}),
};

if (uiBin) {
  // The UI server reads <root>/<config>/<env>.yaml; payloads are encrypted, so it decodes them through the API's codec endpoint.
  const uiConfigDir = path.join(baseDir, 'ui');
  mkdirSync(uiConfigDir, { recursive: true });
  writeFileSync(
    path.join(uiConfigDir, 'cluster.yaml'),
    [
      `temporalGrpcAddress: ${temporal.address}`,
      'host: 127.0.0.1',
      `port: ${uiPort}`,
      'enableUi: true',
      `defaultNamespace: ${CLUSTER.namespace}`,
      'cors:',
      '  allowOrigins:',
      `    - http://127.0.0.1:${apiPort}`,
      'codec:',
      `  endpoint: http://127.0.0.1:${apiPort}/v1/codec`,
      '',
    ].join('\n'),
  );
  startChild('temporal-ui', uiBin, ['--root', baseDir, '--config', 'ui', '--env', 'cluster', 'start'], env);
}
await buildDist();
for (let i = 1; i <= CLUSTER.threadlineWorkers; i++) {
  startChild(`worker-${i}`, process.execPath, nodeWorker(), workerEnv(threadlineEnv));
}
for (const [i, port] of apiPorts.entries()) {
  startChild(`api-${i + 1}`, process.execPath, nodeDist('api/server'), { ...threadlineEnv, PORT: String(port), HOST: '127.0.0.1' });
}

// ---- wait until each API answers /healthz (200 once it reaches Temporal) and the UI listens
const deadline = Date.now() + 120_000;
for (const port of apiPorts) {
  for (;;) {
    if (stopping) await new Promise(() => {});
    const res = await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(3000) }).catch(() => null);
    if (res?.status === 200) break;
    if (Date.now() > deadline) await shutdown(1, `the API on port ${port} did not become healthy within 120 s (log: ${logDir})`);
    await sleep(500);
  }
}
if (uiBin) await waitForTcp('127.0.0.1', uiPort, { timeoutMs: 30_000 }).catch(() => log(color('33', `warning: the Web UI does not listen on ${uiPort} yet (log: ${logDir}/temporal-ui.log)`)));

running = true;
const rule = '─'.repeat(76);
const p = DEFAULT_PORTS;
console.log(
  [
    '',
    rule,
    bold(`  Threadline cluster is running (up in ${Math.round((Date.now() - startedAt) / 1000)} s)`),
    '',
    `  REST APIs         ${apiPorts.map((port) => `http://127.0.0.1:${port}`).join('   ')}`,
    `  Temporal Web UI   ${uiUrl ?? '(not built; see the warning above)'}`,
    `  Temporal          frontend ${temporal.address} (HTTP ${p.frontendHttp})   history :${p.historyGrpc}   matching :${p.matchingGrpc}   worker (membership :${p.workerMembership})`,
    `                    ${CLUSTER.numHistoryShards} history shards, PostgreSQL ${pg.host}:${pg.port} (${CLUSTER.databases.temporal}, ${CLUSTER.databases.visibility})`,
    `  workers           ${CLUSTER.threadlineWorkers} on task queue ${threadlineEnv.TASK_QUEUE}, memory in ${CLUSTER.databases.memory} (MEMORY_STORE=postgres)`,
    `  auth              API keys; ${keys.fromEnv ? 'the admin key is THREADLINE_ADMIN_KEY' : `the admin key and the encryption key are in ${shown(keys.file)}`}`,
    `  logs              ${shown(logDir)}/`,
    '',
    '  Try:',
    keys.fromEnv
      ? '    ADMIN=$THREADLINE_ADMIN_KEY'
      : `    ADMIN=$(node -p "require('${path.relative(ROOT, keys.file).startsWith('..') ? keys.file : `./${path.relative(ROOT, keys.file)}`}').THREADLINE_ADMIN_KEY")`,
    `    KEY=$(curl -s -X POST http://127.0.0.1:${apiPort}/v1/admin/keys -H "authorization: Bearer $ADMIN" -H 'content-type: application/json' -d '{"userId":"alice"}' | node -p 'JSON.parse(require("fs").readFileSync(0)).key')`,
    `    curl -s -X POST http://127.0.0.1:${apiPort}/v1/runs -H "authorization: Bearer $KEY" -H 'content-type: application/json' -d '{"userId":"alice","goal":"what is 12*7?"}'`,
    dim(`  Each piece is its own process (history pid ${temporal.processes.history.pid}, worker-1 pid ${children.find(([n]) => n === 'worker-1')?.[1].pid}, …): kill one and the rest carries on.`),
    '',
    '  Ctrl-C stops everything.',
    rule,
    '',
  ].join('\n'),
);
