/**
 * Schedules benchmark (issue 33): 1,000 schedules of one user, each `at` a time in the same minute
 * (spread evenly over it), every occurrence a run of the offline demo model ("Remind me to stretch":
 * it answers with the reminder). The REST API runs in this process (SCHEDULES_PER_USER raised to
 * N for it), ONE worker (`src/worker.ts`, its defaults) in a child process. Then:
 *   1. N schedules are created over HTTP (POST /v1/schedules), 50 requests in flight, their due
 *      times `--lead` seconds (default 90) after the benchmark starts creating them, spread over 60 s;
 *   2. we wait until every run they start has completed (visibility count), up to a deadline;
 *   3. each run's delay: its workflow's start time in Temporal (visibility `StartTime`) against the
 *      time it was due (the suffix Temporal gives its id; also its `TemporalScheduledStartTime`), and
 *      its close time against the due time.
 * It prints creation time, runs completed, and the delay from due time to run start (and to the
 * run's end) p50 / p95 / max.
 *
 * `--late-worker` (`npm run bench -- --only schedules --schedules-late-worker`): no worker runs until
 * 5 s after the last due time — every occurrence fires with no worker (the server starts its run,
 * which waits on the task queue), then one starts and runs them all. The start delay is then the
 * schedules' own (no runs execute meanwhile); results go to bench/results/schedules-late-worker.json.
 *
 *   npm run bench -- --only schedules [--schedules N] [--schedules-lead S] [--schedules-late-worker]
 *
 * scripts/bench.mjs starts the private dev server and runs this file with TEMPORAL_ADDRESS set.
 * Results also go to bench/results/schedules.json.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import type { Client } from '@temporalio/client';
import pino from 'pino';
import { z } from 'zod';
import { startApi } from '../src/api/server';
import { loadConfig } from '../src/config';
import { scheduledRunOf } from '../src/planning/schedule-spec';
import { connectClient } from '../src/temporal/connection';
import { PLAN_WORKFLOW_TYPE, USER_ID_ATTR } from '../src/workflows/definitions';
import { machine, round } from './figures';
import { resultsFile } from './server-metrics';
import { percentile, pool, startWorker } from './worker-process';

const DEFAULT_SCHEDULES = 1_000;
/** Time to create them all before the first is due (each create also counts the user's schedules, SCHEDULES_PER_USER). */
const DEFAULT_LEAD_S = 90;
const WINDOW_MS = 60_000;
const IN_FLIGHT = 50;
/** After the last due time, how long the runs may take to complete before the rest count as not completed. */
const SETTLE_DEADLINE_MS = 180_000;
const GOAL = 'Remind me to stretch';

class UsageError extends Error {}

function parseCli(): { n: number; leadS: number; lateWorker: boolean } {
  let values;
  try {
    ({ values } = parseArgs({ options: { schedules: { type: 'string' }, lead: { type: 'string' }, 'late-worker': { type: 'boolean' } } }));
  } catch (err) {
    throw new UsageError(`bad arguments: ${err instanceof Error ? err.message : String(err)}`);
  }
  const count = (flag: string, raw: string, min: number, max: number) => {
    const parsed = z.coerce.number().int().min(min).max(max).safeParse(raw);
    if (!parsed.success) throw new UsageError(`${flag}: expected an integer from ${min} to ${max}, got "${raw}"`);
    return parsed.data;
  };
  return {
    n: count('--schedules', values.schedules ?? String(DEFAULT_SCHEDULES), 1, 10_000),
    leadS: count('--lead', values.lead ?? String(DEFAULT_LEAD_S), 5, 3_600),
    lateWorker: values['late-worker'] === true,
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const stats = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return { p50: round(percentile(sorted, 50)), p95: round(percentile(sorted, 95)), max: round(sorted.at(-1) ?? NaN), min: round(sorted[0] ?? NaN) };
};

async function post(url: string, body: unknown): Promise<{ status: number; text: string }> {
  try {
    const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    return { status: res.status, text: await res.text() };
  } catch (err) {
    return { status: 0, text: err instanceof Error ? err.message : String(err) };
  }
}

async function countRuns(client: Client, userId: string, clause: string): Promise<number> {
  return (await client.workflow.count(`WorkflowType = '${PLAN_WORKFLOW_TYPE}' AND ${USER_ID_ATTR.name} = '${userId}'${clause ? ` AND ${clause}` : ''}`)).count;
}

async function main(): Promise<void> {
  const { n, leadS, lateWorker } = parseCli();
  const address = process.env.TEMPORAL_ADDRESS;
  if (!address) throw new UsageError('TEMPORAL_ADDRESS is not set: run the benchmark with `npm run bench`, which starts its Temporal dev server.');
  const dynamicConfig = JSON.parse(process.env.THREADLINE_BENCH_DYNAMIC_CONFIG ?? '[]') as string[];
  console.log(
    `Threadline schedules benchmark — ${n.toLocaleString('en-US')} schedules of one user, each once, due within one minute; offline demo model, one worker${lateWorker ? ' started only after the last is due' : ''}`,
  );
  console.log(`dev server: ${address}`);

  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'threadline-bench-schedules-'));
  const userId = `bench-sched-${Date.now().toString(36)}`;
  const env: NodeJS.ProcessEnv = { ...process.env, TEMPORAL_ADDRESS: address, TASK_QUEUE: 'bench-schedules', DATA_DIR: dataDir, SCHEDULES_PER_USER: String(n) };
  delete env.OPENAI_API_KEY;
  delete env.OPENAI_BASE_URL;
  delete env.THREADLINE_WORKFLOW_BUNDLE;
  const config = loadConfig({ ...env, PORT: '0', HOST: '127.0.0.1' });

  let t = performance.now();
  const running: { worker: Awaited<ReturnType<typeof startWorker>> | null } = { worker: null };
  /** Rejects when the worker exits during the benchmark (never, before it has started). */
  let workerExit: Promise<never> = new Promise<never>(() => undefined);
  const launchWorker = async () => {
    const began = performance.now();
    const w = await startWorker(env);
    running.worker = w;
    console.log(`${w.banner} (pid ${w.child.pid}, started in ${Math.round(performance.now() - began)} ms)`);
    workerExit = new Promise<never>((_, reject) => w.child.once('exit', (code) => reject(new Error(`the worker exited (${code}) during the benchmark:\n${w.tail()}`))));
    workerExit.catch(() => undefined);
    return w;
  };
  // Stopped by `npm run bench`'s SIGTERM (Ctrl-C, a timeout): the worker goes too.
  process.once('SIGTERM', () => {
    running.worker?.child.kill('SIGTERM');
    process.exit(143);
  });
  if (!lateWorker) await launchWorker();
  const api = await startApi(config, { logger: pino({ level: 'silent' }) });
  const client = await connectClient(config);
  try {
    // ---- 1. N schedules, due evenly over one minute starting `lead` s from now (whole seconds: `at` has second precision)
    const windowStart = Math.ceil((Date.now() + leadS * 1000) / 1000) * 1000;
    const dueTimes = Array.from({ length: n }, (_, i) => new Date(windowStart + Math.floor((i * WINDOW_MS) / n / 1000) * 1000).toISOString());
    const refusals: { status: number; body: string }[] = [];
    const createLatencies: number[] = [];
    let created = 0;
    t = performance.now();
    await Promise.race([
      pool(dueTimes, IN_FLIGHT, async (at) => {
        const began = performance.now();
        const { status, text } = await post(`${api.url}/v1/schedules`, { userId, goal: GOAL, at });
        createLatencies.push(performance.now() - began);
        if (status === 201) created++;
        else refusals.push({ status, body: text.slice(0, 300) });
      }),
      workerExit,
    ]);
    const createMs = performance.now() - t;
    const createdBeforeDue = Date.now() < windowStart;
    console.log(
      `created ${created} schedules in ${round(createMs / 1000)} s (${refusals.length} refused); the first is due ${createdBeforeDue ? `${round((windowStart - Date.now()) / 1000)} s from now` : 'ALREADY (raise --lead)'}`,
    );
    for (const r of refusals.slice(0, 3)) console.log(`  refused: ${r.status} ${r.body}`);

    // ---- 2. every run completed
    const lastDue = Date.parse(dueTimes.at(-1) ?? '');
    let workerStartedAfterLastDueMs: number | null = null;
    if (lateWorker) {
      // Every occurrence fires with no worker to run it: its run starts and waits on the task queue.
      await sleep(Math.max(0, lastDue + 5_000 - Date.now()));
      const due = await countRuns(client, userId, '');
      console.log(`  ${due}/${created} runs started with no worker; starting one`);
      workerStartedAfterLastDueMs = Date.now() - lastDue;
      await launchWorker();
      workerStartedAfterLastDueMs = round((workerStartedAfterLastDueMs + Date.now() - lastDue) / 2);
    }
    const deadline = lastDue + SETTLE_DEADLINE_MS;
    let completed = 0;
    let lastReport = 0;
    for (;;) {
      completed = await Promise.race([countRuns(client, userId, `ExecutionStatus = 'Completed'`), workerExit]);
      if (completed >= created || Date.now() > deadline) break;
      if (Date.now() - lastReport > 10_000 && Date.now() > windowStart) {
        lastReport = Date.now();
        console.log(`  ${completed}/${created} runs completed, ${round((Date.now() - windowStart) / 1000)} s into the minute`);
      }
      await sleep(1_000);
    }
    const allDoneAfterLastDueMs = Date.now() - lastDue;
    const started = await countRuns(client, userId, '');

    // ---- 3. delays, from visibility
    const startDelays: number[] = [];
    const endDelays: number[] = [];
    let unmatched = 0;
    for await (const info of client.workflow.list({ query: `WorkflowType = '${PLAN_WORKFLOW_TYPE}' AND ${USER_ID_ATTR.name} = '${userId}'` })) {
      const origin = scheduledRunOf(info.workflowId);
      if (!origin) {
        unmatched++;
        continue;
      }
      const due = Date.parse(origin.dueAt);
      startDelays.push(info.startTime.getTime() - due);
      if (info.closeTime && info.status.name === 'COMPLETED') endDelays.push(info.closeTime.getTime() - due);
    }
    const start = stats(startDelays);
    const end = stats(endDelays);

    // ---- report
    const pad = (s: string, w: number, right = false) => (right ? s.padStart(w) : s.padEnd(w));
    const row = (label: string, value: string) => console.log(`  ${pad(label, 52)}${pad(value, 28, true)}`);
    console.log(`\n  ${pad('', 52)}${pad('value', 28, true)}`);
    row('schedules created (201)', `${created}/${n}`);
    row('time to create them (50 in flight)', `${round(createMs / 1000)} s`);
    row('create latency p50 / p95', `${Math.round(stats(createLatencies).p50)} / ${Math.round(stats(createLatencies).p95)} ms`);
    row('runs started / completed', `${started} / ${completed}`);
    row('all completed, after the last due time', completed >= created ? `${round(allDoneAfterLastDueMs / 1000)} s` : 'not all');
    row('due → run start p50 / p95 / max', `${start.p50} / ${start.p95} / ${start.max} ms`);
    row('due → run completed p50 / p95 / max', `${end.p50} / ${end.p95} / ${end.max} ms`);

    const report = {
      generatedAt: new Date().toISOString(),
      machine: machine(),
      params: {
        schedules: n,
        windowMs: WINDOW_MS,
        leadS,
        lateWorker,
        inFlight: IN_FLIGHT,
        goal: GOAL,
        provider: 'offline demo model',
        memoryStore: config.MEMORY_STORE,
        worker: running.worker?.banner ?? null,
      },
      serverDynamicConfig: dynamicConfig,
      method: {
        api: 'src/api/server.ts startApi in the benchmark process (SCHEDULES_PER_USER = N); every schedule created over HTTP, 50 in flight',
        schedules: `each {"at": T}: T evenly over one minute from ${leadS} s after creation began, whole seconds (so ~${round(n / 60)} due per second)`,
        worker: `one \`dist/worker.js\` child process, built and started as \`npm run worker\` does, its defaults (react_mem with extraction, file memory store)${lateWorker ? ', started 5 s after the last due time' : ', running throughout'}`,
        startDelay: "visibility StartTime of each run's workflow − the due time in its id (Temporal appends the occurrence's nominal time)",
        endDelay: 'visibility CloseTime − the due time, runs closed Completed',
      },
      results: {
        created,
        refused: refusals.length,
        refusals: refusals.slice(0, 10),
        createMs: round(createMs),
        createLatencyMs: stats(createLatencies),
        createdBeforeFirstDue: createdBeforeDue,
        runsStarted: started,
        runsCompleted: completed,
        unmatchedRuns: unmatched,
        allCompletedAfterLastDueMs: completed >= created ? round(allDoneAfterLastDueMs) : null,
        workerStartedAfterLastDueMs,
        dueToStartMs: start,
        dueToCompletedMs: end,
      },
    };
    const RESULTS_FILE = resultsFile(lateWorker ? 'schedules-late-worker' : 'schedules');
    mkdirSync(path.dirname(RESULTS_FILE), { recursive: true });
    writeFileSync(RESULTS_FILE, `${JSON.stringify(report, null, 2)}\n`);
    console.log(`\nresults written to ${path.relative(process.cwd(), RESULTS_FILE)}`);
    if (completed < created || refusals.length > 0) process.exitCode = 1;
  } finally {
    const w = running.worker;
    if (w) {
      w.child.removeAllListeners('exit');
      w.child.kill('SIGTERM');
      await new Promise((r) => (w.child.exitCode !== null ? r(undefined) : w.child.once('exit', r)));
    }
    await client.connection.close();
    await api.close();
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof UsageError ? err.message : err);
  process.exitCode = 1;
});
