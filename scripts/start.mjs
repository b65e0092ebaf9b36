// `npm start` — everything on one machine, nothing else needed:
// npm dependencies and the Temporal CLI (built on first run), the Temporal dev server (SQLite under
// DATA_DIR, so runs survive restarts; skipped when TEMPORAL_ADDRESS is set), the worker and the REST API.
import { spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import {
  IS_WINDOWS,
  buildDist,
  nodeDist,
  nodeWorker,
  ROOT,
  bold,
  canConnect,
  color,
  ensureDeps,
  ensureTemporal,
  execFileP,
  fail,
  log,
  pipeLines,
  readableLogLine,
  sleep,
  startTemporalDev,
  stopProcess,
  stopTemporalServers,
  workerEnv,
} from './lib.mjs';

const env = process.env;
const port = Number(env.PORT || 3000);
const host = env.HOST || '127.0.0.1';
const uiPort = Number(env.TEMPORAL_UI_PORT || 8233);
const namespace = env.TEMPORAL_NAMESPACE || 'default';
const taskQueue = env.TASK_QUEUE || 'threadline';
const dataDir = env.DATA_DIR ? path.resolve(env.DATA_DIR) : path.join(ROOT, 'data');
const external = env.TEMPORAL_ADDRESS?.trim() || null;
for (const [name, value] of [
  ['PORT', port],
  ['TEMPORAL_UI_PORT', uiPort],
]) {
  if (!Number.isInteger(value) || value <= 0 || value > 65535) fail(`${name}=${env[name]} is not a port number`);
}
// Where to reach the API from this machine (a wildcard bind address is reachable on loopback).
const probeHost = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '::1' : host;
const apiUrl = `http://${probeHost.includes(':') ? `[${probeHost}]` : probeHost}:${port}`;

ensureDeps();
// The CLI is only needed to run our own server; with TEMPORAL_ADDRESS set there is nothing to build.
const temporalBin = external ? null : await ensureTemporal();
// What the processes started below create (Temporal's SQLite file, logs, Threadline's stores) is this user's alone.
process.umask(0o077);
mkdirSync(dataDir, { recursive: true, mode: 0o700 });
if (await canConnect(probeHost, port)) fail(`port ${port} (${apiUrl}) is already in use; stop what is using it or set PORT`);

/** name → ChildProcess of the worker and the API (stopped together, before the server). */
const children = new Map();
let server = null;
let stopping = false;

async function shutdown(code, why) {
  if (stopping) return;
  stopping = true;
  if (why) log(why);
  // API and worker first (the worker drains while the server is still up), then the server.
  await Promise.all([...children.values()].map((child) => stopProcess(child, { signal: 'SIGTERM', graceMs: 15_000, group: true })));
  if (server) log('stopping the Temporal dev server…');
  await stopTemporalServers(); // also one that is still starting
  process.exit(code);
}
let interrupts = 0;
// A requested stop that completes cleanly exits 0; an unexpected child exit exits 1.
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(signal, () => {
    if (++interrupts > 1 && signal === 'SIGINT') {
      // Second Ctrl-C: don't wait for graceful shutdown.
      for (const child of [...children.values(), server?.process]) {
        try {
          if (child?.pid) process.kill(IS_WINDOWS ? child.pid : -child.pid, 'SIGKILL');
        } catch {}
      }
      process.exit(130);
    }
    void shutdown(0, `${signal}: stopping (Ctrl-C again to force)…`);
  });
}

let temporalAddress = external;
let uiUrl = env.TEMPORAL_UI_URL || null;
if (!external) {
  const dbFile = path.join(dataDir, 'temporal.sqlite');
  log(`starting the Temporal dev server (data: ${path.relative(process.cwd(), dbFile) || dbFile})…`);
  try {
    server = await startTemporalDev({
      bin: temporalBin,
      dbFile,
      port: 7233,
      uiPort,
      namespace,
      logPrefix: color('35', '[temporal]'),
      // Encrypted payloads: the Web UI decodes them through the API's codec endpoint.
      extraArgs: env.THREADLINE_ENCRYPTION_KEY ? ['--ui-codec-endpoint', `http://${host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host}:${port}/v1/codec`] : [],
    });
  } catch (err) {
    if (!stopping) fail(err.message);
  }
  if (stopping) await new Promise(() => {}); // interrupted while starting; shutdown() exits
  temporalAddress = server.address;
  uiUrl ||= server.uiUrl;
  server.process.on('exit', (code, signal) => {
    if (!stopping) void shutdown(1, `the Temporal dev server exited unexpectedly (${signal ? `signal ${signal}` : `exit code ${code}`}); stopping`);
  });
}

const childEnv = {
  ...env,
  TEMPORAL_ADDRESS: temporalAddress,
  TEMPORAL_NAMESPACE: namespace,
  DATA_DIR: dataDir,
  PORT: String(port),
  HOST: host,
  ...(uiUrl ? { TEMPORAL_UI_URL: uiUrl } : {}),
};

/** Starts node with `args` (nodeWorker or nodeDist: an entry built in dist/) as the child `name`. */
function startChild(name, args, colorCode, env = childEnv) {
  const entry = args.at(-1);
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    shell: IS_WINDOWS,
    detached: !IS_WINDOWS, // own process group: Ctrl-C reaches only us, and we stop things in order
  });
  children.set(name, child);
  // The worker and the API log pino JSON (for log shippers); a person at a terminal reads lines.
  pipeLines(child, color(colorCode, `[${name}]`), { format: readableLogLine });
  child.on('error', (err) => {
    if (!stopping) void shutdown(1, `could not start the ${name} (${entry}): ${err.message}`);
  });
  child.on('exit', (code, signal) => {
    if (!stopping) {
      void shutdown(1, `the ${name} exited unexpectedly (${signal ? `signal ${signal}` : `exit code ${code}`}); stopping everything`);
    }
  });
  return child;
}

const workerStartedAt = Date.now();
await buildDist();
startChild('worker', nodeWorker(), '33', workerEnv(childEnv));
startChild('api', nodeDist('api/server'), '32');

// Wait (bounded) until the API answers its health check; /healthz is 200 once it reaches Temporal.
const healthTimeoutMs = 120_000;
const deadline = Date.now() + healthTimeoutMs;
let lastHealth = 'no answer yet';
for (;;) {
  if (stopping) await new Promise(() => {});
  try {
    const res = await fetch(`${apiUrl}/healthz`, { signal: AbortSignal.timeout(3000) });
    if (res.status === 200) break;
    lastHealth = `HTTP ${res.status} ${(await res.text()).slice(0, 200)}`;
  } catch (err) {
    lastHealth = err.cause?.code ?? err.message;
  }
  if (Date.now() > deadline) {
    await shutdown(1, `the API did not become healthy at ${apiUrl}/healthz within ${healthTimeoutMs / 1000}s (last: ${lastHealth}); stopping`);
  }
  await sleep(500);
}

// With our own server, also wait (bounded) until the worker polls the task queue, so the first
// run isn't queued behind the worker's start-up. Pollers from an earlier run (the SQLite file keeps
// them for minutes) are told apart by their lastAccessTime.
if (temporalBin) {
  const workerDeadline = Date.now() + 90_000;
  let polling = false;
  while (!polling && Date.now() < workerDeadline) {
    if (stopping) await new Promise(() => {});
    const r = await execFileP(temporalBin, ['task-queue', 'describe', '--address', temporalAddress, '--namespace', namespace, '--task-queue', taskQueue, '-o', 'json'], 10_000);
    try {
      const pollers = JSON.parse(r.stdout).pollers ?? [];
      polling = pollers.some((p) => p.taskQueueType === 'workflow' && Date.parse(p.lastAccessTime) >= workerStartedAt - 1000);
    } catch {}
    if (!polling) await sleep(500);
  }
  if (!polling) log(color('33', `warning: the worker is not polling task queue "${taskQueue}" yet; runs will wait until it does`));
}

const model =
  env.OPENAI_API_KEY || env.OPENAI_BASE_URL
    ? `${env.AGENT_MODEL || 'the default AGENT_MODEL'} via ${env.OPENAI_BASE_URL || 'https://api.openai.com/v1'}`
    : 'offline demo model (no OPENAI_API_KEY/OPENAI_BASE_URL set)';
const body = JSON.stringify({ userId: 'alice', goal: 'what is 12*7?' });
const rule = '─'.repeat(72);
console.log(
  [
    '',
    rule,
    bold('  Threadline is running'),
    '',
    `  REST API          ${apiUrl}`,
    `  Temporal Web UI   ${uiUrl ?? '(external server; set TEMPORAL_UI_URL to link its Web UI)'}`,
    `  Temporal address  ${temporalAddress}${external ? ' (external, from TEMPORAL_ADDRESS)' : ' (dev server)'}   namespace ${namespace}   task queue ${taskQueue}`,
    `  DATA_DIR          ${dataDir}`,
    `  model             ${model}`,
    '',
    '  Try:',
    `    curl -s -X POST ${apiUrl}/v1/runs -H 'content-type: application/json' -d '${body}'`,
    `    ${apiUrl === 'http://127.0.0.1:3000' ? '' : `THREADLINE_API_URL=${apiUrl} `}npm run chat -- "what is 12*7?"`,
    '',
    '  Ctrl-C stops everything.',
    rule,
    '',
  ].join('\n'),
);
