// `npm run chaos` — the chaos proof (issues 11 and 27): real processes are killed at random while
// runs go on, and nothing is lost, repeated or broken.
//
//   npm run chaos -- [--cluster] [--runs 100, 200 with --cluster] [--duration 3×runs, at least 60] [--seed 1]
//                    [--kills duration/60, at least 3] [--settle 180] [--keep]
//
// It starts, each as its own process: a Temporal dev server with its data in a SQLite file (so it
// survives a restart on the same port), the worker (test/helpers/crash-worker.ts: the production
// worker plus a non-idempotent `tally` tool that appends each execution to DATA_DIR/tally.log), the
// REST API (src/api/server.ts), and the stub model server (bench/chaos/model-server.ts; it is the
// outside world and is never killed). Then it starts --runs runs over REST during the first 80 %
// of --duration seconds, every other one asking the user (answered over REST 0.5–3.5 s after it
// waits) and every third one with a sub-plan step (a child workflow `<run>.<step>` that does its own
// tally step and answers; the parent's answer carries the child's), while it SIGKILLs the worker,
// the API and the Temporal server --kills times each, at times drawn from --seed, restarting each
// after a short delay. A process that dies by itself is restarted too (counted). Every client call
// retries on connection errors and 5xx.
//
// --cluster runs the same proof on the production-shaped cluster of `npm run cluster`
// (scripts/cluster-temporal.mjs), on a scratch PostgreSQL server of its own (scripts/scratch-postgres.mjs;
// never the machine's shared one) that holds Temporal's databases and the memory store's: the
// frontend, history, matching and worker services as separate processes, two workers and two APIs
// (the client's calls take turns between them) with MEMORY_STORE=postgres, API keys, encrypted
// payloads and Worker Deployment Versioning. The kinds killed --kills times each: the history, the
// matching and the frontend service (SIGKILL), one of the two workers and one of the two APIs (the
// seed picks), and PostgreSQL (a SIGKILL of the postmaster and all its backends, or an immediate
// stop, in turn; started again on the same port and data directory).
//
// At the end, for every run (also any run whose 201 was lost and whose start was sent again):
// it reached `completed` with the expected answer; its reply, when it asked, is in its
// observations exactly once (no reply lost, none taken twice); each tally step ran exactly once
// (no completed tool step repeated); its memory thread's head exists and its state chain is
// whole; a sub-plan's child run exists once, completed with its answer, its tally ran once, and
// the parent observed that answer once and answered with it. Prints a table and a summary (runs
// completed, runs stuck, completed steps executed twice, replies lost) and exits 1 on any violation. Logs and data stay in a temporary
// directory when something failed (or with --keep).
import { spawn } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { parseArgs } from 'node:util';
import { randomBytes } from 'node:crypto';
import { CLUSTER } from './cluster-settings.mjs';
import { createDatabase, ensureClusterServer, freePorts, setupSchemas, startClusterTemporal } from './cluster-temporal.mjs';
import { ROOT, binPath, bold, ensureDeps, ensureTemporal, execFileP, fail, freePort, log, sleep, startTemporalDev, stopProcess, stopTemporalServers, waitForTcp } from './lib.mjs';
import { scratchPostgres } from './scratch-postgres.mjs';

// ---- options
let opts;
try {
  ({ values: opts } = parseArgs({
    options: {
      cluster: { type: 'boolean', default: false },
      runs: { type: 'string' }, // default: 100 (200 with --cluster)
      duration: { type: 'string' }, // default: 3 s per run (at least 60), so the 2-core machine keeps up
      seed: { type: 'string', default: '1' },
      kills: { type: 'string' }, // default: one per kind per minute of the window (at least 3), spread over it
      settle: { type: 'string', default: '180' },
      keep: { type: 'boolean', default: false },
    },
  }));
} catch (err) {
  fail(`${err.message} (see the top of scripts/chaos.mjs)`);
}
const int = (name, min) => {
  const v = Number(opts[name]);
  if (!Number.isInteger(v) || v < min) fail(`--${name}: expected an integer ≥ ${min}, got "${opts[name]}"`);
  return v;
};
const CLUSTER_MODE = opts.cluster;
opts.runs ??= CLUSTER_MODE ? '200' : '100';
const RUNS = int('runs', 1);
opts.duration ??= String(Math.max(60, 3 * RUNS));
const DURATION_S = int('duration', 5);
const SEED = int('seed', 0);
opts.kills ??= String(Math.max(3, Math.round(DURATION_S / 60)));
const KILLS = int('kills', 0);
const SETTLE_S = int('settle', 10);
const USER = `chaos-${SEED}`;
const TERMINAL = new Set(['completed', 'failed', 'cancelled']);
const POLL_MS = 400;

/** mulberry32: a small seeded PRNG, so a seed always gives the same kill schedule. */
function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const rng = prng(SEED);

// ---- scratch directory: data, SQLite file, logs
ensureDeps();
const bin = await ensureTemporal();
const dir = mkdtempSync(path.join(os.tmpdir(), 'threadline-chaos-'));
const dataDir = path.join(dir, 'data');
const logDir = path.join(dir, 'logs');
mkdirSync(logDir, { recursive: true });
// Made before the workers start: the tally tool appends to DATA_DIR/tally.log and makes no directory.
// With the file memory store the worker makes DATA_DIR at start; with PostgreSQL's (--cluster) only a
// first journal write does, and a tally run before it failed (ENOENT): a failed step, a run that went on.
mkdirSync(dataDir, { recursive: true });
const began = Date.now();
const elapsed = () => ((Date.now() - began) / 1000).toFixed(1).padStart(6);
const say = (msg) => log(`${elapsed()}s ${msg}`);
let shuttingDown = false;

// ---- child processes
/** A `node --import tsx <entry>` child, resolved once a line of its output matches `ready`. */
function startNode(name, entry, env, ready) {
  const child = spawn(process.execPath, ['--import', 'tsx', entry], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const logFile = path.join(logDir, `${name}.log`);
  const tail = [];
  return new Promise((resolve, reject) => {
    let ok = false;
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${name} did not start within 90 s:\n${tail.join('\n')}`));
    }, 90_000);
    for (const stream of [child.stdout, child.stderr]) {
      readline.createInterface({ input: stream }).on('line', (line) => {
        appendFileSync(logFile, `${line}\n`);
        tail.push(line);
        if (tail.length > 30) tail.shift();
        const m = !ok && ready.exec(line);
        if (m) {
          ok = true;
          clearTimeout(timer);
          resolve({ process: child, match: m });
        }
      });
    }
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      if (!ok) reject(new Error(`${name} exited (${signal ?? code}) before it started:\n${tail.join('\n')}`));
    });
  });
}

/**
 * One supervised process: started (with retries), killed on purpose by the chaos loop, and
 * restarted like a process manager would when it dies by itself. `kill(child, how)` kills it
 * (default: SIGKILL, of its whole process group with `group`).
 */
class Managed {
  constructor(name, startFn, { group = false, kill } = {}) {
    Object.assign(this, { name, startFn, group, kill: kill ?? ((child) => (group ? process.kill(-child.pid, 'SIGKILL') : child.kill('SIGKILL'))) });
    Object.assign(this, { child: null, kills: 0, unplanned: 0, downMs: [], killing: false, hows: {} });
  }

  async start() {
    for (let attempt = 1; ; attempt++) {
      try {
        const { process: child, match } = await this.startFn();
        this.adopt(child, match);
        return;
      } catch (err) {
        if (shuttingDown) return;
        say(`${this.name} did not start (attempt ${attempt}): ${String(err.message).split('\n')[0]}`);
        await sleep(Math.min(5000, 500 * attempt));
      }
    }
  }

  /** Supervises `child`, started by startFn or by someone else (the cluster's first start). */
  adopt(child, match) {
    this.child = child;
    this.match = match; // the ready line (the model server's URL)
    child.once('exit', (code, signal) => {
      if (this.killing || shuttingDown || this.child !== child) return;
      this.unplanned++;
      say(`${this.name} exited by itself (${signal ?? `code ${code}`}); restarting it`);
      this.child = null;
      void sleep(1000).then(() => this.start());
    });
  }

  /** Kills it (`how`: passed to `kill`), then restarts it after `delayMs`. */
  async killAndRestart(delayMs, how) {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return false;
    this.killing = true;
    const t0 = Date.now();
    const exited = new Promise((r) => child.once('exit', r));
    try {
      await this.kill(child, how);
    } catch {
      /* already gone */
    }
    await exited;
    this.kills++;
    if (how) this.hows[how] = (this.hows[how] ?? 0) + 1;
    this.child = null;
    this.killing = false;
    await sleep(delayMs);
    await this.start();
    this.downMs.push(Date.now() - t0);
    return true;
  }

  async stop() {
    const child = this.child;
    this.child = null;
    if (child) await stopProcess(child, { graceMs: 5000, group: this.group });
  }
}

// ---- HTTP client: every call retried on connection errors and 5xx until it gets an answer
/** The APIs' base URLs: the calls take turns, so a run's calls (and a retry after a kill) reach every API. */
let apiUrls = [];
let apiHeaders = {};
let calls = 0;
async function call(method, urlPath, body) {
  const apiUrl = apiUrls[calls++ % apiUrls.length];
  try {
    const res = await fetch(`${apiUrl}${urlPath}`, {
      method,
      headers: { ...apiHeaders, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
      signal: AbortSignal.timeout(15_000),
    });
    const text = await res.text();
    let json = null;
    try {
      json = JSON.parse(text);
    } catch {
      /* not JSON */
    }
    return { status: res.status, json, text };
  } catch (err) {
    return { status: 0, json: null, text: err.message };
  }
}
const retryable = (r) => r.status === 0 || r.status >= 500;
const stats = { retries: 0 };
/** GET until a non-retryable answer, or null at the deadline. */
async function getSettled(urlPath, deadline) {
  for (;;) {
    const r = await call('GET', urlPath);
    if (!retryable(r)) return r;
    stats.retries++;
    if (Date.now() > deadline) return null;
    await sleep(POLL_MS);
  }
}

// ---- runs
/** Every run under test: {i, tag, ask, sub, runId, orphan, reply?: {text, outcome}, child?: {...}, problems: []} */
const runs = [];
const startAttempts = []; // tags sent in POST /v1/runs
const refusals = [];

/** The goal the stub model (bench/chaos/model-server.ts) plans for; `sub`: with a sub-plan step. */
const goalOf = (tag, ask, sub) => `chaos ${tag} ${ask ? 'ask' : 'noask'}${sub ? ' sub' : ''}`;
const GOAL = /^chaos (r(\d+)\.\d+) (ask|noask)( sub)?$/;

async function startRun(i, ask, sub, deadline) {
  for (let attempt = 1; Date.now() < deadline; attempt++) {
    const tag = `r${i}.${attempt}`; // a new goal per attempt: a run whose 201 was lost stays apart
    startAttempts.push(tag);
    const r = await call('POST', '/v1/runs', { userId: USER, goal: goalOf(tag, ask, sub) });
    if (r.status === 201) {
      const run = { i, tag, ask, sub, runId: r.json.runId, orphan: false, problems: [], replyDelayMs: Math.round(500 + 3000 * prng(SEED * 1000 + i)()) };
      runs.push(run);
      return run;
    }
    if (!retryable(r)) {
      refusals.push(`start of run ${i}: ${r.status} ${r.text.slice(0, 200)}`);
      return null;
    }
    stats.retries++;
    await sleep(500);
  }
  refusals.push(`start of run ${i}: no answer before the deadline`);
  return null;
}

/** Waits for the question, replies (retrying), then waits for the end. */
async function driveRun(run, deadline) {
  if (run.ask) {
    for (;;) {
      const r = await getSettled(`/v1/runs/${run.runId}`, deadline);
      const status = r?.json?.status;
      if (!r || r.status !== 200 || TERMINAL.has(status) || Date.now() > deadline) break;
      if (status === 'waiting_user') {
        await sleep(run.replyDelayMs ?? 0); // a person takes a moment: the run stays parked across kills
        run.reply = { text: `reply-for-${run.runId}`, outcome: 'unsent' };
        let uncertain = false;
        for (;;) {
          const rr = await call('POST', `/v1/runs/${run.runId}/reply`, { text: run.reply.text });
          if (rr.status === 202) {
            run.reply.outcome = 'accepted';
            break;
          }
          if (retryable(rr)) {
            uncertain = true; // it may have been taken before the connection broke
            stats.retries++;
            if (Date.now() > deadline) break;
            await sleep(POLL_MS);
            continue;
          }
          run.reply.outcome = uncertain && rr.status === 409 ? 'uncertain' : `refused ${rr.status}`;
          break;
        }
        break;
      }
      await sleep(POLL_MS);
    }
  }
  for (;;) {
    const r = await getSettled(`/v1/runs/${run.runId}`, deadline);
    if (!r || Date.now() > deadline) return;
    if (r.status === 200 && TERMINAL.has(r.json?.status)) return;
    if (run.ask && r.json?.status === 'waiting_user' && !run.reply) return driveRun(run, deadline); // an orphan found waiting
    await sleep(POLL_MS);
  }
}

// ---- checks
function tallyCounts() {
  const file = path.join(dataDir, 'tally.log');
  const counts = new Map();
  if (!existsSync(file)) return counts;
  for (const label of readFileSync(file, 'utf8').split('\n').filter(Boolean)) counts.set(label, (counts.get(label) ?? 0) + 1);
  return counts;
}

/**
 * A run's sub-plan: one subplan step whose child run (`<run>.<step>`, found from the parent's state)
 * is listed once for its goal, completed with its answer after its tally ran once, and whose answer
 * the parent observed once. Sets `run.child`.
 */
async function checkChild(run, s, tally, listed, deadline) {
  const p = run.problems;
  const goal = `chaos-child ${run.tag}`;
  const expected = `sub-answer-${run.tag}`;
  const child = (run.child = { runId: null, status: null, listed: listed.filter((x) => x.goal === goal).length, tally: tally.get(`${run.tag}-c`) ?? 0, observed: 0, answerOk: false });
  const steps = s.steps.filter((st) => st.type === 'subplan');
  if (steps.length !== 1) return void p.push(`${steps.length} sub-plan steps, expected 1`);
  const [step] = steps;
  child.runId = step.childRunId ?? null;
  if (!child.runId) return void (s.status === 'completed' && p.push('sub-plan step without a child run'));
  const r = await getSettled(`/v1/runs/${encodeURIComponent(child.runId)}`, deadline);
  if (!r || r.status !== 200) return void p.push(`child run ${child.runId} not readable (${r?.status ?? 'timeout'})`);
  child.status = r.json.status;
  child.answerOk = r.json.finalAnswer === expected;
  if (child.status !== 'completed') p.push(`child run ${child.runId} status ${child.status}`);
  else if (!child.answerOk) p.push(`child answer ${JSON.stringify(r.json.finalAnswer)}, expected ${JSON.stringify(expected)}`);
  if (r.json.parentRunId && r.json.parentRunId !== run.runId) p.push(`child run's parent is ${r.json.parentRunId}`);
  if (child.listed !== 1) p.push(`${child.listed} child runs listed for goal "${goal}", expected 1`);
  if (child.tally > 1 || (child.status === 'completed' && child.tally !== 1)) p.push(`child tally step ran ${child.tally} times, expected 1`);
  const observed = s.observations.filter((o) => o.kind === 'subplan' && o.stepId === step.id).map((o) => o.content);
  child.observed = observed.length;
  if (s.status === 'completed' && (observed.length !== 1 || observed[0] !== expected))
    p.push(`parent observed the child's answer as ${JSON.stringify(observed)}, expected ${JSON.stringify(expected)} once`);
}

async function checkRun(run, tally, listed, deadline) {
  const p = run.problems;
  const r = await getSettled(`/v1/runs/${run.runId}`, deadline);
  if (!r || r.status !== 200) return void p.push(`state not readable (${r?.status ?? 'timeout'})`);
  const s = r.json;
  run.state = s; // kept in the report's directory when the run has a problem
  run.status = s.status;
  if (s.status !== 'completed') p.push(`status ${s.status}${s.lastError ? ` (${String(s.lastError).slice(0, 120)})` : ''}`);
  // The child's answer reaches the parent's answer (bench/chaos/model-server.ts puts it there when the prompt has it).
  const expected = `${run.ask ? `done ${run.tag} with reply-for-${run.runId}` : `done ${run.tag}`}${run.sub ? ` and sub-answer-${run.tag}` : ''}`;
  run.answerOk = s.finalAnswer === expected;
  if (s.status === 'completed' && !run.answerOk) p.push(`answer ${JSON.stringify(s.finalAnswer)}, expected ${JSON.stringify(expected)}`);
  const notDone = s.steps.filter((st) => st.status !== 'completed');
  if (s.status === 'completed' && notDone.length) p.push(`steps not completed: ${notDone.map((st) => st.id).join(', ')}`);
  // Replies: the one sent is there exactly once; a run that did not ask has none.
  const replies = s.observations.filter((o) => o.kind === 'user_reply').map((o) => o.content);
  run.replies = replies.length;
  // Lost: answered 202, or taken before its answer was lost (a retry then found the run no longer waiting), and not in the state.
  run.replyLost = ['accepted', 'uncertain'].includes(run.reply?.outcome) && !replies.includes(run.reply.text);
  if (run.ask) {
    if (run.replyLost) p.push(`reply ${run.reply.outcome} but lost`);
    if (replies.length !== 1 || replies[0] !== run.reply?.text) p.push(`replies in state ${JSON.stringify(replies)}, expected exactly the one sent`);
  } else if (replies.length) p.push(`unexpected replies ${JSON.stringify(replies)}`);
  // Tool steps: each tally label ran exactly once.
  run.tally = ['a', 'b'].map((x) => tally.get(`${run.tag}-${x}`) ?? 0);
  if (run.tally.some((n) => n > 1) || (s.status === 'completed' && run.tally.some((n) => n !== 1))) p.push(`tally steps ran ${run.tally.join('/')} times, expected 1/1`);
  if (run.sub) await checkChild(run, s, tally, listed, deadline);
  // Memory thread: the head exists and the chain of states is whole.
  run.threadOk = false;
  if (!s.threadId) return void p.push('no memory thread');
  const t = await getSettled(`/v1/threads/${encodeURIComponent(s.threadId)}`, deadline);
  if (!t || t.status !== 200) return void p.push(`thread ${s.threadId} not readable (${t?.status ?? 'timeout'})`);
  if (!t.json.headStateId || t.json.state?.stateId !== t.json.headStateId) return void p.push(`thread head ${t.json.headStateId} not the state read (${t.json.state?.stateId})`);
  const st = await getSettled(`/v1/threads/${encodeURIComponent(s.threadId)}/states`, deadline);
  if (!st || st.status !== 200) return void p.push(`thread states not readable (${st?.status ?? 'timeout'})`);
  const ids = new Set(st.json.states.map((x) => x.stateId));
  const dangling = st.json.states.filter((x) => x.parentStateId && !ids.has(x.parentStateId));
  if (!ids.has(t.json.headStateId)) p.push('thread head missing from its states');
  else if (dangling.length) p.push(`thread states with a missing parent: ${dangling.length}`);
  else run.threadOk = true;
}

// ---- main
const workflowBundle = process.env.THREADLINE_WORKFLOW_BUNDLE && existsSync(process.env.THREADLINE_WORKFLOW_BUNDLE) ? process.env.THREADLINE_WORKFLOW_BUNDLE : path.join(dir, 'workflow-bundle.js');
const model = new Managed('model', () => startNode('model', 'bench/chaos/model-server.ts', process.env, /^chaos-model: (\S+)/));
/** Every supervised process but the model, by name (the report's table). */
let targets = {};
/** Each kind of kill → the processes one of which it hits (picked from the seed when there are several). */
let kinds = {};
/** Stops what the topology started (Threadline's processes first, then Temporal, then PostgreSQL). */
let stopTopology = async () => {};
let exitCode = 1;
const shutdown = async () => {
  shuttingDown = true;
  await stopTopology();
  await model.stop();
};
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => void shutdown().then(() => process.exit(130)));

/** The dev server on a SQLite file, as `npm start` runs it: { address, env (Threadline's additions), describe }. */
async function startDevTemporal() {
  const port = await freePort();
  const dbFile = path.join(dir, 'temporal.sqlite');
  const temporal = new Managed('temporal', () => startTemporalDev({ bin, dbFile, port, uiPort: null, onLine: (line) => appendFileSync(path.join(logDir, 'temporal.log'), `${line}\n`) }), {
    group: true,
  });
  stopTopology = () => stopTemporalServers();
  await temporal.start();
  return {
    address: `127.0.0.1:${port}`,
    env: { MEMORY_STORE: 'file', THREADLINE_AUTH: 'none' },
    describe: `temporal 127.0.0.1:${port} (SQLite ${dbFile})`,
    processes: { temporal },
    kinds: { temporal: [temporal] },
  };
}

/**
 * The production-shaped cluster of `npm run cluster` on a scratch PostgreSQL server of its own (so
 * that it can be crashed): Temporal's databases and the memory store's on it, the four Temporal
 * services as separate processes (frontend, history and matching killed; the worker service only
 * supervised), Threadline with MEMORY_STORE=postgres, API keys, encrypted payloads and Worker
 * Deployment Versioning, as `npm run cluster` runs it.
 */
async function startClusterTopology() {
  const tools = await ensureClusterServer();
  const pgDir = mkdtempSync(path.join(os.tmpdir(), 'threadline-chaos-pg-'));
  const server = await scratchPostgres({ dir: pgDir, port: await freePort(), logFile: path.join(logDir, 'postgres.log') });
  const postgres = new Managed('postgres', () => server.start(), { kill: (child, how) => server.crash(child, how) });
  let cluster = null;
  stopTopology = async () => {
    await cluster?.stop();
    if (postgres.child) await server.stop(postgres.child);
    // Kept after a failure: Temporal's histories and the memory store's data, for diagnosis.
    if (exitCode === 0 && !opts.keep) rmSync(pgDir, { recursive: true, force: true });
    else log(`PostgreSQL data (Temporal's histories, the memory store) kept in ${server.dataDir}; start it with: postgres -D ${server.dataDir} -p ${server.pg.port}`);
  };
  await postgres.start();
  await setupSchemas({ ...tools, pg: server.pg });
  await createDatabase({ sqlBin: tools.sqlBin, pg: server.pg, name: CLUSTER.databases.memory });
  const ports = await freePorts();
  cluster = await startClusterTemporal({ serverBin: tools.serverBin, temporalBin: bin, logDir, pg: server.pg, ports });
  /** A killed service started again, up once it listens (the worker service serves only its membership port). */
  const restart = async (service) => {
    const child = cluster.restart(service);
    const port = ports[service === 'worker' ? 'workerMembership' : `${service}Grpc`];
    const exited = () => (child.exitCode !== null || child.signalCode !== null ? `the ${service} service exited (${child.signalCode ?? child.exitCode})` : null);
    try {
      await waitForTcp('127.0.0.1', port, { timeoutMs: 60_000, shouldAbort: exited });
    } catch (err) {
      await stopProcess(child, { signal: 'SIGKILL', graceMs: 1000, group: true });
      throw err;
    }
    return { process: child };
  };
  const services = {};
  for (const service of CLUSTER.services) {
    services[service] = new Managed(service === 'worker' ? 'temporal-worker' : service, () => restart(service), { group: true });
    services[service].adopt(cluster.processes[service]);
  }
  const { pg } = server;
  const adminKey = randomBytes(24).toString('hex');
  apiHeaders = { authorization: `Bearer ${adminKey}` };
  return {
    address: cluster.address,
    env: {
      MEMORY_STORE: 'postgres',
      DATABASE_URL: `postgres://${pg.user}@${pg.host}:${pg.port}/${CLUSTER.databases.memory}`,
      THREADLINE_AUTH: 'apikey',
      THREADLINE_ADMIN_KEY: adminKey,
      THREADLINE_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
      WORKER_DEPLOYMENT: 'threadline-chaos',
    },
    describe: `temporal ${cluster.address} (${CLUSTER.services.join(', ')}; ${CLUSTER.numHistoryShards} shards), PostgreSQL ${pg.host}:${pg.port} (scratch, ${server.dataDir})`,
    processes: { history: services.history, matching: services.matching, frontend: services.frontend, 'temporal-worker': services.worker, postgres },
    kinds: { history: [services.history], matching: [services.matching], frontend: [services.frontend], postgres: [postgres] },
  };
}

/** With versioning on, runs go to the deployment's current version: wait until a worker has made itself current. */
async function waitForCurrentVersion(address, deployment) {
  const deadline = Date.now() + 120_000;
  for (;;) {
    const r = await execFileP(bin, ['worker', 'deployment', 'describe', '--address', address, '--name', deployment, '--output', 'json'], 10_000);
    if (r.ok && /"currentVersionBuildID"\s*:\s*"[^"]+"/.test(r.stdout)) return;
    if (Date.now() > deadline) throw new Error(`no version of worker deployment ${deployment} became current within 120 s: ${r.out.slice(0, 500)}`);
    await sleep(500);
  }
}

try {
  say(`data and logs in ${dir}`);
  const bundling =
    workflowBundle === process.env.THREADLINE_WORKFLOW_BUNDLE
      ? Promise.resolve()
      : new Promise((resolve, reject) => {
          const child = spawn(binPath('tsx'), ['scripts/bundle-workflows.ts', workflowBundle], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
          child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`bundling the workflows failed (${code})`))));
        });
  const [temporal] = await Promise.all([CLUSTER_MODE ? startClusterTopology() : startDevTemporal(), model.start(), bundling]);
  const modelUrl = model.match[1];
  const env = {
    ...process.env,
    TEMPORAL_ADDRESS: temporal.address,
    TEMPORAL_NAMESPACE: 'default',
    TASK_QUEUE: 'chaos',
    DATA_DIR: dataDir,
    THREADLINE_WORKFLOW_BUNDLE: workflowBundle,
    HOST: '127.0.0.1',
    OPENAI_BASE_URL: modelUrl,
    OPENAI_API_KEY: 'chaos',
    AGENT_MODEL: 'stub-model',
    ...temporal.env,
  };
  delete env.TEMPORAL_UI_PORT;
  // One worker and one API on the dev server; two of each on the cluster (`worker-1`, `worker-2`, …).
  const perKind = CLUSTER_MODE ? CLUSTER.threadlineWorkers : 1;
  const name = (kind, i) => (perKind === 1 ? kind : `${kind}-${i + 1}`);
  const workers = Array.from({ length: perKind }, (_, i) => new Managed(name('worker', i), () => startNode(name('worker', i), 'test/helpers/crash-worker.ts', env, /^crash-worker: running/)));
  const apiPorts = [];
  for (let i = 0; i < (CLUSTER_MODE ? CLUSTER.threadlineApis : 1); i++) apiPorts.push(await freePort());
  // The API's ready line is a pino JSON line: {…"msg":"api: http://… (Temporal …)"}.
  const apis = apiPorts.map((port, i) => new Managed(name('api', i), () => startNode(name('api', i), 'src/api/server.ts', { ...env, PORT: String(port) }, /\bapi: (http[^\s"]+)/)));
  const stopTemporal = stopTopology;
  stopTopology = async () => {
    await Promise.all([...apis, ...workers].map((p) => p.stop()));
    await stopTemporal();
  };
  await Promise.all([...workers, ...apis].map((p) => p.start()));
  if (env.WORKER_DEPLOYMENT) await waitForCurrentVersion(temporal.address, env.WORKER_DEPLOYMENT);
  apiUrls = apiPorts.map((port) => `http://127.0.0.1:${port}`);
  targets = { ...Object.fromEntries([...workers, ...apis].map((p) => [p.name, p])), ...temporal.processes };
  kinds = { worker: workers, api: apis, ...temporal.kinds };
  say(`${temporal.describe}, ${workers.map((w) => w.name).join(' and ')}, api ${apiUrls.join(' and ')}, model ${modelUrl}: all up`);
  say(bold(`chaos: ${RUNS} runs, ${DURATION_S} s, seed ${SEED}, ${KILLS} kills each of ${Object.keys(kinds).join(', ')}`));

  // The kill schedule, from the seed: times in the middle 80 % of the window, then in order. Where a
  // kind has several processes, the seed picks one; PostgreSQL is crashed by a SIGKILL of the
  // postmaster and all its backends, or by an immediate stop, in turn.
  let crashes = 0;
  const schedule = Object.keys(kinds)
    .flatMap((kind) =>
      Array.from({ length: KILLS }, () => ({
        kind,
        atMs: (0.1 + 0.8 * rng()) * DURATION_S * 1000,
        delayMs: Math.round(300 + 1200 * rng()),
        target: kinds[kind].length === 1 ? kinds[kind][0] : kinds[kind][Math.floor(rng() * kinds[kind].length)],
        how: kind === 'postgres' ? (crashes++ % 2 ? 'immediate' : 'kill') : undefined,
      })),
    )
    .sort((a, b) => a.atMs - b.atMs);
  const t0 = Date.now();
  const chaos = (async () => {
    for (const ev of schedule) {
      const wait = t0 + ev.atMs - Date.now();
      if (wait > 0) await sleep(wait);
      const what = ev.how === 'immediate' ? 'immediate stop of' : 'SIGKILL';
      say(`${what} ${ev.target.name}${ev.kind === 'postgres' && ev.how === 'kill' ? ' and its backends' : ''}, restart in ${ev.delayMs} ms`);
      const killed = await ev.target.killAndRestart(ev.delayMs, ev.how);
      say(killed ? `${ev.target.name} back (down ${(ev.target.downMs.at(-1) / 1000).toFixed(1)} s)` : `${ev.target.name} was not running; skipped`);
    }
  })();

  // Runs start over the first 80 % of the window, alternating asking and not, every third with a
  // sub-plan, so kills find them in every phase.
  const deadline = t0 + (DURATION_S + SETTLE_S) * 1000;
  const drivers = [];
  const starts = Array.from({ length: RUNS }, async (_, i) => {
    await sleep((i * DURATION_S * 800) / RUNS);
    const run = await startRun(i, i % 2 === 0, i % 3 === 2, deadline);
    if (run) drivers.push(driveRun(run, deadline));
  });
  await Promise.all(starts);
  await chaos;
  say('chaos window over; all processes up');

  // Runs whose 201 was lost and whose start was sent again: found by listing, driven and checked too.
  const listRuns = async (until) => (await getSettled(`/v1/runs?userId=${USER}&limit=1000`, until))?.json?.runs ?? [];
  const known = new Set(runs.map((r) => r.runId));
  for (const summary of await listRuns(deadline)) {
    if (known.has(summary.runId)) continue;
    const m = GOAL.exec(summary.goal ?? '');
    if (!m) continue;
    const run = { i: Number(m[2]), tag: m[1], ask: m[3] === 'ask', sub: Boolean(m[4]), runId: summary.runId, orphan: true, problems: [] };
    runs.push(run);
    drivers.push(driveRun(run, deadline));
    say(`found run ${run.runId} (${run.tag}) whose start answer was lost`);
  }
  await Promise.all(drivers);
  say('all runs settled; checking');

  const tally = tallyCounts();
  const listed = await listRuns(Date.now() + 60_000); // again, now that every child run has started
  await Promise.all(runs.map((run) => checkRun(run, tally, listed, Date.now() + 60_000)));
  runs.sort((a, b) => a.i - b.i || a.tag.localeCompare(b.tag));
  // A tally label of no run we know: a run we never found.
  const ownLabels = new Set(runs.flatMap((r) => [`${r.tag}-a`, `${r.tag}-b`, ...(r.sub ? [`${r.tag}-c`] : [])]));
  const strays = [...tally.keys()].filter((l) => !ownLabels.has(l));
  // Every tally label is one completed tool step of one run; a count above 1 is a step executed twice.
  const twice = [...tally.entries()].filter(([, n]) => n > 1);

  // ---- report
  const violations = [...refusals, ...strays.map((l) => `tally label ${l} of an unknown run`), ...runs.flatMap((r) => r.problems.map((p) => `${r.tag} ${r.runId}: ${p}`))];
  const pad = (s, w) => String(s).padEnd(w);
  const where = CLUSTER_MODE ? 'on the cluster' : 'on the dev server';
  console.log(`\n${bold('Chaos test')} ${where} — ${RUNS} runs, duration ${DURATION_S} s, seed ${SEED}, ${KILLS} kills per kind, ${((Date.now() - began) / 1000).toFixed(0)} s in all\n`);
  console.log(`  ${pad('process', 17)}${pad('SIGKILLs', 10)}${pad('died by itself', 16)}down (kill → up again)`);
  for (const [name, p] of Object.entries(targets)) {
    const d = p.downMs;
    const span = d.length ? `${(Math.min(...d) / 1000).toFixed(1)}–${(Math.max(...d) / 1000).toFixed(1)} s` : '—';
    console.log(`  ${pad(name, 17)}${pad(p.kills, 10)}${pad(p.unplanned, 16)}${span}`);
  }
  console.log(`  client calls retried after a connection error or 5xx: ${stats.retries}\n`);
  // sub-plan: the child run's status, its tally count, and how often the parent observed its answer.
  console.log(`  ${pad('run', 8)}${pad('asks', 6)}${pad('status', 11)}${pad('answer', 8)}${pad('reply', 11)}${pad('tally a/b', 11)}${pad('sub-plan', 19)}${pad('thread', 8)}problems`);
  const subCell = (c) => (c ? `${c.status ?? 'none'} ${c.tally}/${c.observed}` : '—');
  for (const r of runs) {
    console.log(
      `  ${pad(r.tag + (r.orphan ? '*' : ''), 8)}${pad(r.ask ? 'yes' : 'no', 6)}${pad(r.status ?? '?', 11)}${pad(r.answerOk ? 'ok' : 'WRONG', 8)}` +
        `${pad(r.ask ? (r.reply?.outcome ?? 'not sent') : '—', 11)}${pad((r.tally ?? []).join('/'), 11)}${pad(subCell(r.child), 19)}${pad(r.threadOk ? 'ok' : 'BROKEN', 8)}${r.problems.length ? r.problems.join('; ') : '—'}`,
    );
  }
  console.log("  sub-plan: the child run's status, its tally step's executions / the parent's observations of its answer");
  if (runs.some((r) => r.orphan)) console.log('  * a run whose 201 was lost to a kill; its start was sent again (a new goal per attempt), both runs are checked');
  // The summary: named lines, one figure each (test/chaos.test.ts reads them).
  const count = (xs, f) => xs.filter(f).length;
  const children = runs.filter((r) => r.sub).map((r) => r.child ?? {});
  const sent = runs.filter((r) => r.reply && r.reply.outcome !== 'unsent');
  const line = (name, value) => console.log(`  ${pad(name, 32)}${value}`);
  console.log('');
  line('runs started', `${runs.length} (${count(runs, (r) => !r.orphan)} accepted), ${count(runs, (r) => r.ask)} asking, ${children.length} with a sub-plan`);
  line('runs completed', `${count(runs, (r) => r.status === 'completed')} of ${runs.length}; sub-plan child runs completed ${count(children, (c) => c.status === 'completed')} of ${children.length}`);
  line('runs stuck', `${count(runs, (r) => !TERMINAL.has(r.status))} (not terminal at the end); child runs ${count(children, (c) => c.runId && !TERMINAL.has(c.status))}`);
  line('completed steps executed twice', `${twice.length} (of ${tally.size} tally steps${twice.length ? `: ${twice.map(([l, n]) => `${l} ×${n}`).join(', ')}` : ''})`);
  line('replies lost', `${count(runs, (r) => r.replyLost)} (of ${sent.length} sent, ${count(sent, (r) => r.reply.outcome === 'accepted')} answered 202)`);
  // Kills by kind; PostgreSQL's split into SIGKILLs (of the postmaster and its backends) and immediate stops.
  const byKind = Object.entries(kinds).map(([kind, ps]) => {
    const n = ps.reduce((k, p) => k + p.kills, 0);
    const hows = ps.flatMap((p) => Object.entries(p.hows));
    const detail = hows.length
      ? ` (${hows.map(([how, k]) => `${k} ${how === 'kill' ? 'SIGKILL' : 'immediate stop'}`).join(', ')})`
      : ps.length > 1
        ? ` (${ps.map((p) => `${p.name} ${p.kills}`).join(', ')})`
        : '';
    return `${kind} ${n}${detail}`;
  });
  line('SIGKILLs', `${Object.values(targets).reduce((n, p) => n + p.kills, 0)} (${byKind.join(', ')})`);
  line(
    'restarts after dying by itself',
    Object.values(targets).reduce((n, p) => n + p.unplanned, 0),
  );
  line('violations', violations.length);
  if (violations.length) {
    // The evidence: each run with a problem, its ExecutionState as the API gave it.
    const problemRuns = runs.filter((r) => r.problems.length).map((r) => ({ tag: r.tag, runId: r.runId, problems: r.problems, state: r.state, child: r.child }));
    writeFileSync(path.join(dir, 'problem-runs.json'), `${JSON.stringify(problemRuns, null, 2)}\n`);
    console.log(bold('\nVIOLATIONS') + ` (the states of these runs: ${path.join(dir, 'problem-runs.json')})`);
    for (const v of violations) console.log(`  - ${v}`);
  } else
    console.log(bold('\nPASS: every run completed with its answer, no reply lost, no tool step repeated, every sub-plan child run completed once and reached its parent, every memory thread whole'));
  exitCode = violations.length ? 1 : 0;
} catch (err) {
  console.error(`[threadline] chaos: ${err instanceof Error ? err.stack : err}`);
  exitCode = 1;
}
await shutdown();
if (exitCode === 0 && !opts.keep) rmSync(dir, { recursive: true, force: true });
else log(`data and logs kept in ${dir}`);
process.exit(exitCode);
