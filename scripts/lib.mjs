// Shared helpers for the launcher scripts (npm start / test / temporal / ensure).
// Plain Node, built-ins only: these run before `npm ci` has installed anything.
import { spawn, spawnSync, execFile } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const IS_WINDOWS = process.platform === 'win32';

export const TEMPORAL_CLI_VERSION = '1.5.1';
export const TEMPORAL_CLI_MODULE = 'github.com/temporalio/cli/cmd/temporal';
export const TOOLS_BIN = path.join(ROOT, '.tools', 'bin');
export const TEMPORAL_BIN = path.join(TOOLS_BIN, IS_WINDOWS ? 'temporal.exe' : 'temporal');

/** Search attributes the app writes (all Keyword). */
export const SEARCH_ATTRIBUTES = ['ThreadlineUserId', 'ThreadlineStatus', 'ThreadlineSessionId'];

/**
 * Node flags of the worker (as `npm run worker`, the Dockerfile and docker-compose.yml also start it):
 * V8's heap bound, and its young generation at half its default. Without the bound V8 lets garbage pile
 * up toward a limit sized for the machine (≈ 4 GB on 24 GiB) before it collects; with it the 1,000-run
 * benchmark's peak fell from 557–761 to ≈ 465 MB, while the worker's live heap there was ≈ 100 MB. Each
 * of the worker's two V8 heaps (the main thread's, the workflow thread's) kept 32 MB of semi-spaces
 * committed; 8 MB ones cost no CPU there and took ≈ 30 MB off the peak (docs/operations.md "Worker memory").
 */
export const WORKER_NODE_FLAGS = Object.freeze(['--max-old-space-size=1024', '--max-semi-space-size=8']);

/**
 * Environment a worker process starts with, unless already set: glibc's malloc keeps one arena per thread
 * that allocates (V8's GC helpers, the core's tokio threads, libuv's pool), each with its own free space;
 * two arenas took ≈ 30 MB off the benchmark's peak at the same CPU. It must be set before the process
 * starts: glibc reads it once.
 */
export const WORKER_ENV_DEFAULTS = Object.freeze({ MALLOC_ARENA_MAX: '2' });

/** Every file under `dir`, as paths. */
function filesUnder(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    return entry.isDirectory() ? filesUnder(full) : [full];
  });
}

/**
 * Compiles src/ to dist/ with esbuild (each file on its own, as tsx would at run time; source maps
 * without the sources' text) and copies its other files (the inspector's pages), so the worker and the
 * API run as plain JavaScript: no TypeScript loader in their processes (≈ 30–45 MB less RSS for the
 * worker, bench/results/HISTORY.md). About a second; done at every start, so dist/ never lags src/.
 * Only files whose content changed are written, each to a temporary name and renamed over the old one:
 * a process already running from dist/, or starting from it while another build runs (`npm run api`
 * beside `npm run worker`), never reads a file half written; nothing is removed.
 */
export async function buildDist() {
  const { build } = await import('esbuild');
  const src = path.join(ROOT, 'src');
  const outdir = path.join(ROOT, 'dist');
  const files = filesUnder(src);
  const { outputFiles } = await build({
    entryPoints: files.filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts')),
    outdir,
    outbase: src,
    format: 'cjs',
    platform: 'node',
    target: 'node20',
    sourcemap: true,
    sourcesContent: false,
    logLevel: 'error',
    write: false,
  });
  const put = (to, contents) => {
    try {
      if (readFileSync(to).equals(contents)) return;
    } catch {
      // not there yet
    }
    mkdirSync(path.dirname(to), { recursive: true });
    const tmp = `${to}.${process.pid}.tmp`;
    writeFileSync(tmp, contents);
    renameSync(tmp, to);
  };
  for (const file of outputFiles) put(file.path, Buffer.from(file.contents));
  for (const file of files.filter((f) => !f.endsWith('.ts'))) put(path.join(outdir, path.relative(src, file)), readFileSync(file));
}

/**
 * Stack traces mapped back to the TypeScript sources, and only those: the `--require`d hook keeps
 * Node from reading the maps of packages under node_modules, in every thread (src/telemetry/own-source-maps.ts).
 */
export const SOURCE_MAP_FLAGS = Object.freeze(['--enable-source-maps', '--require=./dist/telemetry/own-source-maps.js']);

/**
 * Arguments for `process.execPath` to run a built entry (buildDist first; `entry` as under src/, without
 * its extension): its flags, and SOURCE_MAP_FLAGS.
 */
export const nodeDist = (entry, flags = []) => [...flags, ...SOURCE_MAP_FLAGS, `dist/${entry}.js`];

/** The worker, built: `nodeDist('worker', WORKER_NODE_FLAGS)`. */
export const nodeWorker = () => nodeDist('worker', WORKER_NODE_FLAGS);

/** Secrets only the REST API uses; a worker runs tools and MCP servers a model chooses, and never gets them. */
export const API_ONLY_SECRETS = Object.freeze(['THREADLINE_ADMIN_KEY']);
/** `env` as a worker process gets it: without the API's secrets, with WORKER_ENV_DEFAULTS where it sets none. */
export const workerEnv = (env) => ({ ...WORKER_ENV_DEFAULTS, ...Object.fromEntries(Object.entries(env).filter(([name]) => !API_ONLY_SECRETS.includes(name))) });

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

const useColor = process.stdout.isTTY && !process.env.NO_COLOR;
export const color = (code, s) => (useColor ? `\x1b[${code}m${s}\x1b[0m` : s);
export const bold = (s) => color('1', s);
export const dim = (s) => color('2', s);

export function log(msg) {
  console.log(`${color('36', '[threadline]')} ${msg}`);
}

export function fail(msg, code = 1) {
  console.error(`${color('31', '[threadline] error:')} ${msg}`);
  process.exit(code);
}

/** Path of an executable installed in node_modules/.bin. */
export function binPath(name) {
  return path.join(ROOT, 'node_modules', '.bin', IS_WINDOWS ? `${name}.cmd` : name);
}

function formatElapsed(ms) {
  const s = Math.round(ms / 1000);
  return s < 60 ? `${s}s` : `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
}

// ---------------------------------------------------------------------------
// npm dependencies

/**
 * Runs `npm ci` in `dir` (the project by default) when its node_modules is missing or older than its
 * package-lock.json. A failed install exits, unless `optional`: then it warns and returns false.
 */
export function ensureDeps({ dir = ROOT, what = 'npm dependencies', optional = false } = {}) {
  const lock = path.join(dir, 'package-lock.json');
  const installedLock = path.join(dir, 'node_modules', '.package-lock.json');
  let reason = null;
  if (!existsSync(path.join(dir, 'node_modules'))) reason = 'node_modules is missing';
  else if (!existsSync(installedLock)) reason = 'node_modules is incomplete';
  else if (existsSync(lock) && statSync(lock).mtimeMs > statSync(installedLock).mtimeMs) reason = 'package-lock.json changed since the last install';
  if (!reason) return true;
  const args = existsSync(lock) ? ['ci', '--no-audit', '--no-fund'] : ['install', '--no-audit', '--no-fund'];
  const where = dir === ROOT ? '' : ` in ${path.relative(ROOT, dir)}`;
  log(`installing ${what}${where} (${reason}): npm ${args.join(' ')}`);
  const r = spawnSync('npm', args, { cwd: dir, stdio: 'inherit', shell: IS_WINDOWS });
  let problem = null;
  if (r.error) problem = `could not run npm: ${r.error.message}`;
  else if (r.status !== 0) {
    problem =
      `npm ${args[0]}${where} failed (exit code ${r.status}).` +
      (args[0] === 'ci' ? ' If it says package.json and package-lock.json are out of sync, run `npm install` once to update the lock file.' : '');
  }
  if (!problem) return true;
  if (!optional) fail(problem);
  console.error(`${color('33', '[threadline] warning:')} ${problem}`);
  return false;
}

// ---------------------------------------------------------------------------
// Temporal CLI (built from the Go module proxy into .tools/bin)

function run(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', timeout: 30_000, ...opts });
  return { ok: !r.error && r.status === 0, out: `${r.stdout ?? ''}${r.stderr ?? ''}`.trim(), error: r.error };
}

/** The Go toolchain on PATH (or at /usr/local/go, or $GOROOT): { go, version }, or null. */
export function findGo() {
  const candidates = ['go', ...(IS_WINDOWS ? [] : ['/usr/local/go/bin/go'])];
  if (process.env.GOROOT) candidates.push(path.join(process.env.GOROOT, 'bin', IS_WINDOWS ? 'go.exe' : 'go'));
  for (const go of candidates) {
    const r = run(go, ['version']);
    if (r.ok) return { go, version: r.out };
  }
  return null;
}

/** True when `bin` is Temporal CLI v1.5.1 (by its --version, or by the Go build info of a `go install` build). */
function isPinnedCli(bin, go) {
  const v = run(bin, ['--version']);
  if (!v.ok) return false;
  if (new RegExp(`\\bversion ${TEMPORAL_CLI_VERSION.replace(/\./g, '\\.')}\\b`).test(v.out)) return true;
  // A plain `go install` (without -ldflags -X ...Version=) reports 0.0.0-DEV; ask Go which module it is.
  if (go && /0\.0\.0-DEV/.test(v.out)) {
    const m = run(go.go, ['version', '-m', bin]);
    return m.ok && new RegExp(`\\bmod\\s+github\\.com/temporalio/cli\\s+v${TEMPORAL_CLI_VERSION.replace(/\./g, '\\.')}\\b`).test(m.out);
  }
  return false;
}

/**
 * Returns the path of a Temporal CLI v1.5.1, building it with `go install` on first use.
 * THREADLINE_TEMPORAL_BIN, when set, names a binary to use instead.
 */
export async function ensureTemporal() {
  const override = process.env.THREADLINE_TEMPORAL_BIN;
  if (override) {
    if (!run(override, ['--version']).ok) fail(`THREADLINE_TEMPORAL_BIN=${override} does not run (\`${override} --version\` failed)`);
    return override;
  }
  const go = findGo();
  if (existsSync(TEMPORAL_BIN) && isPinnedCli(TEMPORAL_BIN, go)) return TEMPORAL_BIN;

  if (!go) {
    fail(
      [
        `the Temporal CLI v${TEMPORAL_CLI_VERSION} is not built yet (${path.relative(ROOT, TEMPORAL_BIN)}), and building it needs Go.`,
        '  Install Go 1.25 or newer from https://go.dev/dl/ (or `brew install go`; any Go >= 1.21 also works, it fetches',
        '  the newer toolchain itself — older distribution packages do not), make sure `go` is on PATH, and run this again,',
        `  or put a Temporal CLI v${TEMPORAL_CLI_VERSION} binary at ${TEMPORAL_BIN},`,
        '  or set TEMPORAL_ADDRESS to use a Temporal server you already run.',
      ].join('\n'),
    );
  }

  const target = `${TEMPORAL_CLI_MODULE}@v${TEMPORAL_CLI_VERSION}`;
  try {
    await goInstall(go, {
      what: `Temporal CLI v${TEMPORAL_CLI_VERSION}`,
      targets: [target],
      gobin: TOOLS_BIN,
      ldflags: `-s -w -X github.com/temporalio/cli/temporalcli.Version=${TEMPORAL_CLI_VERSION}`,
      produces: [TEMPORAL_BIN],
    });
  } catch (err) {
    fail(err.message);
  }
  if (!isPinnedCli(TEMPORAL_BIN, go)) fail(`built ${TEMPORAL_BIN}, but it does not report version ${TEMPORAL_CLI_VERSION}`);
  return TEMPORAL_BIN;
}

/**
 * `GOBIN=gobin go install -ldflags=… targets…` (targets of one module, at one version), with a progress
 * line every 15 s. Throws when the build fails or does not produce every path of `produces`.
 * lowPriority: nice the build (its compilers inherit it), for a build beside running tests.
 * Returns the build's wall time in ms.
 */
export async function goInstall(go, { what, targets, gobin, ldflags = '-s -w', produces, lowPriority = false }) {
  mkdirSync(gobin, { recursive: true });
  log(`building ${what} from the Go module proxy (first run only, a few minutes)…`);
  log(dim(`  ${go.version}; GOBIN=${path.relative(ROOT, gobin)} go install ${targets.join(' ')}`));
  const args = ['install', '-v', `-ldflags=${ldflags}`, ...targets];
  const env = { ...process.env, GOBIN: gobin, CGO_ENABLED: process.env.CGO_ENABLED ?? '0' };
  const started = Date.now();
  const tail = [];
  let downloads = 0;
  let compiled = 0;
  const child = spawn(go.go, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  if (lowPriority && child.pid) {
    try {
      os.setPriority(child.pid, 15);
    } catch {}
  }
  for (const stream of [child.stdout, child.stderr]) {
    readline.createInterface({ input: stream }).on('line', (line) => {
      if (line.startsWith('go: downloading')) downloads++;
      else if (/^[\w.\-/~]+$/.test(line)) compiled++; // `-v` prints one package path per line
      tail.push(line);
      if (tail.length > 40) tail.shift();
    });
  }
  // A niced build runs beside other output (npm test): no progress lines in the middle of it.
  const ticker = setInterval(() => {
    if (lowPriority) return;
    log(`  …still building ${what} (${formatElapsed(Date.now() - started)} elapsed, ${downloads} modules downloaded, ${compiled} packages compiled)`);
  }, 15_000);
  const code = await new Promise((resolve) => {
    child.on('error', (err) => {
      tail.push(String(err));
      resolve(-1);
    });
    child.on('close', (c) => resolve(c ?? -1));
  });
  clearInterval(ticker);
  const missing = produces.filter((p) => !existsSync(p));
  if (code !== 0 || missing.length > 0) {
    throw new Error(`building ${what} failed (go install exit code ${code}${missing.length ? `; missing ${missing.join(', ')}` : ''}). Last output:\n${tail.join('\n')}`);
  }
  const ms = Date.now() - started;
  log(`built ${what} in ${formatElapsed(ms)} → ${produces.map((p) => path.relative(ROOT, p)).join(', ')}`);
  return ms;
}

// ---------------------------------------------------------------------------
// Networking

/** A TCP port that is free on 127.0.0.1 right now. */
export function freePort(host = '127.0.0.1') {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, host, () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

/** True when something accepts TCP connections on host:port. */
export function canConnect(host, port, timeoutMs = 1000) {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    const done = (ok) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

/** Waits until host:port accepts TCP connections; rejects after timeoutMs or when shouldAbort() returns a reason. */
export async function waitForTcp(host, port, { timeoutMs = 30_000, intervalMs = 250, shouldAbort } = {}) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const reason = shouldAbort?.();
    if (reason) throw new Error(reason);
    if (await canConnect(host, port)) return;
    if (Date.now() > deadline) throw new Error(`nothing accepted TCP connections on ${host}:${port} within ${timeoutMs / 1000}s`);
    await sleep(intervalMs);
  }
}

/** Splits "host:port" (also "[::1]:port"); returns { host, port }. */
export function parseHostPort(address, defaultPort = 7233) {
  const m = /^\[([^\]]+)\](?::(\d+))?$/.exec(address) ?? /^([^:]+)(?::(\d+))?$/.exec(address);
  if (!m) return { host: address, port: defaultPort };
  return { host: m[1], port: m[2] ? Number(m[2]) : defaultPort };
}

// ---------------------------------------------------------------------------
// Child processes

/** Forwards a child's stdout/stderr line by line, each line prefixed. */
export function pipeLines(child, prefix, { onLine, format = (line) => line } = {}) {
  const forward = (stream, out) => {
    if (!stream) return;
    readline.createInterface({ input: stream, crlfDelay: Infinity }).on('line', (line) => {
      if (onLine) onLine(line);
      else out.write(`${prefix} ${format(line)}\n`);
    });
  };
  forward(child.stdout, process.stdout);
  forward(child.stderr, process.stderr);
}

const PINO_LEVELS = { 10: 'trace', 20: 'debug', 30: 'info', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };
const PINO_BOOKKEEPING = new Set(['level', 'time', 'pid', 'hostname', 'name', 'msg', 'sdkComponent', 'taskToken', 'namespace', 'isLocal']);

/**
 * A pino JSON line (the worker's and the API's log) as one readable line for a person at a
 * terminal: `info  worker started  taskQueue=threadline …`; anything else as it is.
 */
export function readableLogLine(line) {
  if (!line.startsWith('{')) return line;
  let entry;
  try {
    entry = JSON.parse(line);
  } catch {
    return line;
  }
  if (typeof entry !== 'object' || entry === null || typeof entry.msg !== 'string' || typeof entry.level !== 'number') return line;
  const fields = Object.entries(entry)
    .filter(([k, v]) => !PINO_BOOKKEEPING.has(k) && v !== undefined && v !== null)
    .map(([k, v]) => {
      const text = typeof v === 'string' ? v : JSON.stringify(v);
      return `${k}=${text.length > 200 ? `${text.slice(0, 200)}…` : text}`;
    });
  return [PINO_LEVELS[entry.level] ?? String(entry.level), entry.msg, ...fields].join('  ');
}

/**
 * Sends `signal`, then SIGKILL after graceMs; resolves when the process has exited.
 * group: the child was spawned with `detached: true` (its own process group, POSIX only);
 * signal the whole group so that grandchildren (tsx → node) are included.
 */
/**
 * Appends a child's stdout and stderr to `logFile`. Two sources into one file: neither may end it
 * (pipe's default), or the other's next line is a write after end that crashes this process; the file
 * ends once the child has closed both.
 */
export function appendOutput(child, logFile) {
  const out = createWriteStream(logFile, { flags: 'a' });
  child.stdout.pipe(out, { end: false });
  child.stderr.pipe(out, { end: false });
  child.on('close', () => out.end());
}

export function stopProcess(child, { signal = 'SIGTERM', graceMs = 10_000, group = false } = {}) {
  if (!child || child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  const send = (sig) => {
    try {
      if (group && !IS_WINDOWS) process.kill(-child.pid, sig);
      else child.kill(sig);
      return true;
    } catch {
      return false;
    }
  };
  return new Promise((resolve) => {
    const timer = setTimeout(() => send('SIGKILL'), graceMs);
    child.once('exit', () => {
      clearTimeout(timer);
      if (group) send('SIGKILL'); // anything of the group left behind
      resolve();
    });
    if (!send(signal)) {
      clearTimeout(timer);
      resolve();
    }
  });
}

/** Runs a command without blocking; resolves { ok, stdout, out (stdout+stderr) }, never rejects. */
export function execFileP(cmd, args, timeoutMs = 15_000) {
  return new Promise((resolve) => {
    execFile(cmd, args, { timeout: timeoutMs, encoding: 'utf8' }, (err, stdout, stderr) => resolve({ ok: !err, stdout: stdout ?? '', out: `${stdout ?? ''}${stderr ?? ''}`.trim() }));
  });
}

/** Registers any of SEARCH_ATTRIBUTES missing on the namespace (an existing SQLite file may predate one). */
export async function ensureSearchAttributes(bin, address, namespace = 'default') {
  const common = ['--address', address, '--namespace', namespace];
  const list = await execFileP(bin, ['operator', 'search-attribute', 'list', ...common]);
  if (!list.ok) throw new Error(`temporal operator search-attribute list failed: ${list.out}`);
  for (const name of SEARCH_ATTRIBUTES) {
    if (new RegExp(`\\b${name}\\b`).test(list.out)) continue;
    const r = await execFileP(bin, ['operator', 'search-attribute', 'create', ...common, '--name', name, '--type', 'Keyword']);
    if (!r.ok && !/already exists/i.test(r.out)) throw new Error(`could not create search attribute ${name}: ${r.out}`);
  }
}

/** stop() of each dev server started by startTemporalDev and still running (including ones still starting). */
const liveServers = new Set();

/** Stops every dev server this process started, even one still starting up (for signal handlers). */
export function stopTemporalServers() {
  return Promise.all([...liveServers].map((stop) => stop()));
}

/**
 * Dynamic config of every dev server Threadline starts (npm start, npm run temporal, npm test,
 * npm run bench), for latency near the engine's floor. The dev server has one history shard, and
 * each of its queue readers may read the shard's queue at most `history.*ProcessorMaxPollRPS` times
 * a second (default 20, meant to protect a shared database in a many-shard cluster). Every workflow
 * task and activity task passes the transfer queue, so at 20 reads/s a task waits ≈ 38 ms before
 * it is even loaded: most of a step's ≈ 100 ms. Measured from the server's own metrics
 * (`task_latency_load`; `npm run bench` reports them) — docs/operations.md "Server latency settings".
 * Timer (activity timeouts, retries' back-off, `sleep`), visibility (list endpoints) and outbound
 * (Nexus, callbacks) readers share the same limit and get the same setting. A cluster has many
 * shards, each with its own reader, so the limit binds less there; the production-shaped cluster
 * (`npm run cluster`, deploy/temporal/dynamicconfig.yaml) still applies the same four values.
 */
export const LOW_LATENCY_DYNAMIC_CONFIG = Object.freeze({
  'history.transferProcessorMaxPollRPS': 10000,
  'history.timerProcessorMaxPollRPS': 10000,
  'history.visibilityProcessorMaxPollRPS': 10000,
  'history.outboundProcessorMaxPollRPS': 10000,
});

/**
 * SQLite settings of a dev server that keeps its data in a file (`npm start`, `npm run temporal`, chaos):
 * a write-ahead log, synced to disk at its checkpoints. SQLite's default (a rollback journal,
 * `synchronous=FULL`) syncs the file several times per transaction, and the server commits one per
 * workflow task: a session turn took 91–98 ms against 78–84 ms with these settings, and the server's
 * CPU per turn fell from 56–64 to 48–51 ms (docs/operations.md "Server latency settings"). A killed server loses no
 * committed transaction (the chaos run SIGKILLs it); a power cut or an OS crash may lose the last ones,
 * never the file.
 */
export const SQLITE_FILE_PRAGMAS = Object.freeze({ journal_mode: 'wal', synchronous: 'normal' });

/** `--dynamic-config-value KEY=VALUE` arguments for a dev server: the low-latency set, then `overrides` (KEY=VALUE strings; later wins). */
export function dynamicConfigArgs(overrides = [], { lowLatency = true } = {}) {
  const pairs = [...(lowLatency ? Object.entries(LOW_LATENCY_DYNAMIC_CONFIG).map(([k, v]) => `${k}=${JSON.stringify(v)}`) : []), ...overrides];
  return pairs.flatMap((pair) => ['--dynamic-config-value', pair]);
}

/**
 * Starts `temporal server start-dev` and waits until it serves the namespace.
 * uiPort: a number, or null for --headless. dbFile: SQLite file (with SQLITE_FILE_PRAGMAS), or omitted for in-memory.
 * onLine: receives each output line (default: printed with logPrefix).
 * dynamicConfig: KEY=VALUE strings applied after LOW_LATENCY_DYNAMIC_CONFIG (lowLatency: false leaves the server's defaults).
 * metricsPort: where the server serves Prometheus metrics (none when omitted).
 * extraArgs: appended to the command line.
 * Returns { process, address, uiUrl, metricsUrl, stop(), output() }.
 */
export async function startTemporalDev({
  bin = TEMPORAL_BIN,
  dbFile,
  port = 7233,
  uiPort = 8233,
  namespace = 'default',
  logPrefix = '[temporal]',
  onLine,
  dynamicConfig = [],
  lowLatency = true,
  metricsPort,
  extraArgs = [],
  timeoutMs = 90_000,
} = {}) {
  const host = '127.0.0.1';
  const address = `${host}:${port}`;
  if (await canConnect(host, port)) {
    throw new Error(`something is already listening on ${address} (a Temporal server left over from an earlier run?). ` + `Stop it, or set TEMPORAL_ADDRESS=${address} to use it.`);
  }
  if (uiPort != null && (await canConnect(host, uiPort))) {
    throw new Error(`the Temporal Web UI port ${uiPort} is already in use; set TEMPORAL_UI_PORT to another port.`);
  }
  const args = ['server', 'start-dev', '--ip', host, '--port', String(port), '--namespace', 'default'];
  if (namespace !== 'default') args.push('--namespace', namespace);
  if (uiPort == null) args.push('--headless');
  else args.push('--ui-port', String(uiPort));
  for (const name of SEARCH_ATTRIBUTES) args.push('--search-attribute', `${name}=Keyword`);
  if (dbFile) {
    mkdirSync(path.dirname(dbFile), { recursive: true, mode: 0o700 });
    args.push('--db-filename', dbFile, ...Object.entries(SQLITE_FILE_PRAGMAS).flatMap(([k, v]) => ['--sqlite-pragma', `${k}=${v}`]));
  }
  if (metricsPort != null) args.push('--metrics-port', String(metricsPort));
  args.push('--log-level', 'warn', ...dynamicConfigArgs(dynamicConfig, { lowLatency }), ...extraArgs);

  const lastLines = [];
  let stopping = false; // the server logs a burst of harmless warnings while shutting down; don't forward them
  const stop = () => {
    stopping = true;
    return stopProcess(child, { signal: 'SIGTERM', graceMs: 10_000, group: true });
  };
  // Own process group (POSIX): a terminal's Ctrl-C reaches only our script, which stops the
  // server last, after the processes that use it.
  const child = spawn(bin, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], detached: !IS_WINDOWS });
  liveServers.add(stop);
  let exited = null;
  child.on('exit', (code, signal) => {
    liveServers.delete(stop);
    exited = signal ? `signal ${signal}` : `exit code ${code}`;
  });
  child.on('error', (err) => {
    exited = `error: ${err.message}`;
  });
  pipeLines(child, logPrefix, {
    onLine: (line) => {
      lastLines.push(line);
      if (lastLines.length > 60) lastLines.shift();
      if (stopping) return;
      if (onLine) onLine(line);
      else process.stdout.write(`${logPrefix} ${line}\n`);
    },
  });

  const output = () => lastLines.join('\n');
  const failStart = async (why) => {
    await stop();
    const out = output();
    throw new Error(`the Temporal dev server did not start: ${why}${out ? `\n--- its last output ---\n${out}` : ''}`);
  };

  const deadline = Date.now() + timeoutMs;
  const abortReason = () => (exited ? `it exited (${exited})` : null);
  try {
    await waitForTcp(host, port, { timeoutMs, shouldAbort: abortReason });
  } catch (err) {
    await failStart(err.message);
  }
  // The port opens before the namespace is usable; wait until it can be described.
  let last = '';
  for (;;) {
    if (exited) await failStart(`it exited (${exited})`);
    const r = await execFileP(bin, ['operator', 'namespace', 'describe', '--address', address, namespace], 10_000);
    if (r.ok) break;
    last = r.out;
    if (Date.now() > deadline) await failStart(`namespace ${namespace} not ready within ${timeoutMs / 1000}s: ${last}`);
    await sleep(300);
  }
  try {
    await ensureSearchAttributes(bin, address, namespace);
  } catch (err) {
    await failStart(err.message);
  }
  const metricsUrl = metricsPort == null ? null : `http://${host}:${metricsPort}/metrics`;
  return { process: child, address, uiUrl: uiPort == null ? null : `http://${host}:${uiPort}`, metricsUrl, stop, output };
}
