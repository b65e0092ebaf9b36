/**
 * Many-runs benchmark (latency issue, item 4): what a new user sees with many runs parked at once.
 * The REST API runs in this process, ONE worker (`src/worker.ts`, the offline demo model, the
 * default file memory store) in a child process whose memory is sampled every 200 ms. Then:
 *   1. N runs are started over HTTP with the goal `help me` (the demo model asks a question),
 *      50 requests in flight, and we wait until all of them are `waiting_user`;
 *   2. N replies go over HTTP (POST /v1/runs/:id/reply), 50 in flight, and we wait until every
 *      run has completed, up to a deadline.
 * It prints the time until all wait, the replies refused (any non-2xx) and lost (the run not
 * completed by the deadline), the time until all complete, the workers' CPU while the replies are
 * taken, what their SDK metrics (WORKER_METRICS_ADDRESS) say of it (workflow tasks and sticky cache
 * misses a run, how long a task waited to be picked up), and the worker's peak memory (VmHWM,
 * target ≤ 300 MB, issue 31).
 *   3. The floor (bench/many-runs-floor.ts), before Threadline's worker starts and again once it has
 *      stopped: the same N runs and replies on bare Temporal workers, and Threadline's figures against
 *      the mean of the two — a ratio in one run holds on any host; the seconds do not.
 *
 *   npm run bench -- --only many-runs [--many-runs N]     (default 1,000)
 *
 * `--workers N` starts N worker processes instead of one (started one after another; the memory
 * figures are the largest of any of them): `npm run bench -- --cluster` runs it with one and with two
 * workers on the production-shaped cluster.
 *
 * scripts/bench.mjs starts the private dev server and runs this file with TEMPORAL_ADDRESS set.
 * Results also go to bench/results/many-runs.json.
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
import { connectClient } from '../src/temporal/connection';
import { PLAN_WORKFLOW_TYPE, STATUS_ATTR, USER_ID_ATTR } from '../src/workflows/definitions';
import { machine, round } from './figures';
import { meanFloor, measureFloor, type FloorResult } from './many-runs-floor';
import { resultsFile, serverCpuMs } from './server-metrics';
import { countsBetween, mb, WorkerFleet } from './worker-fleet';
import { percentile, pool } from './worker-process';

const DEFAULT_RUNS = 1_000;
const IN_FLIGHT = 50;
const TARGET_PEAK_MB = 300;
/** A run still not `waiting_user` (after its start) or not completed (after its reply) this long after the last request is counted as stuck or lost. */
const SETTLE_DEADLINE_MS = 180_000;
const GOAL = 'help me';
const REPLY = 'remember that my color is green';
const RESULTS_FILE = resultsFile('many-runs');

class UsageError extends Error {}

function parseCli(): { runs: number; workers: number } {
  let values;
  try {
    ({ values } = parseArgs({ options: { 'many-runs': { type: 'string' }, workers: { type: 'string' } } }));
  } catch (err) {
    throw new UsageError(`bad arguments: ${err instanceof Error ? err.message : String(err)}`);
  }
  const count = (flag: string, raw: string, max: number) => {
    const parsed = z.coerce.number().int().min(1).max(max).safeParse(raw);
    if (!parsed.success) throw new UsageError(`${flag}: expected an integer from 1 to ${max}, got "${raw}"`);
    return parsed.data;
  };
  return { runs: count('--many-runs', values['many-runs'] ?? String(DEFAULT_RUNS), 100_000), workers: count('--workers', values.workers ?? '1', 8) };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Refusal {
  runId: string;
  status: number;
  body: string;
}

async function post(url: string, body: unknown): Promise<{ status: number; text: string }> {
  try {
    const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    return { status: res.status, text: await res.text() };
  } catch (err) {
    return { status: 0, text: err instanceof Error ? err.message : String(err) };
  }
}

/** Polls the visibility count of the user's runs matching `clause` until it reaches `n` or the deadline passes. */
async function waitForCount(client: Client, userId: string, clause: string, n: number, deadline: number): Promise<number> {
  const query = `WorkflowType = '${PLAN_WORKFLOW_TYPE}' AND ${USER_ID_ATTR.name} = '${userId}' AND ${clause}`;
  for (;;) {
    const { count } = await client.workflow.count(query);
    if (count >= n || Date.now() > deadline) return count;
    await sleep(500);
  }
}

async function main(): Promise<void> {
  const { runs: n, workers: workerCount } = parseCli();
  const address = process.env.TEMPORAL_ADDRESS;
  if (!address) throw new UsageError('TEMPORAL_ADDRESS is not set: run the benchmark with `npm run bench`, which starts its Temporal dev server.');
  const dynamicConfig = JSON.parse(process.env.THREADLINE_BENCH_DYNAMIC_CONFIG ?? '[]') as string[];
  console.log(
    `Threadline many-runs benchmark — ${n.toLocaleString('en-US')} runs asking a question, ${n.toLocaleString('en-US')} replies, ${IN_FLIGHT} requests in flight, offline demo model, ${workerCount === 1 ? 'one worker' : `${workerCount} workers`}`,
  );
  console.log(`${process.env.THREADLINE_BENCH_SERVER_LABEL ?? 'dev server'}: ${address}`);

  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'threadline-bench-many-'));
  const userId = `bench-${Date.now().toString(36)}`;
  // The worker as a new user runs it: its own defaults, the demo model (no OpenAI variables).
  const env: NodeJS.ProcessEnv = { ...process.env, TEMPORAL_ADDRESS: address, TASK_QUEUE: 'bench-many-runs', DATA_DIR: dataDir };
  delete env.OPENAI_API_KEY;
  delete env.OPENAI_BASE_URL;
  delete env.THREADLINE_WORKFLOW_BUNDLE;
  const config = loadConfig({ ...env, PORT: '0', HOST: '127.0.0.1' });

  // The dev server's process (scripts/bench.mjs passes its pid); the cluster's services are not counted.
  const serverPid = process.env.THREADLINE_BENCH_SERVER_LABEL ? NaN : undefined;
  const client = await connectClient(config);
  const floorRun = async (when: string) => {
    console.log(`\nthe floor, ${when}: the same ${n.toLocaleString('en-US')} runs and replies on bare Temporal workers (bench/many-runs-floor.ts)`);
    return measureFloor({ connection: client.connection, address, serverPid, n, inFlight: IN_FLIGHT, workers: workerCount, reply: REPLY, deadlineMs: SETTLE_DEADLINE_MS });
  };
  // The floor runs before Threadline's phases and again after them, never beside them: the two never
  // share the cores, and a load that drifts during the benchmark moves the floor's mean as it moves ours.
  const floorBefore = await floorRun("before Threadline's phases").catch(async (err: unknown) => {
    await client.connection.close();
    throw err;
  });

  let t = performance.now();
  const fleet = await WorkerFleet.start(workerCount, env);
  const worker = fleet.workers[0]!;
  const pids = fleet.pids;
  console.log(`${worker.banner} (pid ${pids.join(', ')}, started in ${Math.round(performance.now() - t)} ms)`);
  const workerExit = fleet.exited;

  const api = await startApi(config, { logger: pino({ level: 'silent' }) });
  try {
    // ---- 1. start N runs, wait until all wait for a reply
    fleet.phase = 'starting';
    const runIds: string[] = [];
    const startRefusals: Refusal[] = [];
    t = performance.now();
    await Promise.race([
      pool(
        Array.from({ length: n }, (_, i) => i),
        IN_FLIGHT,
        async () => {
          const { status, text } = await post(`${api.url}/v1/runs`, { userId, goal: GOAL });
          if (status === 201) runIds.push((JSON.parse(text) as { runId: string }).runId);
          else startRefusals.push({ runId: '', status, body: text.slice(0, 300) });
        },
      ),
      workerExit,
    ]);
    const startedMs = performance.now() - t;
    console.log(`started ${runIds.length} runs in ${round(startedMs / 1000)} s (${startRefusals.length} refused)`);
    const waiting = await Promise.race([waitForCount(client, userId, `${STATUS_ATTR.name} = 'waiting_user'`, runIds.length, Date.now() + SETTLE_DEADLINE_MS), workerExit]);
    const allWaitingMs = performance.now() - t;
    console.log(`${waiting}/${runIds.length} runs waiting_user after ${round(allWaitingMs / 1000)} s; worker RSS peak so far ${mb(fleet.peakRss.starting)} MB`);

    // ---- 2. reply to every run, wait until all complete
    fleet.phase = 'replying';
    const cpuBeforeReplies = fleet.cpuS();
    const serverCpuBefore = serverCpuMs(serverPid);
    const ownCpuBefore = process.cpuUsage();
    const countsBeforeReplies = await fleet.counts();
    const replyRefusals: Refusal[] = [];
    const latencies: number[] = [];
    t = performance.now();
    let sent = 0;
    await Promise.race([
      pool(runIds, IN_FLIGHT, async (runId) => {
        const began = performance.now();
        const { status, text } = await post(`${api.url}/v1/runs/${runId}/reply`, { text: REPLY });
        latencies.push(performance.now() - began);
        if (status < 200 || status > 299) replyRefusals.push({ runId, status, body: text.slice(0, 300) });
        if (++sent % Math.max(50, Math.round(n / 10)) === 0) console.log(`  ${sent}/${n} replies sent, ${round((performance.now() - t) / 1000)} s`);
      }),
      workerExit,
    ]);
    const repliedMs = performance.now() - t;
    const completed = await Promise.race([
      waitForCount(client, userId, `ExecutionStatus = 'Completed' AND ${STATUS_ATTR.name} = 'completed'`, runIds.length, Date.now() + SETTLE_DEADLINE_MS),
      workerExit,
    ]);
    const allCompleteMs = performance.now() - t;
    const replyCpuS = fleet.cpuS() - cpuBeforeReplies;
    const serverCpuAfter = serverCpuMs(serverPid);
    const serverReplyCpuS = serverCpuBefore === null || serverCpuAfter === null ? null : (serverCpuAfter - serverCpuBefore) / 1000;
    const ownCpu = process.cpuUsage(ownCpuBefore);
    const apiReplyCpuS = (ownCpu.user + ownCpu.system) / 1e6;
    const replyCounts = countsBetween(countsBeforeReplies, await fleet.counts());
    const lost: string[] = [];
    if (completed < runIds.length) {
      for await (const info of client.workflow.list({ query: `${USER_ID_ATTR.name} = '${userId}' AND ${STATUS_ATTR.name} != 'completed'` })) lost.push(info.workflowId);
    }
    const hwmKiB = fleet.hwmKiB();
    const peakRss = fleet.peakRss;
    latencies.sort((a, b) => a - b);
    await fleet.stop();
    const floorAfter = await floorRun("after Threadline's phases");
    const floor = meanFloor(floorBefore, floorAfter);

    // ---- report
    const pad = (s: string, w: number, right = false) => (right ? s.padStart(w) : s.padEnd(w));
    const row = (label: string, value: string, target = '', verdict = '') => console.log(`  ${pad(label, 48)}${pad(value, 22, true)}  ${pad(target, 12)}${verdict}`);
    const verdict = (ok: boolean) => (ok ? 'PASS' : 'MISS');
    console.log(`\n  ${pad('', 48)}${pad('value', 22, true)}  ${pad('target', 12)}`);
    row('runs started (201)', `${runIds.length}/${n}`);
    row('time until all waiting_user', `${round(allWaitingMs / 1000)} s`);
    row('replies refused (non-2xx)', String(replyRefusals.length), '0', verdict(replyRefusals.length === 0));
    row('replies lost (run not completed)', String(lost.length), '0', verdict(lost.length === 0));
    row('time to send all replies', `${round(repliedMs / 1000)} s`);
    row('time until all complete (from first reply)', completed >= runIds.length ? `${round(allCompleteMs / 1000)} s` : `not all (${completed})`);
    row('reply latency p50 / p95 / max', `${Math.round(percentile(latencies, 50))} / ${Math.round(percentile(latencies, 95))} / ${Math.round(latencies.at(-1) ?? NaN)} ms`);
    const cpuRow = (s: number | null) => (s === null ? 'not measured' : `${round(s)} s (${round((s * 1000) / n)} ms a run)`);
    row('CPU after the first reply: workers', cpuRow(replyCpuS));
    row('  the Temporal dev server', cpuRow(serverReplyCpuS));
    row('  this process (the API, the benchmark)', cpuRow(apiReplyCpuS));
    const perRun = (x: number) => round(x / n);
    row('workflow tasks a run: all / cache misses', `${perRun(replyCounts.temporal_workflow_task_execution_latency_count)} / ${perRun(replyCounts.temporal_sticky_cache_miss)}`);
    // The SDK's histograms are in milliseconds.
    const waits = replyCounts.temporal_workflow_task_schedule_to_start_latency_count;
    row('workflow task schedule-to-start, mean', `${waits ? Math.round(replyCounts.temporal_workflow_task_schedule_to_start_latency_sum / waits) : NaN} ms`);
    row('worker RSS peak: idle / starting / replying', `${mb(peakRss.idle)} / ${mb(peakRss.starting)} / ${mb(peakRss.replying)} MB`);
    row('worker peak memory (VmHWM)', `${mb(hwmKiB)} MB`, `≤ ${TARGET_PEAK_MB} MB`, verdict(mb(hwmKiB) <= TARGET_PEAK_MB));
    for (const r of replyRefusals.slice(0, 5)) console.log(`  refused: ${r.runId} ${r.status} ${r.body}`);
    const ratio = (ours: number | null, bare: number | null) => (ours === null || bare === null || !bare ? null : round(ours / bare, 2));
    const times = (x: number | null) => (x === null ? 'n/a' : `${x}×`);
    const vsFloor = {
      allComplete: ratio(completed >= runIds.length ? allCompleteMs : null, floor.allCompleteMs),
      replyP95: ratio(percentile(latencies, 95), floor.replyLatencyMs.p95),
      workerCpu: ratio(replyCpuS, floor.workerCpuRepliesS),
      serverCpu: ratio(serverReplyCpuS, floor.serverCpuRepliesS),
    };
    console.log(`\n  the floor (bare Temporal workers, the client's updates, no API): the mean of before and after`);
    row('replies refused / runs completed', `${floor.repliesRefused} / ${floor.completed}`);
    const seconds = (f: FloorResult) => (f.allCompleteMs === null ? 'not all' : `${round(f.allCompleteMs / 1000)} s`);
    row('  until all complete, before / after', `${seconds(floorBefore)} / ${seconds(floorAfter)}`);
    row(
      'time until all complete (from first reply)',
      floor.allCompleteMs === null ? `not all (${floor.completed})` : `${round(floor.allCompleteMs / 1000)} s`,
      '',
      `Threadline ${times(vsFloor.allComplete)}`,
    );
    row(
      'reply latency p50 / p95 / max',
      `${Math.round(floor.replyLatencyMs.p50)} / ${Math.round(floor.replyLatencyMs.p95)} / ${Math.round(floor.replyLatencyMs.max)} ms`,
      '',
      `Threadline's p95 ${times(vsFloor.replyP95)}`,
    );
    row('CPU after the first reply: workers', cpuRow(floor.workerCpuRepliesS), '', `Threadline ${times(vsFloor.workerCpu)}`);
    row('  the Temporal dev server', cpuRow(floor.serverCpuRepliesS), '', `Threadline ${times(vsFloor.serverCpu)}`);
    row('  this process (the client)', cpuRow(floor.clientCpuRepliesS));
    row(
      'workflow tasks a run: all / cache misses',
      `${perRun(floor.workerCountsReplies.temporal_workflow_task_execution_latency_count)} / ${perRun(floor.workerCountsReplies.temporal_sticky_cache_miss)}`,
    );
    row('worker peak memory (VmHWM)', `${floor.workerPeakMB} MB`);
    if (lost.length) console.log(`  not completed: ${lost.slice(0, 5).join(', ')}${lost.length > 5 ? ', …' : ''}`);

    const report = {
      generatedAt: new Date().toISOString(),
      machine: machine(),
      params: {
        runs: n,
        workers: workerCount,
        server: process.env.THREADLINE_BENCH_SERVER_LABEL ?? 'dev server',
        inFlight: IN_FLIGHT,
        goal: GOAL,
        reply: REPLY,
        provider: 'offline demo model',
        memoryStore: config.MEMORY_STORE,
        worker: worker.banner,
      },
      serverDynamicConfig: dynamicConfig,
      method: {
        api: 'src/api/server.ts startApi in the benchmark process; every request over HTTP',
        worker: `${workerCount} \`dist/worker.js\` child process(es), built and started as \`npm run worker\` does (scripts/lib.mjs nodeWorker and workerEnv: its node flags and malloc setting), otherwise its defaults; CPU (user + system) from /proc/<pid>/stat, summed over the workers, from the first reply until all complete; memory from /proc/<pid>/status every 200 ms (VmRSS per phase, VmHWM overall; the largest of the workers)`,
        waiting: `visibility count of the runs with ${STATUS_ATTR.name} = 'waiting_user'`,
        completed: `visibility count of the runs closed Completed with ${STATUS_ATTR.name} = 'completed'`,
        lost: `a run not completed ${SETTLE_DEADLINE_MS / 1000} s after the last reply was answered`,
      },
      results: {
        runsStarted: runIds.length,
        startsRefused: startRefusals.length,
        startMs: round(startedMs),
        allWaitingMs: round(allWaitingMs),
        waiting,
        repliesRefused: replyRefusals.length,
        refusals: replyRefusals.slice(0, 20),
        repliesLost: lost.length,
        lost: lost.slice(0, 20),
        sendRepliesMs: round(repliedMs),
        allCompleteMs: completed >= runIds.length ? round(allCompleteMs) : null,
        completed,
        replyLatencyMs: { p50: round(percentile(latencies, 50)), p95: round(percentile(latencies, 95)), max: round(latencies.at(-1) ?? NaN) },
        workerCpuRepliesS: round(replyCpuS),
        serverCpuRepliesS: serverReplyCpuS === null ? null : round(serverReplyCpuS),
        apiCpuRepliesS: round(apiReplyCpuS),
        workerCountsReplies: replyCounts,
        workerRssPeakMB: { idle: mb(peakRss.idle), starting: mb(peakRss.starting), replying: mb(peakRss.replying) },
        workerPeakMB: mb(hwmKiB),
      },
      floor: {
        method:
          "bench/many-runs-floor.ts: bare workers (bench/bare-ask-worker.ts), one local call, park on an update, three local calls; the replies are client updates from this process; run before Threadline's phases and after them, the figures their mean (bench/many-runs-floor.ts meanFloor)",
        ...floor,
        before: floorBefore,
        after: floorAfter,
      },
      vsFloor,
      targets: {
        repliesRefused: { max: 0, value: replyRefusals.length, pass: replyRefusals.length === 0 },
        repliesLost: { max: 0, value: lost.length, pass: lost.length === 0 },
        workerPeakMB: { max: TARGET_PEAK_MB, value: mb(hwmKiB), pass: mb(hwmKiB) <= TARGET_PEAK_MB },
      },
    };
    mkdirSync(path.dirname(RESULTS_FILE), { recursive: true });
    writeFileSync(RESULTS_FILE, `${JSON.stringify(report, null, 2)}\n`);
    console.log(`\nresults written to ${path.relative(process.cwd(), RESULTS_FILE)}`);
  } finally {
    await fleet.stop();
    await client.connection.close();
    await api.close();
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof UsageError ? err.message : err);
  process.exitCode = 1;
});
