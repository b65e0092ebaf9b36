/**
 * Live tokens (issue 29): `npm run bench -- --only streaming`.
 *
 * The stub model server (test/helpers/stub-model-server.ts) streams each reply in pieces of 4
 * characters, 20 ms apart (about a small hosted model's pace). The worker is a process of its own
 * (the production worker, test/helpers/crash-worker.ts, with the real `openai` client over HTTP);
 * the stub, the API and the SSE clients run in this process, so one clock times both ends:
 *  - latency: from the stub sending the piece that carries an answer's first character to the SSE
 *    client receiving that `token` event — one run at a time (--streaming-runs, default 40), then
 *    100 runs at once (--streaming-burst) — over the embedded channel (loopback datagrams) and over
 *    PostgreSQL's LISTEN/NOTIFY (BENCH_DATABASE_URL, a scratch database);
 *  - cost: a run's total time with streaming against the same run without (MODEL_STREAM=off; the
 *    stub then waits as long as its stream would have taken before answering), alternating.
 *
 * Needs TEMPORAL_ADDRESS (scripts/bench.mjs starts a dev server). Results: bench/results/streaming.json.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { randomUUID } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import pino from 'pino';
import { Client as PgClient } from 'pg';
import { createApp } from '../src/api/app';
import { loadConfig, type Config } from '../src/config';
import { connectClient } from '../src/temporal/connection';
import { Runs } from '../src/temporal/runs';
import { bundleWorkflows } from '../src/workflow-bundle';
import { listen } from '../test/helpers/http';
import { readEvents } from '../test/helpers/sse-client';
import { StubModelServer } from '../test/helpers/stub-model-server';
import { resultsFile } from './server-metrics';
import { argNumber, quantile, round } from './figures';

const RESULTS_FILE = resultsFile('streaming');
/** A run's stream is followed this long at most. */
const RUN_TIMEOUT_MS = 90_000;
const ADMIN_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

const stats = (xs: number[]) => ({ n: xs.length, p50: round(quantile(xs, 0.5)), p95: round(quantile(xs, 0.95)), max: round(Math.max(...xs)) });

const ANSWER = (i: number) => `Answer ${i}: a paragraph of a streamed reply, long enough to be read while it arrives, a few words at a time, until it ends here.`;

interface Stack {
  config: Config;
  runs: Runs;
  url: string;
  stop(): Promise<void>;
}

const ROOT = path.resolve(__dirname, '..');
let bundleFile = '';

/** The production worker in a process of its own, on `config`'s task queue, asking the stub. */
async function startWorkerProcess(config: Config, stub: StubModelServer, env: Record<string, string>): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/helpers/crash-worker.ts'], {
    cwd: ROOT,
    env: {
      ...process.env,
      ...env,
      TEMPORAL_ADDRESS: config.temporalAddress,
      TASK_QUEUE: config.TASK_QUEUE,
      DATA_DIR: config.dataDir,
      OPENAI_BASE_URL: stub.url,
      OPENAI_API_KEY: 'bench',
      AGENT_MODEL: 'stub-model',
      MEMORY_MANAGER: 'react',
      MEMORY_EXTRACTION: 'off',
      LOG_LEVEL: 'warn',
      THREADLINE_WORKFLOW_BUNDLE: bundleFile,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const log = process.env.BENCH_WORKER_LOG;
  const keep = (d: Buffer) => {
    output += d.toString();
    if (log) appendFileSync(log, d);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const deadline = Date.now() + 60_000;
  while (!output.includes('crash-worker: running')) {
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`the worker did not start:\n${output}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return child;
}

async function startStack(stub: StubModelServer, env: Record<string, string>): Promise<Stack> {
  const config = loadConfig({
    TEMPORAL_ADDRESS: process.env.TEMPORAL_ADDRESS,
    TASK_QUEUE: `bench-streaming-${randomUUID().slice(0, 8)}`,
    DATA_DIR: mkdtempSync(path.join(os.tmpdir(), 'threadline-bench-streaming-')),
    MEMORY_MANAGER: 'react',
    MEMORY_EXTRACTION: 'off',
    LOG_LEVEL: 'warn',
    ...env,
  });
  const client = await connectClient(config);
  const runs = new Runs(client, config);
  const shutdown = new AbortController();
  setMaxListeners(0, shutdown.signal); // one per open stream: 100 at once
  // The API first: the worker finds its registration (DATA_DIR/live) when it starts.
  const app = await listen(createApp({ runs, config, isHealthy: async () => true, logger: pino({ level: 'silent' }), shutdown: shutdown.signal }));
  await new Promise((r) => setTimeout(r, 200));
  const worker = await startWorkerProcess(config, stub, env);
  return {
    config,
    runs,
    url: app.url,
    async stop() {
      worker.kill('SIGTERM');
      await new Promise((r) => (worker.exitCode !== null ? r(null) : worker.once('exit', r)));
      shutdown.abort();
      await app.close();
      await client.connection.close();
    },
  };
}

/** Starts a run answering ANSWER(i) and follows its stream; the first answer token's latency from the stub's piece, and the run's time. */
async function oneRun(stack: Stack, stub: StubModelServer, tag: string, i: number): Promise<{ latencyMs: number | null; totalMs: number; mixed: boolean; ended: boolean }> {
  const goal = `bench streaming ${tag} ${i} ${randomUUID().slice(0, 6)}`;
  const text = ANSWER(i);
  const started = performance.now();
  const { runId } = await stack.runs.start({ userId: 'bench-streaming', goal });
  let firstAt: number | null = null;
  let answer = '';
  let mixed = false;
  let ended = true;
  await readEvents(`${stack.url}/v1/runs/${runId}/events`, {
    timeoutMs: RUN_TIMEOUT_MS,
    onEvent: (e) => {
      // A call asked again (its worker replaced or killed) streams from its start: drop what came before.
      if (e.event === 'token_reset') answer = '';
      if (e.event !== 'token') return;
      const t = JSON.parse(e.data) as { runId: string; field: string; delta: string };
      if (t.runId !== runId) mixed = true;
      if (t.field !== 'answer') return;
      firstAt ??= performance.now();
      answer += t.delta;
    },
  }).catch(() => (ended = false)); // a run that did not end in time is counted, not waited for
  const totalMs = performance.now() - started;
  if (ended && answer !== '' && answer !== text) mixed = true;
  const streamed = stub.streams.find((s) => s.goal === goal && s.name === 'final_answer');
  if (firstAt === null || !streamed) return { latencyMs: null, totalMs, mixed, ended };
  const offset = streamed.content.indexOf('"answer":"') + '"answer":"'.length;
  const sentAt = streamed.pieceAt[Math.floor(offset / stub.chunkChars)];
  return { latencyMs: sentAt === undefined ? null : firstAt - sentAt, totalMs, mixed, ended };
}

async function channelRow(stub: StubModelServer, name: string, env: Record<string, string>, sequential: number, burst: number) {
  const stack = await startStack(stub, env);
  try {
    for (let i = 0; i < 3; i++) await oneRun(stack, stub, `${name} warmup`, i);
    const one: number[] = [];
    for (let i = 0; i < sequential; i++) {
      const r = await oneRun(stack, stub, name, i);
      if (r.latencyMs !== null) one.push(r.latencyMs);
    }
    const started = performance.now();
    const results = await Promise.all(Array.from({ length: burst }, (_, i) => oneRun(stack, stub, `${name} burst`, i)));
    const burstMs = performance.now() - started;
    const many = results.flatMap((r) => (r.latencyMs === null ? [] : [r.latencyMs]));
    const row = {
      channel: name,
      oneAtATime: stats(one),
      atOnce: { runs: burst, ...stats(many), withTokens: many.length, mixed: results.filter((r) => r.mixed).length, notEnded: results.filter((r) => !r.ended).length, wallMs: Math.round(burstMs) },
    };
    console.log(
      `${name.padEnd(9)} first token, one run at a time: p50 ${row.oneAtATime.p50} ms, p95 ${row.oneAtATime.p95} ms (n ${one.length}); ` +
        `${burst} at once: p50 ${row.atOnce.p50} ms, p95 ${row.atOnce.p95} ms, ${many.length}/${burst} streamed, ${row.atOnce.mixed} mixed, ${row.atOnce.notEnded} not ended in ${RUN_TIMEOUT_MS / 1000} s, ${(burstMs / 1000).toFixed(1)} s`,
    );
    return row;
  } finally {
    await stack.stop();
  }
}

async function costRow(stub: StubModelServer, pairs: number) {
  const on = await startStack(stub, { MODEL_STREAM: 'on' });
  const off = await startStack(stub, { MODEL_STREAM: 'off' });
  stub.pacePlain = true;
  try {
    for (let i = 0; i < 2; i++) {
      await oneRun(on, stub, 'cost warmup on', i);
      await oneRun(off, stub, 'cost warmup off', i);
    }
    const times = { on: [] as number[], off: [] as number[] };
    for (let i = 0; i < pairs; i++) {
      // Alternating, so drift of the machine's load falls on both alike.
      const [first, second] = i % 2 === 0 ? (['on', 'off'] as const) : (['off', 'on'] as const);
      times[first].push((await oneRun(first === 'on' ? on : off, stub, `cost ${first}`, i)).totalMs);
      times[second].push((await oneRun(second === 'on' ? on : off, stub, `cost ${second}`, i)).totalMs);
    }
    const row = { pairs, streamingMs: stats(times.on), plainMs: stats(times.off), ratioP50: round(quantile(times.on, 0.5) / quantile(times.off, 0.5), 3) };
    console.log(`run time, streaming vs not: p50 ${row.streamingMs.p50} ms vs ${row.plainMs.p50} ms — ×${row.ratioP50} (n ${pairs} each)`);
    return row;
  } finally {
    stub.pacePlain = false;
    await on.stop();
    await off.stop();
  }
}

async function main(): Promise<void> {
  if (!process.env.TEMPORAL_ADDRESS) throw new Error('TEMPORAL_ADDRESS is not set: run with `npm run bench -- --only streaming`');
  const sequential = argNumber('--streaming-runs', 40);
  const burst = argNumber('--streaming-burst', 100);
  const pairs = argNumber('--streaming-pairs', 15);
  bundleFile = path.join(mkdtempSync(path.join(os.tmpdir(), 'threadline-bench-bundle-')), 'workflow-bundle.js');
  writeFileSync(bundleFile, await bundleWorkflows());
  const stub = new StubModelServer();
  stub.streaming = true;
  stub.chunkChars = 4;
  stub.chunkDelayMs = 20;
  // Replies follow from the goal, so a call asked again (a workflow task that timed out under load runs its
  // local calls again) gets the same reply.
  stub.fallback = (req) =>
    req.name === 'execution_plan'
      ? { steps: [{ type: 'respond', description: 'Answer the user' }] }
      : req.name === 'final_answer'
        ? { answer: ANSWER(Number(/ (\d+) \S+$/.exec(req.goal)?.[1])) }
        : undefined;
  await stub.start();
  const database = `threadline_bench_streaming_${randomUUID().slice(0, 8).replace(/-/g, '')}`;
  const admin = new PgClient({ connectionString: ADMIN_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${database}`);
  const databaseUrl = Object.assign(new URL(ADMIN_URL), { pathname: `/${database}` }).toString();
  try {
    console.log(`streaming: the stub sends pieces of ${stub.chunkChars} characters every ${stub.chunkDelayMs} ms; the worker in its own process, the API and the SSE clients in this one`);
    const embedded = await channelRow(stub, 'embedded', {}, sequential, burst);
    const postgres = await channelRow(stub, 'postgres', { MEMORY_STORE: 'postgres', DATABASE_URL: databaseUrl }, sequential, burst);
    const cost = await costRow(stub, pairs);
    mkdirSync(path.dirname(RESULTS_FILE), { recursive: true });
    writeFileSync(
      RESULTS_FILE,
      `${JSON.stringify({ at: new Date().toISOString(), machine: { cpus: os.cpus().length, memoryGiB: round(os.totalmem() / 2 ** 30) }, stub: { chunkChars: stub.chunkChars, chunkDelayMs: stub.chunkDelayMs }, channels: [embedded, postgres], cost }, null, 2)}\n`,
    );
    console.log(`results: ${path.relative(process.cwd(), RESULTS_FILE)}`);
  } finally {
    await stub.stop();
    await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
    await admin.end();
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
