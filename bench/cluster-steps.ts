/**
 * Cluster benchmark, per-step part: ms per plan step with a zero-latency model on the dev server and
 * on the production-shaped cluster (16 shards on PostgreSQL, services as separate processes), in the
 * same run, reps alternating between the two so that the machine's load falls on both alike.
 *
 *   npm run bench -- --cluster [--cluster-steps 50] [--cluster-reps 5]
 *
 * scripts/bench.mjs starts both servers and sets TEMPORAL_ADDRESS (dev server) and
 * THREADLINE_BENCH_CLUSTER_ADDRESS (the cluster's frontend). One worker per server, in this process,
 * with the same provider, tools and in-memory step journal. Results in bench/results/cluster-steps.json.
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import type { Client } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, type Worker } from '@temporalio/worker';
import { z } from 'zod';
import { loadConfig } from '../src/config';
import type { ExecutionState } from '../src/planning/execution-state';
import { MemoryKeyValueStore } from '../src/store/kv';
import { connectClient } from '../src/temporal/connection';
import { createWorker } from '../src/worker';
import { PLAN_WORKFLOW_TYPE, withRunFeatures } from '../src/workflows/definitions';
import type { planExecutionWorkflow } from '../src/workflows/plan-execution';
import { resultsFile } from './server-metrics';
import { benchGoal, FIXED_ANSWER, NOOP_TOOL, ZeroLatencyProvider } from './zero-latency-provider';

const QUEUE = 'bench-cluster-steps';
const WARMUP_STEPS = 5;

const Cli = z.object({
  steps: z.coerce.number().int().min(1).max(2_000).default(50),
  reps: z.coerce.number().int().min(1).max(50).default(5),
});

interface Target {
  name: 'dev server' | 'cluster';
  address: string;
  client: Client;
  worker: Worker;
  running: Promise<void>;
  msPerStep: number[];
}

async function startTarget(name: Target['name'], address: string, dataDir: string): Promise<Target> {
  const config = loadConfig({ TEMPORAL_ADDRESS: address, TASK_QUEUE: QUEUE, DATA_DIR: dataDir, MEMORY_EXTRACTION: 'off' });
  const connection = await NativeConnection.connect({ address });
  const worker = await createWorker({ config, provider: new ZeroLatencyProvider(), extraTools: [NOOP_TOOL], store: new MemoryKeyValueStore(), taskQueue: QUEUE, connection });
  const running = worker.run().finally(() => connection.close());
  return { name, address, client: await connectClient(config), worker, running, msPerStep: [] };
}

async function runPlan(target: Target, steps: number): Promise<number> {
  const started = performance.now();
  const handle = await target.client.workflow.start<typeof planExecutionWorkflow>(PLAN_WORKFLOW_TYPE, {
    taskQueue: QUEUE,
    workflowId: `bench-cluster-${steps}-${randomUUID().slice(0, 8)}`,
    args: [withRunFeatures({ userId: 'bench-cluster', goal: benchGoal(steps), limits: { maxSteps: steps + 5, maxDepth: 0 } })],
    workflowExecutionTimeout: '10 minutes',
  });
  const state: ExecutionState = await handle.result();
  const ms = performance.now() - started;
  const done = state.steps.filter((s) => s.type === 'tool' && s.status === 'completed').length;
  if (state.status !== 'completed' || done !== steps || state.finalAnswer !== FIXED_ANSWER) {
    throw new Error(`${target.name}: expected ${steps} completed noop steps, got status ${state.status}, ${done} steps, lastError ${state.lastError ?? 'none'}`);
  }
  return ms;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const round = (x: number) => Number(x.toFixed(1));

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { 'cluster-steps': { type: 'string' }, 'cluster-reps': { type: 'string' } } });
  const { steps, reps } = Cli.parse({ steps: values['cluster-steps'], reps: values['cluster-reps'] });
  const devAddress = process.env.TEMPORAL_ADDRESS;
  const clusterAddress = process.env.THREADLINE_BENCH_CLUSTER_ADDRESS;
  if (!devAddress || !clusterAddress) throw new Error('TEMPORAL_ADDRESS and THREADLINE_BENCH_CLUSTER_ADDRESS must be set: run `npm run bench -- --cluster`');
  Runtime.install({ logger: new DefaultLogger('WARN') });
  console.log(`Threadline cluster benchmark — ms per plan step, ${steps} noop steps × ${reps} reps per server, zero-latency model, reps alternating`);
  console.log(`dev server ${devAddress} (1 shard, in-memory SQLite) · cluster ${clusterAddress} (16 shards, PostgreSQL, services as separate processes)`);

  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'threadline-bench-cluster-'));
  const targets = [await startTarget('dev server', devAddress, dataDir), await startTarget('cluster', clusterAddress, dataDir)];
  // A worker that stops must fail the benchmark, not leave it waiting on a result.
  const stopped = Promise.race(targets.map((t) => t.running.then(() => Promise.reject(new Error(`the ${t.name}'s worker stopped during the benchmark`)))));
  stopped.catch(() => undefined);
  const guard = (target: Target, n: number) => Promise.race([runPlan(target, n), stopped]);
  try {
    for (const target of targets) await guard(target, WARMUP_STEPS);
    for (let rep = 0; rep < reps; rep++) {
      // Alternate which goes first, so neither always runs right after the other's burst.
      for (const target of rep % 2 ? [...targets].reverse() : targets) target.msPerStep.push((await guard(target, steps)) / steps);
    }
  } finally {
    for (const t of targets) {
      if (t.worker.getState() === 'RUNNING') t.worker.shutdown();
      await t.running.catch(() => undefined);
      await t.client.connection.close();
    }
  }

  const [dev, cluster] = targets as [Target, Target];
  const ratio = median(cluster.msPerStep) / median(dev.msPerStep);
  for (const t of targets) console.log(`  ${t.name.padEnd(12)} ${round(median(t.msPerStep)).toFixed(1).padStart(7)} ms/step (median; reps ${t.msPerStep.map((x) => round(x)).join(', ')})`);
  console.log(`  cluster / dev server: ${ratio.toFixed(2)}×`);

  const file = resultsFile('cluster-steps');
  mkdirSync(path.dirname(file), { recursive: true });
  const report = {
    generatedAt: new Date().toISOString(),
    machine: { cores: os.cpus().length, cpu: os.cpus()[0]?.model ?? 'unknown', loadAverage: os.loadavg().map((x) => round(x)), node: process.version },
    params: { steps, reps, warmupSteps: WARMUP_STEPS, provider: 'zero-latency (bench/zero-latency-provider.ts)', tool: NOOP_TOOL.name },
    servers: {
      devServer: 'temporal server start-dev (CLI 1.5.1, server 1.29.1), in-memory SQLite, 1 shard, LOW_LATENCY_DYNAMIC_CONFIG',
      cluster: 'server 1.29.1 built from the Go proxy, PostgreSQL 15 persistence and visibility, 16 shards, frontend/history/matching/worker as processes, deploy/temporal/dynamicconfig.yaml',
    },
    results: Object.fromEntries(targets.map((t) => [t.name, { msPerStepMedian: round(median(t.msPerStep)), msPerStep: t.msPerStep.map((x) => round(x)) }])),
    clusterOverDevServer: Number(ratio.toFixed(2)),
  };
  writeFileSync(file, `${JSON.stringify(report, null, 2)}\n`);
  console.log(`results written to ${path.relative(process.cwd(), file)}`);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
