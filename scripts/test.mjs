// `npm test` — typecheck and lint, then every test/**/*.test.ts against a fresh in-memory Temporal dev server.
//
//   npm test                         all tests
//   npm test -- api                  only test files whose path contains "api" (several filters: any of them)
//   npm test -- test/x/y.test.ts     exactly these files
//   npm test -- --skip-typecheck     skip `tsc --noEmit` and the lint (also THREADLINE_SKIP_TYPECHECK=1)
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
import { IS_WINDOWS, ROOT, binPath, ensureDeps, ensureTemporal, fail, freePort, log, startTemporalDev, stopTemporalServers } from './lib.mjs';

const TEST_DIR = path.join(ROOT, 'test');

// ---- arguments
const argv = process.argv.slice(2);
const skipTypecheck = argv.includes('--skip-typecheck') || process.env.THREADLINE_SKIP_TYPECHECK === '1';
const explicitFiles = [];
const filters = [];
for (const arg of argv) {
  if (arg === '--skip-typecheck') continue;
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
let files = explicitFiles;
if (files.length === 0 || filters.length > 0) {
  const found = findTestFiles(TEST_DIR).filter((f) => filters.length === 0 || filters.some((s) => rel(f).includes(s)));
  files = [...new Set([...explicitFiles, ...found])];
}
files.sort((a, b) => (rel(a) < rel(b) ? -1 : rel(a) > rel(b) ? 1 : 0));
if (files.length === 0) {
  console.error(`[threadline] no test files found (looked for test/**/*.test.ts${filters.length ? ` matching ${filters.map((f) => JSON.stringify(f)).join(' or ')}` : ''})`);
  console.log('0 passed, 0 failed');
  process.exit(1);
}

// ---- dependencies, Temporal CLI, typecheck
ensureDeps();
const temporalBin = await ensureTemporal();

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

let server = null;
let runner = null;
let exiting = false;

async function finish(code, summary) {
  if (exiting) return;
  exiting = true;
  if (runner && runner.exitCode === null) runner.kill('SIGTERM');
  await stopTemporalServers(); // the test server, even if it is still starting
  if (code === 0 || !existsSync(serverLog)) rmSync(runDir, { recursive: true, force: true });
  else {
    // Keep only the server log of a failed run, for diagnosis.
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(tapFile, { force: true });
    rmSync(bundleFile, { force: true });
    console.error(`[threadline] Temporal server log of this run: ${serverLog}`);
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

const nodeArgs = [
  '--import',
  'tsx',
  '--test',
  '--test-concurrency=1',
  // Per test file too: the chaos test restarts real processes (≈ 1–2 min, longer on a loaded machine).
  '--test-timeout=480000',
  '--test-reporter=spec',
  '--test-reporter-destination=stdout',
  '--test-reporter=tap',
  `--test-reporter-destination=${tapFile}`,
  ...files.map(rel),
];
log(`running ${files.length} test file${files.length === 1 ? '' : 's'}: ${files.map(rel).join(' ')}`);
runner = spawn(process.execPath, nodeArgs, { cwd: ROOT, env, stdio: 'inherit' });
const exitCode = await new Promise((resolve) => {
  runner.on('error', (err) => {
    console.error(`[threadline] could not start the test runner: ${err.message}`);
    resolve(1);
  });
  runner.on('exit', (code, signal) => resolve(signal ? 1 : (code ?? 1)));
});
if (exiting) await new Promise(() => {}); // interrupted: finish() is already shutting down

// ---- summary from the TAP stream's closing counters (# pass N / # fail N / # cancelled N)
const tap = existsSync(tapFile) ? readFileSync(tapFile, 'utf8') : '';
const counter = (name) => {
  const all = [...tap.matchAll(new RegExp(`^# ${name} (\\d+)$`, 'gm'))];
  const last = all[all.length - 1];
  return last ? Number(last[1]) : null;
};
const passed = counter('pass');
const failedCount = counter('fail');
const cancelled = counter('cancelled') ?? 0;
if (passed === null || failedCount === null) {
  console.error('[threadline] the test runner printed no summary (did it crash?)');
  await finish(exitCode || 1, '0 passed, 0 failed');
}
// Node counts timed-out and cancelled tests apart from failures; for CI they are failures.
if (cancelled > 0) console.log(`[threadline] ${cancelled} test(s) cancelled or timed out, counted as failed`);
const totalFailed = failedCount + cancelled;
await finish(exitCode === 0 && totalFailed > 0 ? 1 : exitCode, `${passed} passed, ${totalFailed} failed`);
