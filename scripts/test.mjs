// `npm test` — typecheck and lint, then every test/**/*.test.ts against a fresh in-memory Temporal dev server.
//
//   npm test                         all tests
//   npm test -- api                  only test files whose path contains "api" (several filters: any of them)
//   npm test -- test/x/y.test.ts     exactly these files
//   npm test -- --skip-typecheck     skip `tsc --noEmit` and the lint (also THREADLINE_SKIP_TYPECHECK=1)
//   npm test -- --cluster [files]    also run the cluster phase (on the selected files of CLUSTER_TEST_FILES)
//   npm test -- --cluster-only       only the cluster phase
//
// The whole suite (no files, no filters) ends with the cluster phase: CLUSTER_TEST_FILES again, against
// the production-shaped Temporal cluster (scripts/cluster-temporal.mjs: server built from the Go module
// proxy, PostgreSQL, 16 shards, services as separate processes) on scratch databases, reported as
// `cluster: <file>`. Its build starts niced beside the first phase; when it fails, the run fails.
//
// The tests get TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE=default, THREADLINE_WORKFLOW_BUNDLE (a
// pre-built workflow bundle), THREADLINE_TEMPORAL_BIN (the CLI, for tests that run their own
// server) and a scratch DATA_DIR. OPENAI_API_KEY/OPENAI_BASE_URL/AGENT_MODEL (and EMBEDDING_*) are removed so the
// suite never calls a paid model by accident (THREADLINE_TEST_REAL_MODEL=1 keeps them).
// The last line printed is always "N passed, N failed".
import { spawn, spawnSync } from 'node:child_process';
import { appendFileSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { dropDatabases, ensureClusterServer, freePorts, setupSchemas, startClusterTemporal } from './cluster-temporal.mjs';
import { IS_WINDOWS, ROOT, binPath, ensureDeps, ensureTemporal, fail, freePort, log, startTemporalDev, stopTemporalServers } from './lib.mjs';

const TEST_DIR = path.join(ROOT, 'test');

// ---- arguments
const argv = process.argv.slice(2);
const skipTypecheck = argv.includes('--skip-typecheck') || process.env.THREADLINE_SKIP_TYPECHECK === '1';
const clusterOnly = argv.includes('--cluster-only');
const explicitFiles = [];
const filters = [];
for (const arg of argv) {
  if (arg === '--skip-typecheck' || arg === '--cluster' || arg === '--cluster-only') continue;
  if (arg.startsWith('-')) fail(`unknown option ${arg} (see the top of scripts/test.mjs)`);
  if (/\.[cm]?[jt]sx?$/.test(arg) && existsSync(arg) && statSync(arg).isFile()) explicitFiles.push(path.resolve(arg));
  else filters.push(arg);
}

function findTestFiles(dir) {
  if (!existsSync(dir)) return [];
  const out = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name.startsWith('.') || entry.name === 'node_modules') continue;
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...findTestFiles(full));
    else if (entry.isFile() && entry.name.endsWith('.test.ts')) out.push(full);
  }
  return out;
}

const rel = (f) => path.relative(ROOT, f).split(path.sep).join('/');

/**
 * The integration groups that run a second time on the cluster: runs and replies, sub-plans, crash
 * recovery (a real worker process SIGKILLed), sessions and task trees, through the REST API and
 * through the workflows.
 */
const CLUSTER_TEST_FILES = [
  'test/workflows/deploy-versioning.test.ts',
  'test/api/runs-api.test.ts',
  'test/api/sessions-api.test.ts',
  'test/api/tree-runs-api.test.ts',
  'test/workflows/crash-recovery.test.ts',
  'test/workflows/plan-execution.test.ts',
  'test/workflows/session.test.ts',
];
let files = explicitFiles;
if (files.length === 0 || filters.length > 0) {
  const found = findTestFiles(TEST_DIR).filter((f) => filters.length === 0 || filters.some((s) => rel(f).includes(s)));
  files = [...new Set([...explicitFiles, ...found])];
}
files.sort((a, b) => (rel(a) < rel(b) ? -1 : rel(a) > rel(b) ? 1 : 0));
const wholeSuite = explicitFiles.length === 0 && filters.length === 0;
const withCluster = wholeSuite || clusterOnly || argv.includes('--cluster');
/** The cluster phase's files: all of them for the whole suite, else those selected. */
const clusterFiles = CLUSTER_TEST_FILES.map((f) => path.join(ROOT, f)).filter((f) => wholeSuite || files.includes(f));
if (withCluster && clusterFiles.length === 0) fail(`--cluster: none of the selected files is one of the cluster phase's (${CLUSTER_TEST_FILES.join(' ')})`);
if (files.length === 0) {
  console.error(`[threadline] no test files found (looked for test/**/*.test.ts${filters.length ? ` matching ${filters.map((f) => JSON.stringify(f)).join(' or ')}` : ''})`);
  console.log('0 passed, 0 failed');
  process.exit(1);
}

// ---- dependencies, Temporal CLI, typecheck
ensureDeps();
const temporalBin = await ensureTemporal();
// The cluster's server: built (once, niced) while the typecheck and the first phase run; awaited before the cluster phase.
const clusterTools = withCluster
  ? ensureClusterServer({ lowPriority: !clusterOnly }).then(
      (t) => ({ ok: true, ...t }),
      (err) => ({ ok: false, error: err }),
    )
  : null;

if (skipTypecheck) log('typecheck skipped');
else {
  log('typecheck: tsc --noEmit -p .');
  const r = spawnSync(binPath('tsc'), ['--noEmit', '-p', '.'], { cwd: ROOT, stdio: 'inherit', shell: IS_WINDOWS });
  if (r.status !== 0) {
    console.error('[threadline] typecheck failed; no tests were run');
    console.log('0 passed, 0 failed');
    process.exit(r.status || 1);
  }
  // The guards of eslint.config.mjs (deterministic workflow code, no floating promises), the formatting
  // (.prettierrc.json; `npm run format` fixes it), then the import graph's (.dependency-cruiser.cjs: no
  // circle, no import up a layer).
  for (const [name, args] of [
    ['eslint', ['.']],
    ['prettier', ['--check', '--log-level', 'warn', 'src', 'test', 'bench', 'scripts']],
    ['depcruise', ['src', '--config', '.dependency-cruiser.cjs']],
  ]) {
    log(`lint: ${name} ${args.join(' ')}`);
    const lint = spawnSync(binPath(name), args, { cwd: ROOT, stdio: 'inherit', shell: IS_WINDOWS });
    if (lint.status !== 0) {
      console.error('[threadline] lint failed (see above; `npm run lint` runs it alone); no tests were run');
      console.log('0 passed, 0 failed');
      process.exit(lint.status || 1);
    }
  }
}

// ---- a scratch directory for this run: TAP summary, server log, workflow bundle, DATA_DIR
const runDir = mkdtempSync(path.join(os.tmpdir(), 'threadline-test-'));
const tapFile = path.join(runDir, 'results.tap');
const serverLog = path.join(runDir, 'temporal.log');
const dataDir = path.join(runDir, 'data');
// Per run, so that concurrent runs on different source states never share a bundle.
const bundleFile = path.join(runDir, 'workflow-bundle.js');

const clusterLogDir = path.join(runDir, 'cluster-logs');

let server = null;
let runner = null;
let exiting = false;
/** The cluster phase's Temporal services and scratch databases, once started. */
let cluster = null;
let clusterDrop = null;

async function finish(code, summary) {
  if (exiting) return;
  exiting = true;
  if (runner && runner.exitCode === null) runner.kill('SIGTERM');
  await stopTemporalServers(); // the test server, even if it is still starting
  if (cluster) await cluster.stop();
  if (clusterDrop) await clusterDrop();
  if (code === 0 || (!existsSync(serverLog) && !existsSync(clusterLogDir))) rmSync(runDir, { recursive: true, force: true });
  else {
    // Keep only the server logs of a failed run, for diagnosis.
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(path.join(runDir, 'cluster-data'), { recursive: true, force: true });
    rmSync(tapFile, { force: true });
    rmSync(bundleFile, { force: true });
    if (existsSync(serverLog)) console.error(`[threadline] Temporal server log of this run: ${serverLog}`);
    if (existsSync(clusterLogDir)) console.error(`[threadline] Temporal cluster logs of this run: ${clusterLogDir}`);
  }
  console.log(summary ?? '0 passed, 0 failed');
  process.exit(code);
}
process.on('SIGINT', () => void finish(130));
process.on('SIGTERM', () => void finish(143));

function bundleWorkflows() {
  return new Promise((resolve, reject) => {
    const child = spawn(binPath('tsx'), ['scripts/bundle-workflows.ts', bundleFile], {
      cwd: ROOT,
      stdio: 'inherit',
      shell: IS_WINDOWS,
    });
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`bundling the workflows failed (exit code ${code})`))));
  });
}

// ---- server and bundle, in parallel
try {
  const port = await freePort();
  log(`starting an in-memory Temporal dev server on 127.0.0.1:${port} (log: ${serverLog})`);
  const serverP = startTemporalDev({
    bin: temporalBin,
    port,
    uiPort: null,
    onLine: (line) => appendFileSync(serverLog, `${line}\n`),
  });
  const results = await Promise.allSettled([serverP, bundleWorkflows()]);
  if (results[0].status === 'fulfilled') server = results[0].value;
  const failed = results.find((r) => r.status === 'rejected');
  if (failed) throw failed.reason;
} catch (err) {
  console.error(`[threadline] error: ${err instanceof Error ? err.message : err}`);
  await finish(1);
}
log(`Temporal dev server ready at ${server.address}`);

// ---- the tests
const env = {
  ...process.env,
  TEMPORAL_ADDRESS: server.address,
  TEMPORAL_NAMESPACE: 'default',
  THREADLINE_WORKFLOW_BUNDLE: bundleFile,
  THREADLINE_TEMPORAL_BIN: temporalBin,
  DATA_DIR: dataDir,
};
if (process.env.THREADLINE_TEST_REAL_MODEL !== '1') {
  delete env.OPENAI_API_KEY;
  delete env.OPENAI_BASE_URL;
  delete env.AGENT_MODEL;
  delete env.EMBEDDING_MODEL;
  delete env.EMBEDDING_BASE_URL;
  delete env.EMBEDDING_API_KEY;
}

/** Runs `testFiles` in one `node --test` process; resolves { passed, failed } from its TAP counters (failed includes cancelled). */
async function runTests(testFiles, { env: runEnv, tap, label }) {
  const nodeArgs = [
    '--import',
    'tsx',
    // Ends a test file's process that a leaked handle keeps alive after its tests (see the file).
    '--import',
    './test/helpers/exit-guard.mjs',
    '--test',
    '--test-concurrency=1',
    // Per test file too: the chaos test restarts real processes (≈ 1–2 min, longer on a loaded machine).
    '--test-timeout=480000',
    '--test-reporter=spec',
    '--test-reporter-destination=stdout',
    '--test-reporter=tap',
    `--test-reporter-destination=${tap}`,
    ...testFiles.map(rel),
  ];
  log(`${label}running ${testFiles.length} test file${testFiles.length === 1 ? '' : 's'}: ${testFiles.map((f) => `${label}${rel(f)}`).join(' ')}`);
  runner = spawn(process.execPath, nodeArgs, { cwd: ROOT, env: runEnv, stdio: 'inherit' });
  const exitCode = await new Promise((resolve) => {
    runner.on('error', (err) => {
      console.error(`[threadline] could not start the test runner: ${err.message}`);
      resolve(1);
    });
    runner.on('exit', (code, signal) => resolve(signal ? 1 : (code ?? 1)));
  });
  if (exiting) await new Promise(() => {}); // interrupted: finish() is already shutting down

  // ---- summary from the TAP stream's closing counters (# pass N / # fail N / # cancelled N)
  const tapText = existsSync(tap) ? readFileSync(tap, 'utf8') : '';
  const counter = (name) => {
    const all = [...tapText.matchAll(new RegExp(`^# ${name} (\\d+)$`, 'gm'))];
    const last = all[all.length - 1];
    return last ? Number(last[1]) : null;
  };
  const passed = counter('pass');
  const failedCount = counter('fail');
  const cancelled = counter('cancelled') ?? 0;
  if (passed === null || failedCount === null) {
    console.error(`[threadline] ${label}the test runner printed no summary (did it crash?)`);
    return { passed: 0, failed: 1 };
  }
  // Node counts timed-out and cancelled tests apart from failures; for CI they are failures.
  if (cancelled > 0) console.log(`[threadline] ${label}${cancelled} test(s) cancelled or timed out, counted as failed`);
  const failed = failedCount + cancelled;
  return { passed, failed: exitCode !== 0 && failed === 0 ? 1 : failed };
}

let passed = 0;
let failed = 0;
if (!clusterOnly) {
  const r = await runTests(files, { env, tap: tapFile, label: '' });
  passed += r.passed;
  failed += r.failed;
}
await stopTemporalServers(); // the dev server is done; the cluster gets the machine

// ---- the cluster phase: the chosen integration groups again, on the production-shaped cluster
if (withCluster) {
  const phaseStarted = Date.now();
  const tools = await clusterTools;
  if (!tools.ok) {
    console.error(`[threadline] error: cluster phase: ${tools.error.message}`);
    console.error('[threadline] the cluster phase FAILED (it is part of the suite; it needs Go and the Go module proxy, or a cached build in .tools/)');
    await finish(1, `${passed} passed, ${failed + clusterFiles.length} failed`);
  }
  const id = randomBytes(4).toString('hex');
  const databases = { temporal: `threadline_test_${id}_temporal`, visibility: `threadline_test_${id}_visibility` };
  try {
    clusterDrop = () => dropDatabases({ sqlBin: tools.sqlBin, databases });
    await setupSchemas({ ...tools, databases });
    cluster = await startClusterTemporal({
      serverBin: tools.serverBin,
      temporalBin,
      logDir: clusterLogDir,
      databases,
      ports: await freePorts(),
      // A light load: at most 28 connections, so that another suite's cluster and its tests fit beside it.
      connectionPools: { persistence: 5, persistenceIdle: 2, visibility: 2 },
    });
  } catch (err) {
    console.error(`[threadline] error: cluster phase: the cluster did not start: ${err.message}`);
    await finish(1, `${passed} passed, ${failed + clusterFiles.length} failed`);
  }
  log(
    `cluster: Temporal ${cluster.address} (frontend, history, matching, worker; 16 shards on PostgreSQL) up in ${Math.round((Date.now() - phaseStarted) / 1000)} s${tools.buildMs ? ` (the server's build took ${Math.round(tools.buildMs / 1000)} s)` : ''}`,
  );
  const r = await runTests(clusterFiles, {
    env: { ...env, TEMPORAL_ADDRESS: cluster.address, DATA_DIR: path.join(runDir, 'cluster-data') },
    tap: path.join(runDir, 'cluster-results.tap'),
    label: 'cluster: ',
  });
  log(`cluster: ${r.passed} passed, ${r.failed} failed in ${Math.round((Date.now() - phaseStarted) / 1000)} s`);
  passed += r.passed;
  failed += r.failed;
}
await finish(failed > 0 ? 1 : 0, `${passed} passed, ${failed} failed`);
