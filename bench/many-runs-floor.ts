/**
 * The many-runs benchmark's floor, in the same run on the same server: what Temporal alone costs N runs
 * parked on a question and N replies, 50 in flight. Bare workers (bench/bare-ask-worker.ts, as many as
 * Threadline's, with its cache size, node flags and malloc setting) run `bareAskWorkflow`: one local call,
 * park until an update with a validator (as Threadline's reply is), then three local calls and the end —
 * the shape a Threadline run has there (its first call is a regular activity; after the reply three local
 * calls in one workflow task). The replies are the Temporal client's updates from this process (no HTTP).
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import { Client, type ConnectionLike } from '@temporalio/client';
import { bareReplyUpdate } from './bare-workflow';
import { round } from './figures';
import { serverCpuMs } from './server-metrics';
import { countsBetween, mb, WorkerFleet, type WorkerCounts } from './worker-fleet';
import { percentile, pool } from './worker-process';

const TASK_QUEUE = 'bench-many-runs-bare';
const CALLS_BEFORE = 1;
const CALLS_AFTER = 3;

export interface FloorResult {
  startMs: number;
  allWaitingMs: number;
  repliesRefused: number;
  allCompleteMs: number | null;
  completed: number;
  replyLatencyMs: { p50: number; p95: number; max: number };
  workerCpuRepliesS: number;
  serverCpuRepliesS: number | null;
  clientCpuRepliesS: number;
  workerCountsReplies: WorkerCounts;
  workerPeakMB: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Runs the floor; `deadlineMs` bounds each wait (as Threadline's settle deadline). */
export async function measureFloor({
  connection,
  address,
  serverPid,
  n,
  inFlight,
  workers,
  reply,
  deadlineMs,
}: {
  connection: ConnectionLike;
  address: string;
  /** The server's process, whose CPU is counted (undefined: scripts/bench.mjs's dev server; NaN: not counted). */
  serverPid: number | undefined;
  n: number;
  inFlight: number;
  workers: number;
  reply: string;
  deadlineMs: number;
}): Promise<FloorResult> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'threadline-bench-bare-'));
  const bundle = path.join(dir, 'bare-workflow.js');
  const { code } = await bundleWorkflowCode({ workflowsPath: require.resolve('./bare-workflow'), logger: new DefaultLogger('WARN') });
  writeFileSync(bundle, code);
  const fleet = await WorkerFleet.start(workers, { ...process.env, TEMPORAL_ADDRESS: address, TASK_QUEUE, BARE_WORKFLOW_BUNDLE: bundle }, 'bare-ask-worker.ts').catch((err: unknown) => {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  });
  console.log(`${fleet.workers[0]!.banner} (pid ${fleet.pids.join(', ')})`);
  // The default data converter, as the bare workers have.
  const client = new Client({ connection });
  const race = <T>(p: Promise<T>) => Promise.race([p, fleet.exited]);
  try {
    fleet.phase = 'starting';
    const tag = randomUUID().slice(0, 8);
    const ids = Array.from({ length: n }, (_, i) => `bench-bare-ask-${tag}-${i}`);
    const before = await fleet.counts();
    let t = performance.now();
    await race(pool(ids, inFlight, async (workflowId) => void (await client.workflow.start('bareAskWorkflow', { taskQueue: TASK_QUEUE, workflowId, args: [CALLS_BEFORE, CALLS_AFTER] }))));
    const startMs = performance.now() - t;
    // Parked: each run's first workflow task (its start and its local call) has completed.
    for (const deadline = Date.now() + deadlineMs; ; await sleep(250)) {
      const done = countsBetween(before, await fleet.counts()).temporal_workflow_task_execution_latency_count;
      if (done >= n) break;
      if (Date.now() > deadline) throw new Error(`floor: ${done} of ${n} bare runs parked by the deadline`);
    }
    const allWaitingMs = performance.now() - t;
    console.log(`floor: ${n} bare runs parked after ${round(allWaitingMs / 1000)} s`);

    fleet.phase = 'replying';
    const cpuBefore = fleet.cpuS();
    const serverBefore = serverCpuMs(serverPid);
    const ownBefore = process.cpuUsage();
    const countsBefore = await fleet.counts();
    const latencies: number[] = [];
    let refused = 0;
    t = performance.now();
    await race(
      pool(ids, inFlight, async (workflowId) => {
        const began = performance.now();
        await client.workflow
          .getHandle(workflowId)
          .executeUpdate(bareReplyUpdate, { args: [{ text: reply }] })
          .catch(() => refused++);
        latencies.push(performance.now() - began);
      }),
    );
    let completed = 0;
    for (const deadline = Date.now() + deadlineMs; ; await sleep(500)) {
      ({ count: completed } = await client.workflow.count(`WorkflowType = 'bareAskWorkflow' AND ExecutionStatus = 'Completed' AND WorkflowId STARTS_WITH 'bench-bare-ask-${tag}-'`));
      if (completed >= n || Date.now() > deadline) break;
    }
    const allCompleteMs = performance.now() - t;
    const serverAfter = serverCpuMs(serverPid);
    const own = process.cpuUsage(ownBefore);
    latencies.sort((a, b) => a - b);
    return {
      startMs: round(startMs),
      allWaitingMs: round(allWaitingMs),
      repliesRefused: refused,
      allCompleteMs: completed >= n ? round(allCompleteMs) : null,
      completed,
      replyLatencyMs: { p50: round(percentile(latencies, 50)), p95: round(percentile(latencies, 95)), max: round(latencies.at(-1) ?? NaN) },
      workerCpuRepliesS: round(fleet.cpuS() - cpuBefore),
      serverCpuRepliesS: serverBefore === null || serverAfter === null ? null : round((serverAfter - serverBefore) / 1000),
      clientCpuRepliesS: round((own.user + own.system) / 1e6),
      workerCountsReplies: countsBetween(countsBefore, await fleet.counts()),
      workerPeakMB: mb(fleet.hwmKiB()),
    };
  } finally {
    await fleet.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The floor measured before and after Threadline's phases, as one: the mean of each time and CPU figure
 * (a load that changes during the benchmark moves both sides alike), the larger peak, the later counts.
 */
export function meanFloor(before: FloorResult, after: FloorResult): FloorResult {
  const mean = (a: number, b: number) => round((a + b) / 2);
  const meanOrNull = (a: number | null, b: number | null) => (a === null || b === null ? null : mean(a, b));
  return {
    startMs: mean(before.startMs, after.startMs),
    allWaitingMs: mean(before.allWaitingMs, after.allWaitingMs),
    repliesRefused: before.repliesRefused + after.repliesRefused,
    allCompleteMs: meanOrNull(before.allCompleteMs, after.allCompleteMs),
    completed: Math.min(before.completed, after.completed),
    replyLatencyMs: {
      p50: mean(before.replyLatencyMs.p50, after.replyLatencyMs.p50),
      p95: mean(before.replyLatencyMs.p95, after.replyLatencyMs.p95),
      max: Math.max(before.replyLatencyMs.max, after.replyLatencyMs.max),
    },
    workerCpuRepliesS: mean(before.workerCpuRepliesS, after.workerCpuRepliesS),
    serverCpuRepliesS: meanOrNull(before.serverCpuRepliesS, after.serverCpuRepliesS),
    clientCpuRepliesS: mean(before.clientCpuRepliesS, after.clientCpuRepliesS),
    workerCountsReplies: after.workerCountsReplies,
    workerPeakMB: Math.max(before.workerPeakMB, after.workerPeakMB),
  };
}
