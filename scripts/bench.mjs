// `npm run bench` — the orchestration benchmark (bench/orchestration.ts) against a private,
// in-memory Temporal dev server on a free port, stopped afterwards (also on Ctrl-C); then the
// memory benchmark (bench/memory.ts), which needs no Temporal server but PostgreSQL at
// BENCH_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/test); then the session benchmark
// (bench/session.ts) on the same server: one session of --session-turns turns (or BENCH_SESSION_TURNS;
// default 1,000; the issue's 10,000 takes long — it prints the expected duration first; its memory in
// the in-memory store, or with --session-store file in the file store `npm start` uses); then the
// many-runs benchmark (bench/many-runs.ts): --many-runs N runs (default 1,000) parked on a question
// and resumed by N replies over the REST API, with one worker in a child process; then the MCP
// benchmark (bench/mcp-tools.ts): per-call overhead of an MCP tool over stdio against a built-in
// tool, --mcp-pairs N pairs of steps (default 24) in one run, and direct calls; then the long-term
// memory benchmark (bench/longterm.ts): import rate and search p50/p95 for one user's 95,000
// messages and 5,000 facts, embedded file store and PostgreSQL; then the long-term retrieval
// evaluation (bench/longterm-eval.ts): recall@1/5/10 per question category on a seeded evaluation
// set, ours against a plain BM25 baseline (MiniSearch), dev and held-out splits; then react_mem's
// answer latency (bench/react-mem.ts); then the schedules benchmark (bench/schedules.ts):
// --schedules N schedules of one user (default 1,000), each once, due evenly within one minute that
// begins --schedules-lead S seconds after their creation starts (default 90), and the delay from
// each due time to its run's start and end (--schedules-late-worker: no worker until all are due); then
// the live-token benchmark (bench/streaming.ts): stub piece → SSE token latency p50/p95, one run at a
// time and 100 at once, embedded channel and PostgreSQL's LISTEN/NOTIFY, and a streaming run's time
// against the same run without streaming.
// The orchestration benchmark's comparison row (f), LangGraph.js with its PostgreSQL checkpointer, runs
// from bench/peers/langgraph/, whose pinned packages this script installs there on first use.
//
//   npm run bench -- [--steps 50] [--reps 3] [--warmup-steps 5] [--dynamic-config KEY=VALUE ...]
//                    [--server-defaults] [--db-file] [--session-turns N] [--session-store memory|file] [--many-runs N]
//                    [--mcp-pairs N] [--schedules N] [--schedules-lead S] [--schedules-late-worker]
//                    [--streaming-runs N] [--streaming-burst N] [--streaming-pairs N]
//                    [--only orchestration|memory|session|many-runs|mcp|longterm|longterm-eval|longterm-recall|react-mem|schedules|streaming]
//
// The server gets the low-latency dynamic config every Threadline dev server gets
// (LOW_LATENCY_DYNAMIC_CONFIG in scripts/lib.mjs); --server-defaults leaves the server's own defaults,
// to compare. --db-file keeps the server's data in a SQLite file (in a temporary folder, removed
// afterwards), as `npm start` does, with the same SQLite settings (SQLITE_FILE_PRAGMAS).
// --dynamic-config (repeatable) goes to the server after it as `--dynamic-config-value KEY=VALUE`
// (VALUE in JSON), e.g. system.enableActivityEagerExecution=true. The benchmark gets the
// effective list as a JSON array in THREADLINE_BENCH_DYNAMIC_CONFIG, to record it, and the server's
// Prometheus endpoint in THREADLINE_BENCH_METRICS_URL; every other argument is passed on to it.
//
//   npm run bench -- --cluster [--cluster-steps 50] [--cluster-reps 5] [--cluster-turns 20] [--knob-rounds 3] [--many-runs N]
//
// runs the cluster benchmarks instead: the production-shaped cluster (scripts/cluster-temporal.mjs: 16
// shards on PostgreSQL, scratch databases, free ports) beside the dev server; ms per plan step and per
// session turn on each, alternating, and on the cluster each recommended dynamic config setting against
// the server's default (bench/cluster-steps.ts); then the many-runs benchmark on the cluster with one
// worker and with two (MEMORY_STORE=postgres on a scratch database), for the throughput a second
// worker adds.
import { spawn } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { randomBytes } from 'node:crypto';
import { createDatabase, dropDatabase, dropDatabases, ensureClusterServer, freePorts, postgresFromEnv, setupSchemas, startClusterTemporal } from './cluster-temporal.mjs';
import { CLUSTER, CLUSTER_CONFIG_DIR } from './cluster-settings.mjs';
import { IS_WINDOWS, LOW_LATENCY_DYNAMIC_CONFIG, ROOT, binPath, ensureDeps, ensureTemporal, fail, freePort, log, startTemporalDev, stopProcess, stopTemporalServers } from './lib.mjs';

// ---- arguments: pick out --dynamic-config, keep the rest in order
const dynamicConfig = [];
const benchArgs = [];
const sessionArgs = [];
const manyRunsArgs = [];
const mcpArgs = [];
const schedulesArgs = [];
const streamingArgs = [];
const BENCHES = ['orchestration', 'memory', 'session', 'many-runs', 'mcp', 'longterm', 'longterm-eval', 'longterm-recall', 'react-mem', 'schedules', 'streaming'];
let only = null;
let lowLatency = true;
/** --cluster: the cluster benchmarks instead of the others. */
let clusterMode = false;
const clusterArgs = [];
/** --db-file: the server keeps its data in a SQLite file, as under `npm start`, instead of in memory. */
let dbFile = null;
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
  const arg = argv[i];
  let pair;
  if (arg === '--session-turns' || arg.startsWith('--session-turns=')) {
    const value = arg === '--session-turns' ? argv[++i] : arg.slice('--session-turns='.length);
    if (!/^\d+$/.test(value ?? '')) fail('--session-turns needs a number of turns');
    sessionArgs.push('--session-turns', value);
    continue;
  } else if (arg === '--session-store' || arg.startsWith('--session-store=')) {
    const value = arg === '--session-store' ? argv[++i] : arg.slice('--session-store='.length);
    if (value !== 'memory' && value !== 'file') fail('--session-store needs memory or file');
    sessionArgs.push('--session-store', value);
    continue;
  } else if (arg === '--many-runs' || arg.startsWith('--many-runs=')) {
    const value = arg === '--many-runs' ? argv[++i] : arg.slice('--many-runs='.length);
    if (!/^\d+$/.test(value ?? '')) fail('--many-runs needs a number of runs');
    manyRunsArgs.push('--many-runs', value);
    continue;
  } else if (arg === '--mcp-pairs' || arg.startsWith('--mcp-pairs=')) {
    const value = arg === '--mcp-pairs' ? argv[++i] : arg.slice('--mcp-pairs='.length);
    if (!/^\d+$/.test(value ?? '')) fail('--mcp-pairs needs a number of pairs');
    mcpArgs.push('--mcp-pairs', value);
    continue;
  } else if (arg === '--schedules-late-worker') {
    schedulesArgs.push('--late-worker');
    continue;
  } else if (arg === '--schedules' || arg === '--schedules-lead') {
    const value = argv[++i];
    if (!/^\d+$/.test(value ?? '')) fail(`${arg} needs a number`);
    schedulesArgs.push(arg === '--schedules' ? '--schedules' : '--lead', value);
    continue;
  } else if (arg === '--streaming-runs' || arg === '--streaming-burst' || arg === '--streaming-pairs') {
    const value = argv[++i];
    if (!/^\d+$/.test(value ?? '')) fail(`${arg} needs a number`);
    streamingArgs.push(arg, value);
    continue;
  } else if (arg === '--only' || arg.startsWith('--only=')) {
    only = arg === '--only' ? argv[++i] : arg.slice('--only='.length);
    if (!BENCHES.includes(only)) fail(`--only: expected one of ${BENCHES.join(', ')}`);
    continue;
  } else if (arg === '--cluster') {
    clusterMode = true;
    continue;
  } else if (['--cluster-steps', '--cluster-reps', '--cluster-turns', '--knob-rounds'].includes(arg)) {
    const value = argv[++i];
    if (!/^\d+$/.test(value ?? '')) fail(`${arg} needs a number`);
    clusterArgs.push(arg, value);
    continue;
  } else if (arg === '--server-defaults') {
    lowLatency = false;
    continue;
  } else if (arg === '--db-file') {
    dbFile = path.join(mkdtempSync(path.join(os.tmpdir(), 'threadline-bench-db-')), 'temporal.sqlite');
    continue;
  } else if (arg === '--dynamic-config') {
    pair = argv[++i];
    if (pair === undefined) fail('--dynamic-config needs a KEY=VALUE argument');
  } else if (arg.startsWith('--dynamic-config=')) pair = arg.slice('--dynamic-config='.length);
  else {
    benchArgs.push(arg);
    continue;
  }
  // Checked here, not by the server: a typo should not cost a server start-up.
  if (!/^[\w.]+=.+$/.test(pair)) fail(`--dynamic-config ${pair}: expected KEY=VALUE, e.g. system.enableActivityEagerExecution=true`);
  dynamicConfig.push(pair);
}

const wanted = (name) => !clusterMode && (only === null || only === name);
ensureDeps();
// Row (f) of the orchestration benchmark runs LangGraph.js with its PostgreSQL checkpointer; its packages
// live in their own scratch folder, never among Threadline's dependencies. Without them, (f) is skipped.
if (wanted('orchestration')) {
  ensureDeps({ dir: path.join(ROOT, 'bench', 'peers', 'langgraph'), what: 'the LangGraph.js comparison peer (orchestration row f)', optional: true });
}
const temporalBin = await ensureTemporal();

let bench = null;
let exiting = false;
/** The cluster of --cluster and the drop of its scratch databases, once made. */
let cluster = null;
let clusterDrop = null;

/** Stops the benchmark (if still running), then the server, then exits with `code`. */
async function finish(code, signal) {
  if (exiting) return;
  exiting = true;
  // On a terminal's Ctrl-C the benchmark has the signal already; on `kill` of this script it has not.
  if (bench) await stopProcess(bench, { signal: signal ?? 'SIGTERM', graceMs: 10_000 });
  await stopTemporalServers(); // even one still starting
  if (cluster) await cluster.stop();
  if (clusterDrop) await clusterDrop();
  if (dbFile) rmSync(path.dirname(dbFile), { recursive: true, force: true });
  process.exit(code);
}
process.on('SIGINT', () => void finish(130, 'SIGINT'));
process.on('SIGTERM', () => void finish(143, 'SIGTERM'));

// ---- the server
const effectiveConfig = [...(lowLatency ? Object.entries(LOW_LATENCY_DYNAMIC_CONFIG).map(([k, v]) => `${k}=${JSON.stringify(v)}`) : []), ...dynamicConfig];
let server;
try {
  const [port, metricsPort] = [await freePort(), await freePort()];
  log(
    `starting ${dbFile ? `a Temporal dev server with its data in ${dbFile}` : 'an in-memory Temporal dev server'} on 127.0.0.1:${port} (${lowLatency ? 'low-latency settings' : "the server's default settings"}` +
      `${dynamicConfig.length ? `; dynamic config: ${dynamicConfig.join(', ')}` : ''})`,
  );
  const started = performance.now();
  server = await startTemporalDev({
    bin: temporalBin,
    port,
    uiPort: null,
    ...(dbFile ? { dbFile } : {}),
    onLine: () => {}, // its warnings would break up the benchmark's table; a failed start still reports them
    dynamicConfig,
    lowLatency,
    metricsPort,
  });
  log(`Temporal dev server ready at ${server.address} in ${Math.round(performance.now() - started)} ms`);
} catch (err) {
  console.error(`[threadline] error: ${err instanceof Error ? err.message : err}`);
  await finish(1);
}
if (exiting) await new Promise(() => {}); // interrupted while starting: finish() is shutting down

// ---- the benchmark
const env = {
  ...process.env,
  TEMPORAL_ADDRESS: server.address,
  TEMPORAL_NAMESPACE: 'default',
  THREADLINE_TEMPORAL_BIN: temporalBin,
  THREADLINE_BENCH_DYNAMIC_CONFIG: JSON.stringify(effectiveConfig),
  // Which results file: the standard settings, the server's defaults, extra dynamic config; data in a file.
  THREADLINE_BENCH_VARIANT: [!lowLatency ? 'server-defaults' : dynamicConfig.length ? 'dynamic-config' : '', dbFile ? 'db-file' : ''].filter(Boolean).join('-'),
  THREADLINE_BENCH_METRICS_URL: server.metricsUrl,
  THREADLINE_BENCH_SERVER_PID: String(server.process.pid ?? ''),
};
/** `onMessage`: the benchmark may ask this process for something (an IPC message); what it returns is sent back. */
function runBench(file, args, extraEnv = {}, { onMessage } = {}) {
  const stdio = onMessage ? ['inherit', 'inherit', 'inherit', 'ipc'] : 'inherit';
  bench = spawn(binPath('tsx'), [file, ...args], { cwd: ROOT, env: { ...env, ...extraEnv }, stdio, shell: IS_WINDOWS });
  if (onMessage) {
    const child = bench;
    child.on('message', (message) => {
      onMessage(message).then(
        (reply) => child.connected && child.send(reply),
        (err) => child.connected && child.send({ kind: 'error', message: err instanceof Error ? err.message : String(err) }),
      );
    });
  }
  return new Promise((resolve) => {
    bench.on('error', (err) => {
      console.error(`[threadline] could not start ${file}: ${err.message}`);
      resolve(1);
    });
    bench.on('exit', (code, signal) => resolve(signal ? 1 : (code ?? 1)));
  });
}
let exitCode = 0;
if (wanted('orchestration')) exitCode = await runBench('bench/orchestration.ts', benchArgs);
// The memory benchmark needs no Temporal server; it runs after, in the same `npm run bench`.
if (exitCode === 0 && !exiting && wanted('memory')) {
  if (only === null) console.log('');
  exitCode = await runBench('bench/memory.ts', []);
}
if (exitCode === 0 && !exiting && wanted('session')) {
  if (only === null) console.log('');
  exitCode = await runBench('bench/session.ts', sessionArgs);
}
if (exitCode === 0 && !exiting && wanted('many-runs')) {
  if (only === null) console.log('');
  exitCode = await runBench('bench/many-runs.ts', manyRunsArgs);
}
if (exitCode === 0 && !exiting && wanted('mcp')) {
  if (only === null) console.log('');
  exitCode = await runBench('bench/mcp-tools.ts', mcpArgs);
}
// Long-term memory (bench/longterm.ts): import rate and search latency, file store and PostgreSQL.
if (exitCode === 0 && !exiting && wanted('longterm')) {
  if (only === null) console.log('');
  exitCode = await runBench('bench/longterm.ts', []);
}
// Long-term retrieval quality (bench/longterm-eval.ts): recall@k against plain BM25, both stores.
if (exitCode === 0 && !exiting && wanted('longterm-eval')) {
  if (only === null) console.log('');
  exitCode = await runBench('bench/longterm-eval.ts', []);
}
// Evidence recall from long two-person conversations (bench/longterm-recall.ts, issue 30), both stores.
if (exitCode === 0 && !exiting && wanted('longterm-recall')) {
  if (only === null) console.log('');
  exitCode = await runBench('bench/longterm-recall.ts', ['--stores', 'file,postgres']);
}
// Answer latency with react_mem against react (bench/react-mem.ts), on the same server.
if (exitCode === 0 && !exiting && wanted('react-mem')) {
  if (only === null) console.log('');
  exitCode = await runBench('bench/react-mem.ts', []);
}
// Schedules (bench/schedules.ts): N schedules of one user due within one minute, due → run start.
if (exitCode === 0 && !exiting && wanted('schedules')) {
  if (only === null) console.log('');
  exitCode = await runBench('bench/schedules.ts', schedulesArgs);
}
// Live tokens (bench/streaming.ts): first-token latency over both channels, and what streaming costs a run.
if (exitCode === 0 && !exiting && wanted('streaming')) {
  if (only === null) console.log('');
  exitCode = await runBench('bench/streaming.ts', streamingArgs);
}
// ---- --cluster: the production-shaped cluster beside the dev server
if (clusterMode && !exiting) {
  const id = randomBytes(4).toString('hex');
  const databases = { temporal: `threadline_bench_${id}_temporal`, visibility: `threadline_bench_${id}_visibility` };
  const memoryDb = `threadline_bench_${id}_memory`;
  const pg = postgresFromEnv();
  let dynamicConfigFile = '';
  let clusterOptions = null;
  try {
    const tools = await ensureClusterServer();
    clusterDrop = async () => {
      await dropDatabases({ sqlBin: tools.sqlBin, databases });
      await dropDatabase({ sqlBin: tools.sqlBin, name: memoryDb });
    };
    const started = performance.now();
    await setupSchemas({ ...tools, databases });
    await createDatabase({ sqlBin: tools.sqlBin, pg, name: memoryDb });
    // A copy the benchmark rewrites to measure each recommended setting against the server's default.
    dynamicConfigFile = path.join(mkdtempSync(path.join(os.tmpdir(), 'threadline-bench-dynamicconfig-')), 'dynamicconfig.yaml');
    copyFileSync(path.join(CLUSTER_CONFIG_DIR, 'dynamicconfig.yaml'), dynamicConfigFile);
    clusterOptions = {
      serverBin: tools.serverBin,
      temporalBin,
      logDir: mkdtempSync(path.join(os.tmpdir(), 'threadline-bench-cluster-logs-')),
      databases,
      ports: await freePorts(),
      dynamicConfigFile,
    };
    cluster = await startClusterTemporal(clusterOptions);
    log(`cluster ready at ${cluster.address} in ${Math.round(performance.now() - started)} ms (16 shards on PostgreSQL; services as separate processes)`);
  } catch (err) {
    console.error(`[threadline] error: the cluster did not start: ${err instanceof Error ? err.message : err}`);
    await finish(1);
  }
  /** The cluster with other dynamic config: every service started again on the same databases and ports, so that all of it applies. */
  let settingsChanged = false;
  const restartWith = async (yaml) => {
    settingsChanged = true;
    const started = performance.now();
    writeFileSync(dynamicConfigFile, yaml);
    await cluster.stop();
    cluster = await startClusterTemporal(clusterOptions);
    return { kind: 'restarted', ms: Math.round(performance.now() - started) };
  };
  exitCode = await runBench(
    'bench/cluster-steps.ts',
    clusterArgs,
    { THREADLINE_BENCH_CLUSTER_ADDRESS: cluster.address, THREADLINE_BENCH_CLUSTER_SETTINGS: JSON.stringify(CLUSTER.dynamicConfig) },
    { onMessage: (m) => (m?.kind === 'dynamic-config' && typeof m.yaml === 'string' ? restartWith(m.yaml) : Promise.reject(new Error(`unknown request ${JSON.stringify(m)}`))) },
  );
  // The many-runs benchmark runs with the recommended settings again (the knob rounds changed them).
  if (settingsChanged && exitCode === 0 && !exiting) await restartWith(readFileSync(path.join(CLUSTER_CONFIG_DIR, 'dynamicconfig.yaml'), 'utf8'));
  const databaseUrl = `postgres://${encodeURIComponent(pg.user)}${pg.password ? `:${encodeURIComponent(pg.password)}` : ''}@${pg.host}:${pg.port}/${memoryDb}`;
  for (const workers of [1, 2]) {
    if (exitCode !== 0 || exiting) break;
    console.log('');
    exitCode = await runBench('bench/many-runs.ts', [...manyRunsArgs, '--workers', String(workers)], {
      TEMPORAL_ADDRESS: cluster.address,
      THREADLINE_BENCH_SERVER_LABEL: 'cluster',
      THREADLINE_BENCH_VARIANT: `cluster-${workers}w`,
      THREADLINE_BENCH_DYNAMIC_CONFIG: '[]',
      MEMORY_STORE: 'postgres',
      DATABASE_URL: databaseUrl,
    });
  }
}
if (exiting) await new Promise(() => {}); // interrupted: finish() is already shutting down
await finish(exitCode);
