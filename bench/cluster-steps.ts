/**
 * Cluster benchmark, per-step part: ms per plan step and per session turn with a zero-latency model on
 * the dev server and on the production-shaped cluster (16 shards on PostgreSQL, services as separate
 * processes), in the same run, reps alternating between the two so that the machine's load falls on
 * both alike. Then, on the cluster, what each dynamic config setting the docs recommend changes: each
 * in turn back at the server's default (every service started again with it: some settings are read
 * once, and a rate limit kept its old value for a minute when the file was only re-read), rounds
 * rotating the order, measured by ms per plan step and by a burst of run lists (what the visibility
 * rate limits).
 *
 *   npm run bench -- --cluster [--cluster-steps 50] [--cluster-reps 5] [--cluster-turns 20] [--knob-rounds 3]
 *
 * scripts/bench.mjs starts both servers and sets TEMPORAL_ADDRESS (dev server),
 * THREADLINE_BENCH_CLUSTER_ADDRESS (the cluster's frontend) and THREADLINE_BENCH_CLUSTER_SETTINGS (the
 * recommended settings, scripts/cluster-settings.mjs); asked over IPC, it restarts the cluster with
 * other dynamic config (the worker and client here reconnect). One worker per server, in this process, with the
 * same provider, tools, in-memory step journal and in-memory memory store. Results in
 * bench/results/cluster-steps.json.
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
import { openMemory } from '../src/store/open-memory';
import { connectClient } from '../src/temporal/connection';
import { Sessions } from '../src/temporal/sessions';
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
  turns: z.coerce.number().int().min(1).max(1_000).default(20),
  knobRounds: z.coerce.number().int().min(0).max(20).default(3),
});
/** The recommended dynamic config (scripts/cluster-settings.mjs `dynamicConfig`): setting → value. */
const Settings = z.record(z.string(), z.number());
/** The server's own defaults of the recommended settings (server 1.29.1's dynamicconfig/constants.go). */
const SERVER_DEFAULTS: Record<string, number> = {
  'history.transferProcessorMaxPollRPS': 20,
  'history.timerProcessorMaxPollRPS': 20,
  'history.visibilityProcessorMaxPollRPS': 20,
  'history.outboundProcessorMaxPollRPS': 20,
  'frontend.namespaceRPS.visibility': 10,
};
/** Lists asked at once in a burst (GET /v1/runs and the Web UI's list are ListWorkflowExecutions). */
const LIST_BURST = 50;
/** Asks scripts/bench.mjs to restart the cluster with this dynamic config; resolves once it serves again. */
function restartCluster(yaml: string): Promise<number> {
  const send = process.send?.bind(process);
  if (!send) throw new Error('no IPC channel to scripts/bench.mjs: run `npm run bench -- --cluster`');
  return new Promise((resolve, reject) => {
    process.once('message', (reply: unknown) => {
      const r = z.object({ kind: z.string(), ms: z.number().optional(), message: z.string().optional() }).parse(reply);
      if (r.kind === 'restarted') resolve(r.ms ?? 0);
      else reject(new Error(`the cluster did not restart: ${r.message ?? r.kind}`));
    });
    send({ kind: 'dynamic-config', yaml });
  });
}

interface Target {
  name: 'dev server' | 'cluster';
  address: string;
  client: Client;
  worker: Worker;
  running: Promise<void>;
  msPerStep: number[];
  msPerTurn: number[];
  sessions: Sessions;
}

async function startTarget(name: Target['name'], address: string, dataDir: string): Promise<Target> {
  const config = loadConfig({ TEMPORAL_ADDRESS: address, TASK_QUEUE: QUEUE, DATA_DIR: dataDir, MEMORY_EXTRACTION: 'off', MEMORY_STORE: 'memory' });
  const provider = new ZeroLatencyProvider();
  // One memory for the worker and for Sessions (which creates a session's thread).
  const { memory } = await openMemory(config, provider);
  const connection = await NativeConnection.connect({ address });
  const worker = await createWorker({ config, provider, memory, extraTools: [NOOP_TOOL], store: new MemoryKeyValueStore(), taskQueue: QUEUE, connection });
  const running = worker.run().finally(() => connection.close());
  const client = await connectClient(config);
  return { name, address, client, worker, running, msPerStep: [], msPerTurn: [], sessions: new Sessions(client, memory, config) };
}

/** One session turn: a message that starts a run, until the run's answer (as bench/session.ts times it). */
async function turn(target: Target, sessionId: string, n: number): Promise<number> {
  const started = performance.now();
  const outcome = await target.sessions.send(sessionId, `note #${n}: the sky is blue`);
  if (outcome.kind !== 'new_run' || !outcome.runId) throw new Error(`${target.name}: turn ${n} expected a new run, got ${JSON.stringify(outcome)}`);
  const result = (await target.client.workflow.getHandle(outcome.runId).result()) as { status?: string };
  if (result.status !== 'completed') throw new Error(`${target.name}: turn ${n}'s run ended ${result.status ?? 'without a state'}`);
  return performance.now() - started;
}

/** LIST_BURST run lists at once (the first page each): ms until all are answered (the client retries those the rate limit refuses). */
async function listBurst(target: Target): Promise<number> {
  const started = performance.now();
  await Promise.all(
    Array.from({ length: LIST_BURST }, async () => {
      for await (const _ of target.client.workflow.list({ query: `ThreadlineUserId = 'bench-cluster'`, pageSize: 10 })) break;
    }),
  );
  return performance.now() - started;
}

/** The dynamic config file's text: the recommended settings, but for those back at the server's default. */
const dynamicConfigYaml = (settings: Record<string, number>, atDefault: readonly string[]): string =>
  Object.entries(settings)
    .filter(([key]) => !atDefault.includes(key))
    .map(([key, value]) => `${key}:\n  - value: ${value}\n`)
    .join('');

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
const round1 = (x: number) => round(x).toFixed(1);

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { 'cluster-steps': { type: 'string' }, 'cluster-reps': { type: 'string' }, 'cluster-turns': { type: 'string' }, 'knob-rounds': { type: 'string' } } });
  const { steps, reps, turns, knobRounds } = Cli.parse({ steps: values['cluster-steps'], reps: values['cluster-reps'], turns: values['cluster-turns'], knobRounds: values['knob-rounds'] });
  const settings = Settings.parse(JSON.parse(process.env.THREADLINE_BENCH_CLUSTER_SETTINGS ?? '{}'));
  const devAddress = process.env.TEMPORAL_ADDRESS;
  const clusterAddress = process.env.THREADLINE_BENCH_CLUSTER_ADDRESS;
  if (!devAddress || !clusterAddress) throw new Error('TEMPORAL_ADDRESS and THREADLINE_BENCH_CLUSTER_ADDRESS must be set: run `npm run bench -- --cluster`');
  Runtime.install({ logger: new DefaultLogger('WARN') });
  console.log(`Threadline cluster benchmark — ms per plan step, ${steps} noop steps × ${reps} reps per server, zero-latency model, reps alternating`);
  console.log(`dev server ${devAddress} (1 shard, in-memory SQLite) · cluster ${clusterAddress} (16 shards, PostgreSQL, services as separate processes)`);
  console.log(`then ${turns} session turns × ${reps} reps per server; then ${knobRounds} rounds of each recommended setting at the server's default`);

  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'threadline-bench-cluster-'));
  const targets = [await startTarget('dev server', devAddress, dataDir), await startTarget('cluster', clusterAddress, dataDir)];
  // A worker that stops must fail the benchmark, not leave it waiting on a result.
  const stopped = Promise.race(targets.map((t) => t.running.then(() => Promise.reject(new Error(`the ${t.name}'s worker stopped during the benchmark`)))));
  stopped.catch(() => undefined);
  const guarded = <T>(p: Promise<T>) => Promise.race([p, stopped]);
  const guard = (target: Target, n: number) => guarded(runPlan(target, n));
  /** Each knob variant (null: every recommended setting): ms per step and list bursts, on the cluster. */
  const knobs: { variant: string; atDefault: string[]; msPerStep: number[]; listBurstMs: number[] }[] = [];
  try {
    for (const target of targets) await guard(target, WARMUP_STEPS);
    for (let rep = 0; rep < reps; rep++) {
      // Alternate which goes first, so neither always runs right after the other's burst.
      for (const target of rep % 2 ? [...targets].reverse() : targets) target.msPerStep.push((await guard(target, steps)) / steps);
    }
    const sessionIds = new Map<Target, string>();
    for (const target of targets) {
      const { sessionId } = await guarded(target.sessions.create({ userId: 'bench-cluster' }));
      sessionIds.set(target, sessionId);
      for (let i = 0; i < 3; i++) await guarded(turn(target, sessionId, i)); // warm-up
    }
    for (let rep = 0; rep < reps; rep++) {
      for (const target of rep % 2 ? [...targets].reverse() : targets) {
        for (let i = 0; i < turns; i++) target.msPerTurn.push(await guarded(turn(target, sessionIds.get(target)!, 3 + rep * turns + i)));
      }
    }
    const cluster = targets[1]!;
    if (knobRounds > 0 && process.send && Object.keys(settings).length > 0) {
      const variants = [
        { variant: 'recommended', atDefault: [] as string[] },
        ...Object.keys(settings).map((key) => ({ variant: `${key} at default`, atDefault: [key] })),
        { variant: 'all at default', atDefault: Object.keys(settings) },
      ];
      for (const v of variants) knobs.push({ ...v, msPerStep: [], listBurstMs: [] });
      for (let round = 0; round < knobRounds; round++) {
        // Rotate the order each round, so that no variant always follows the same one.
        for (let i = 0; i < knobs.length; i++) {
          const knob = knobs[(i + round) % knobs.length]!;
          await restartCluster(dynamicConfigYaml(settings, knob.atDefault));
          await guard(cluster, WARMUP_STEPS);
          knob.msPerStep.push((await guard(cluster, steps)) / steps);
          knob.listBurstMs.push(await guarded(listBurst(cluster)));
          console.log(`  round ${round + 1}/${knobRounds} ${knob.variant}: ${round1(knob.msPerStep.at(-1)!)} ms/step, ${LIST_BURST} lists in ${Math.round(knob.listBurstMs.at(-1)!)} ms`);
        }
      }
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
  const turnRatio = median(cluster.msPerTurn) / median(dev.msPerTurn);
  for (const t of targets) console.log(`  ${t.name.padEnd(12)} ${round1(median(t.msPerStep)).padStart(7)} ms/step (median; reps ${t.msPerStep.map((x) => round(x)).join(', ')})`);
  console.log(`  cluster / dev server: ${ratio.toFixed(2)}×`);
  for (const t of targets) console.log(`  ${t.name.padEnd(12)} ${round1(median(t.msPerTurn)).padStart(7)} ms/session turn (median of ${t.msPerTurn.length})`);
  console.log(`  cluster / dev server: ${turnRatio.toFixed(2)}× per session turn`);
  const baseline = knobs[0];
  for (const k of knobs) {
    const step = median(k.msPerStep);
    const lists = median(k.listBurstMs);
    const vs = baseline && k !== baseline ? ` (${(step / median(baseline.msPerStep)).toFixed(2)}× per step, ${(lists / median(baseline.listBurstMs)).toFixed(2)}× lists)` : '';
    console.log(`  ${k.variant.padEnd(52)} ${round1(step).padStart(7)} ms/step, ${Math.round(lists)} ms for ${LIST_BURST} lists${vs}`);
  }

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
    results: Object.fromEntries(
      targets.map((t) => [
        t.name,
        { msPerStepMedian: round(median(t.msPerStep)), msPerStep: t.msPerStep.map((x) => round(x)), msPerTurnMedian: round(median(t.msPerTurn)), turns: t.msPerTurn.length },
      ]),
    ),
    clusterOverDevServer: Number(ratio.toFixed(2)),
    clusterOverDevServerPerTurn: Number(turnRatio.toFixed(2)),
    knobs: {
      method: `each variant: the dynamic config file rewritten and every service started again with it, ${WARMUP_STEPS} warm-up steps, then ${steps} steps and ${LIST_BURST} run lists at once; ${knobRounds} rounds, order rotating`,
      serverDefaults: SERVER_DEFAULTS,
      variants: knobs.map((k) => ({
        variant: k.variant,
        msPerStepMedian: round(median(k.msPerStep)),
        msPerStep: k.msPerStep.map((x) => round(x)),
        listBurstMsMedian: Math.round(median(k.listBurstMs)),
      })),
    },
  };
  writeFileSync(file, `${JSON.stringify(report, null, 2)}\n`);
  console.log(`results written to ${path.relative(process.cwd(), file)}`);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
