/**
 * Orchestration benchmark: what does one plan step cost on this machine, and how
 * much of that is Threadline rather than Temporal? On one private dev server, in
 * one process, it runs
 *   (a) PlanExecutionWorkflow on an N-step plan of no-op tools (zero-latency model),
 *   (b) a bare workflow running N no-op activities in sequence, and (b') N local activities,
 *   (c) the same plan as (a) in a plain loop over the activity functions and the same memory store, no Temporal,
 *   (d) a tree run (seed 003) of depth 3 and fan-out 5: ms per ReAct iteration against (a)'s per step; then the
 *       same runs on one worker alone in a process of its own (bench/orchestration-worker.ts), whose peak
 *       RSS is the tree's memory figure (this process holds five workers: its own peak is theirs together),
 *   (d') (d)'s shape in a bare workflow: one regular call, then 5 child workflows of 10 local calls each —
 *        Temporal's floor for a tree, as (b') is for a plan: d/d' is Threadline's own share, d'/b' the child runs',
 *   (e) (a) with a tool that returns 100 kB per step: history bytes per step (target flat, ≤ 2 kB),
 *   (f) the same loop as (a) in LangGraph.js with its PostgreSQL checkpointer (bench/peers/langgraph.ts):
 *       a/f ≤ 1.5 per step; skipped when its scratch folder is not installed,
 *   (g) (a) with every payload encrypted (THREADLINE_ENCRYPTION_KEY),
 *   (h) (a) with a 400 kB goal, so the run's input, query answers and result pass the claim check,
 *   (h') (h) with the claim check off (CLAIM_CHECK_THRESHOLD=0): h/h' is the claim check's own cost,
 *        since (h) differs from (a) by the goal's memory work too; g/a is encryption's (all else equal),
 * and prints ms per step (median over repetitions), history events and bytes per
 * step, and the targets: (a) ≤ 15 ms per step, a/b ≤ 1.2 and ≤ 8 history events per tool step for (a).
 *
 *   npm run bench -- [--steps 50] [--reps 3] [--warmup-steps 5] [--dynamic-config KEY=VALUE ...]
 *
 * scripts/bench.mjs starts the private dev server and runs this file with
 * TEMPORAL_ADDRESS set. `--dynamic-config` (repeatable) goes to that server, e.g.
 * `--dynamic-config system.enableActivityEagerExecution=true` to see the same
 * runs without the activity dispatch round trip through the task queue; this
 * file gets the list in THREADLINE_BENCH_DYNAMIC_CONFIG (a JSON array) to record it.
 *
 * Results also go to bench/results/orchestration.json.
 */
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { connectClient } from '../src/temporal/connection';
import { codecDelta, codecSnapshot, codecSum, installCodecProfile, type CodecProfile } from './codec-profile';
import { encodedBytes } from './history';
import { perUnit, THREAD_KINDS, ThreadCpu, type CpuByKind } from './thread-cpu';
import { latencyBetween, resultsFile, scrapeMetrics, type LatencyRow } from './server-metrics';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { z } from 'zod';
import { createPlanActivities, type PlanActivities } from '../src/activities/plan-activities';
import { loadConfig } from '../src/config';
import * as model from '../src/planning/execution-state';
import type { ExecutionState } from '../src/planning/execution-state';
import { MemoryKeyValueStore } from '../src/store/kv';
import { openMemory } from '../src/store/open-memory';
import { BUILTIN_TOOLS, ToolRegistry } from '../src/tools/registry';
import { createWorker } from '../src/worker';
import { PLAN_WORKFLOW_TYPE, withRunFeatures } from '../src/workflows/definitions';
import type { planExecutionWorkflow } from '../src/workflows/plan-execution';
import type { bareTreeWorkflow, bareWorkflow } from './bare-workflow';
import { startLangGraphPeer, type LangGraphPeer, type PeerRun } from './peers/langgraph';
import { benchGoal, benchTreeGoal, BIG_TOOL, FIXED_ANSWER, NOOP_TOOL, ZeroLatencyProvider } from './zero-latency-provider';
import type { PlanExecutionInput } from '../src/engine/contract';

const PLAN_QUEUE = 'bench-plan';
/** (g): the same plan workflow with every payload encrypted (THREADLINE_ENCRYPTION_KEY). */
const ENCRYPTED_QUEUE = 'bench-plan-encrypted';
const TARGET_ENCRYPTION_RATIO = 1.1;
/** (h): the same plan workflow with a goal this large, far past CLAIM_CHECK_THRESHOLD (128 KiB). */
const CLAIM_CHECK_QUEUE = 'bench-plan-claim-check';
const CLAIM_CHECK_GOAL_BYTES = 400_000;
/** (h'): (h) with the claim check off, on its own worker and client. */
const NO_CLAIM_CHECK_QUEUE = 'bench-plan-no-claim-check';
const TARGET_CLAIM_CHECK_RATIO = 1.1;
const BARE_QUEUE = 'bench-bare';
/** Issue 13: (a) per step within 1.2× the bare workflow, and at most 15 ms. */
const TARGET_RATIO = 1.2;
const TARGET_MS_PER_STEP = 15;
const TARGET_EVENTS_PER_STEP = 8;
/** (d): a tree of depth 3 and this fan-out; its ms per ReAct iteration against (a)'s per step. */
const TREE_FANOUT = 5;
const TARGET_TREE_RATIO = 1.2;
/** (d) again on a worker alone in its own process: its peak RSS, at most this (issue 31). */
const TREE_ALONE_QUEUE = 'bench-tree-alone';
const TARGET_TREE_WORKER_RSS_MIB = 400;
/** (a) per step against (f), LangGraph.js + PostgresSaver checkpointing each super-step before the next. */
const TARGET_PEER_RATIO = 1.5;
const ArgsSchema = z
  .object({
    steps: z.coerce.number().int().min(2).max(200),
    reps: z.coerce.number().int().min(1).max(50),
    warmupSteps: z.coerce.number().int().min(1).max(50),
    dynamicConfig: z.array(z.string().regex(/^[\w.]+=.+$/, 'expected KEY=VALUE')),
  })
  // The marginal events per step compare the warm-up run with a full one.
  .refine((a) => a.warmupSteps < a.steps, { path: ['warmupSteps'], message: 'must be less than --steps' });
type Args = z.infer<typeof ArgsSchema>;

/** Bad command-line arguments: reported without a stack trace. */
class UsageError extends Error {}

/** The CLI that started the server (scripts/bench.mjs sets THREADLINE_TEMPORAL_BIN). */
const TEMPORAL_BIN = process.env.THREADLINE_TEMPORAL_BIN ?? path.resolve(__dirname, '..', '.tools', 'bin', process.platform === 'win32' ? 'temporal.exe' : 'temporal');

/** Address of the server scripts/bench.mjs started for this run. */
function serverAddress(): string {
  const address = process.env.TEMPORAL_ADDRESS;
  if (!address) throw new UsageError('TEMPORAL_ADDRESS is not set: run the benchmark with `npm run bench`, which starts its Temporal dev server.');
  return address;
}

/** The server's dynamic config as scripts/bench.mjs applied it (none when run otherwise). */
function dynamicConfigFromEnv(): unknown {
  const raw = process.env.THREADLINE_BENCH_DYNAMIC_CONFIG;
  if (!raw) return [];
  try {
    return JSON.parse(raw) as unknown;
  } catch {
    throw new UsageError(`THREADLINE_BENCH_DYNAMIC_CONFIG is not JSON: ${raw}`);
  }
}

function parseCli(): Args {
  let values;
  try {
    ({ values } = parseArgs({
      options: {
        steps: { type: 'string', default: '50' },
        reps: { type: 'string', default: '3' },
        'warmup-steps': { type: 'string', default: '5' },
      },
    }));
  } catch (err) {
    // e.g. an unknown option (--dynamic-config is taken off by scripts/bench.mjs)
    throw new UsageError(`bad arguments: ${err instanceof Error ? err.message : String(err)}`);
  }
  const parsed = ArgsSchema.safeParse({
    steps: values.steps,
    reps: values.reps,
    warmupSteps: values['warmup-steps'],
    dynamicConfig: dynamicConfigFromEnv(),
  });
  if (!parsed.success) throw new UsageError(`bad arguments:\n${z.prettifyError(parsed.error)}`);
  return parsed.data;
}

// ---------------------------------------------------------------- histories

type History = temporal.api.history.v1.IHistory;

const round = (x: number, digits = 2) => Number(x.toFixed(digits));

interface EventTypeStats {
  count: number;
  bytes: number;
  /** Server time between the previous event and events of this type, summed: where the wall time went. */
  msBefore: number;
}

interface HistoryStats {
  events: number;
  /** Size of the History protobuf message as encoded on the wire. */
  bytes: number;
  byType: Record<string, EventTypeStats>;
}

function historyStats(history: History): HistoryStats {
  const events = history.events ?? [];
  const byType: Record<string, EventTypeStats> = {};
  const timeOf = (e: temporal.api.history.v1.IHistoryEvent) => Number(e.eventTime?.seconds ?? 0) * 1000 + (e.eventTime?.nanos ?? 0) / 1e6;
  let previous: number | undefined;
  for (const event of events) {
    const name = (temporal.api.enums.v1.EventType[event.eventType ?? 0] ?? 'UNKNOWN').replace(/^EVENT_TYPE_/, '');
    const entry = (byType[name] ??= { count: 0, bytes: 0, msBefore: 0 });
    entry.count++;
    entry.bytes += temporal.api.history.v1.HistoryEvent.encode(event).finish().length;
    const at = timeOf(event);
    if (previous !== undefined) entry.msBefore = round(entry.msBefore + at - previous, 1);
    previous = at;
  }
  return { events: events.length, bytes: encodedBytes(history), byType };
}

// ---------------------------------------------------------------- the three contenders

interface Measured {
  ms: number;
  history?: HistoryStats;
  /** Codec work during the run (all workers and clients of the process). */
  codecs?: CodecProfile;
}

interface Bench {
  client: Client;
  activities: PlanActivities;
}

function planInput(steps: number, tool: 'noop' | 'big' = 'noop', padBytes = 0, userId = 'bench'): PlanExecutionInput {
  return withRunFeatures({ userId, goal: benchGoal(steps, tool, padBytes), limits: { maxSteps: steps + 5, maxDepth: 0 } });
}

/** A finished run must have done exactly what was asked, or the timing means nothing. */
function checkPlanResult(state: ExecutionState, steps: number, what: string): void {
  const tools = state.steps.filter((s) => s.type === 'tool');
  const completed = tools.filter((s) => s.status === 'completed').length;
  if (state.status !== 'completed' || completed !== steps || state.finalAnswer !== FIXED_ANSWER) {
    throw new Error(`${what}: expected ${steps} completed noop steps and the fixed answer; got status ${state.status}, ${completed} completed tool steps, lastError ${state.lastError ?? 'none'}`);
  }
}

/** Which case a plan run is: its queue (worker), client, tool and goal padding. */
interface PlanCase {
  tag: 'a' | 'e' | 'g' | 'h' | 'h2';
  client: Client;
  taskQueue: string;
  tool?: 'noop' | 'big';
  padBytes?: number;
  /**
   * The runs' user. A run's end hands its goal to that user's memory workflow (extraction), which runs
   * on the queue of whichever worker first started it and decodes with that worker's codecs: each
   * case with other codecs needs its own user, or (g)'s sealed jobs land on a worker without the key
   * (failing workflow tasks, retried in the background) and (h)'s 400 kB extractions on (a)'s worker.
   */
  userId?: string;
}

async function runPlanWorkflow({ tag, client, taskQueue, tool = 'noop', padBytes = 0, userId }: PlanCase, steps: number): Promise<Measured> {
  const codecsBefore = codecSnapshot();
  const started = performance.now();
  const handle = await client.workflow.start<typeof planExecutionWorkflow>(PLAN_WORKFLOW_TYPE, {
    taskQueue,
    workflowId: `bench-${tag}-${steps}-${randomUUID().slice(0, 8)}`,
    args: [planInput(steps, tool, padBytes, userId)],
    workflowExecutionTimeout: '5 minutes',
  });
  const state = await handle.result();
  const ms = performance.now() - started;
  const codecs = codecDelta(codecsBefore, codecSnapshot());
  checkPlanResult(state, steps, `(${tag}) PlanExecutionWorkflow`);
  return { ms, history: historyStats(await handle.fetchHistory()), codecs };
}

/** (d'): (d)'s workflows and calls with nothing of Threadline's, `fanout` children of 2 × `fanout` local calls (a leaf's two iterations). */
async function runBareTree({ client }: Bench, fanout: number): Promise<{ ms: number; iterations: number }> {
  const started = performance.now();
  const perChild = 2 * fanout;
  const ran = await client.workflow.execute<typeof bareTreeWorkflow>('bareTreeWorkflow', {
    taskQueue: BARE_QUEUE,
    workflowId: `bench-d2-${fanout}-${randomUUID().slice(0, 8)}`,
    args: [fanout, perChild],
    workflowExecutionTimeout: '5 minutes',
  });
  const ms = performance.now() - started;
  if (ran !== fanout * perChild) throw new Error(`(d') bare tree ran ${ran} of ${fanout * perChild} local activities`);
  return { ms, iterations: ran };
}

async function runBareWorkflow({ client }: Bench, steps: number, type: 'bareWorkflow' | 'bareLocalWorkflow' = 'bareWorkflow'): Promise<Measured> {
  const started = performance.now();
  const handle = await client.workflow.start<typeof bareWorkflow>(type, {
    taskQueue: BARE_QUEUE,
    workflowId: `bench-b-${steps}-${randomUUID().slice(0, 8)}`,
    args: [steps],
    workflowExecutionTimeout: '5 minutes',
  });
  const ran = await handle.result();
  const ms = performance.now() - started;
  if (ran !== steps) throw new Error(`(b) bare workflow ran ${ran} of ${steps} activities`);
  return { ms, history: historyStats(await handle.fetchHistory()) };
}

/** A tree run's figures: wall time per ReAct iteration, and the histories of all its workflows. */
interface TreeMeasured {
  ms: number;
  iterations: number;
  workflows: number;
  totalEvents: number;
  largestEvents: number;
  largestBytes: number;
  peakRssMiB: number;
  /** The process's RSS when the run began (its workers, (a)'s to (h')'s and the bare one, already loaded): what the run added is the difference. */
  startRssMiB: number;
}

/**
 * (d) A tree run (seed 003): a root with `fanout` groups of `fanout` leaves, each leaf one noop
 * call and a finish (two ReAct iterations); each group runs as a child run.
 */
async function runTreeWorkflow({ client }: Bench, fanout: number, taskQueue = PLAN_QUEUE): Promise<TreeMeasured> {
  const startRss = process.memoryUsage().rss;
  let peakRss = startRss;
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 50);
  const started = performance.now();
  const runId = `bench-d-${fanout}-${randomUUID().slice(0, 8)}`;
  const input: PlanExecutionInput = {
    userId: 'bench',
    goal: benchTreeGoal(fanout),
    limits: { maxSteps: 25, maxDepth: 0 },
    engine: 'tree',
    treeLimits: { maxDepth: 3, maxFanout: fanout, maxIterations: 5 },
  };
  const handle = await client.workflow.start<typeof planExecutionWorkflow>(PLAN_WORKFLOW_TYPE, { taskQueue, workflowId: runId, args: [input], workflowExecutionTimeout: '5 minutes' });
  const state = await handle.result();
  const ms = performance.now() - started;
  clearInterval(sampler);
  const leaves = fanout * fanout;
  const done = state.tree ? dfsCount(state.tree) : 0;
  if (state.status !== 'completed' || done !== 1 + fanout + leaves)
    throw new Error(`(d) tree run: expected ${1 + fanout + leaves} completed tasks; got status ${state.status}, ${done}, lastError ${state.lastError ?? 'none'}`);
  const ids = [runId, ...Array.from({ length: fanout }, (_, g) => `${runId}.t1-${g + 1}`)];
  const histories = await Promise.all(ids.map(async (id) => historyStats(await client.workflow.getHandle(id).fetchHistory())));
  return {
    ms,
    iterations: leaves * 2,
    workflows: ids.length,
    totalEvents: histories.reduce((sum, h) => sum + h.events, 0),
    largestEvents: Math.max(...histories.map((h) => h.events)),
    largestBytes: Math.max(...histories.map((h) => h.bytes)),
    peakRssMiB: round(peakRss / 2 ** 20, 1),
    startRssMiB: round(startRss / 2 ** 20, 1),
  };
}

/** RSS and its high-water mark (VmHWM) of a process, in MiB, from /proc (Linux); null elsewhere or once it is gone. */
function processMemoryMiB(pid: number): { rss: number; hwm: number } | null {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN) / 1024;
    return { rss: round(field('VmRSS'), 1), hwm: round(field('VmHWM'), 1) };
  } catch {
    return null;
  }
}

/** (d) on a worker alone in its own process (bench/orchestration-worker.ts): that process's memory and the runs' time. */
interface TreeAlone {
  msPerIterationReps: number[];
  msPerIterationMedian: number;
  /** The worker process's RSS once it had started and run a warm-up tree. */
  readyRssMiB: number;
  /** Its highest RSS while the measured runs ran (sampled every 50 ms). */
  peakRssMiB: number;
  /** Its RSS high-water mark over its whole life, start-up included (VmHWM): the figure the target is about. */
  hwmMiB: number;
}

/**
 * (d) again, `reps` times, on one Threadline worker in a process of its own, made as (a)'s worker is: the
 * peak memory of a worker serving the tree run, which the benchmark's own process (five workers) cannot show.
 */
async function runTreeAlone(bench: Bench, env: Record<string, string>, reps: number): Promise<TreeAlone | { skipped: string }> {
  if (process.platform !== 'linux') return { skipped: 'the worker process is measured from /proc, Linux only' };
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(__dirname, 'orchestration-worker.ts')], {
    cwd: path.resolve(__dirname, '..'),
    env: { ...process.env, ...env, TASK_QUEUE: TREE_ALONE_QUEUE },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<never>((_, reject) => child.once('exit', (code) => reject(new Error(`the tree worker process exited (${code})`))));
  exited.catch(() => undefined);
  try {
    await Promise.race([
      exited,
      new Promise<void>((resolve) => {
        let out = '';
        child.stdout.on('data', (chunk: Buffer) => {
          out += chunk.toString();
          if (/^ready$/m.test(out)) resolve();
        });
      }),
    ]);
    const pid = child.pid!;
    await Promise.race([exited, runTreeWorkflow(bench, 2, TREE_ALONE_QUEUE)]); // warm-up
    const readyRssMiB = processMemoryMiB(pid)?.rss ?? NaN;
    let peakRssMiB = readyRssMiB;
    const sampler = setInterval(() => (peakRssMiB = Math.max(peakRssMiB, processMemoryMiB(pid)?.rss ?? 0)), 50);
    const perIteration: number[] = [];
    try {
      for (let rep = 0; rep < reps; rep++) {
        const run = await Promise.race([exited, runTreeWorkflow(bench, TREE_FANOUT, TREE_ALONE_QUEUE)]);
        perIteration.push(round(run.ms / run.iterations));
      }
    } finally {
      clearInterval(sampler);
    }
    return { msPerIterationReps: perIteration, msPerIterationMedian: round(median(perIteration), 3), readyRssMiB, peakRssMiB: round(peakRssMiB, 1), hwmMiB: processMemoryMiB(pid)?.hwm ?? NaN };
  } finally {
    if (child.exitCode === null) {
      const stopped = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      // A worker that does not drain within 10 s is stopped for good.
      const kill = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await stopped;
      clearTimeout(kill);
    }
  }
}

/** Completed tasks of a tree. */
function dfsCount(node: NonNullable<ExecutionState['tree']>): number {
  return (node.status === 'completed' ? 1 : 0) + node.subtasks.reduce((sum, c) => sum + dfsCount(c), 0);
}

/**
 * The workflow's loop without Temporal: the same activity functions and pure
 * transitions, each activity call in a fresh mock Activity Context (the step
 * journal is keyed by activity id, so every call needs its own).
 */
async function runInProcess({ activities }: Bench, steps: number): Promise<Measured> {
  const started = performance.now();
  const workflowExecution = { workflowId: `bench-c-${steps}-${randomUUID().slice(0, 8)}`, runId: randomUUID() };
  let activityNo = 0;
  const inActivity = <I, O>(fn: (input: I) => Promise<O>, input: I): Promise<O> => new MockActivityEnvironment({ activityId: String(++activityNo), workflowExecution }).run(fn, input);
  const input = planInput(steps);

  let state = model.initialState({ runId: workflowExecution.workflowId, userId: input.userId, goal: input.goal, model: '' }, new Date());
  const planned = await inActivity(activities.planRun, { state });
  // As the plan engine takes it: with the run's memory thread, so (c)'s steps write and read memory as (a)'s do.
  state = model.applyPlan({ ...state, model: planned.model, threadId: planned.threadId ?? null }, planned.steps, new Date());
  for (;;) {
    const step = model.nextPendingStep(state);
    if (!step) throw new Error('(c) the plan ran out without a respond step');
    state = model.startStep(state, step.id, new Date());
    if (step.type === 'respond') {
      const { answer } = await inActivity(activities.respond, { state, stepId: step.id });
      state = model.complete(model.finishStep(state, step.id, 'completed', null, new Date()), answer, new Date());
      break;
    }
    const result = await inActivity(activities.executeStep, { state, stepId: step.id });
    state = model.finishStep(state, step.id, result.outcome, result.observation, new Date());
    if (result.decision.decision === 'replace_remaining') state = model.replaceRemaining(state, result.decision.steps ?? [], new Date());
    else if (result.decision.decision !== 'continue') throw new Error(`(c) unexpected decision ${result.decision.decision}`);
  }
  const ms = performance.now() - started;
  checkPlanResult(state, steps, '(c) in-process loop');
  return { ms };
}

// ---------------------------------------------------------------- report

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? (s[mid] ?? NaN) : ((s[mid - 1] ?? NaN) + (s[mid] ?? NaN)) / 2;
};

interface ContenderResult {
  label: string;
  msPerStepMedian: number;
  msPerStepReps: number[];
  historyEventsPerStep?: number;
  historyBytesPerStep?: number;
  historyEvents?: number;
  historyBytes?: number;
  eventTypes?: Record<string, EventTypeStats>;
}

function summarize(label: string, runs: Measured[], steps: number): ContenderResult {
  const perStep = runs.map((r) => r.ms / steps);
  const result: ContenderResult = { label, msPerStepMedian: round(median(perStep), 3), msPerStepReps: perStep.map((x) => round(x, 3)) };
  const history = runs.at(-1)?.history;
  if (history) {
    result.historyEvents = history.events;
    result.historyBytes = history.bytes;
    result.historyEventsPerStep = round(history.events / steps);
    result.historyBytesPerStep = Math.round(history.bytes / steps);
    result.eventTypes = history.byType;
  }
  return result;
}

function machineInfo() {
  const cpus = os.cpus();
  let temporalCli = 'unknown';
  try {
    temporalCli = execFileSync(TEMPORAL_BIN, ['--version'], { encoding: 'utf8' }).trim();
  } catch {
    // reported as unknown
  }
  return {
    cores: cpus.length,
    cpu: cpus[0]?.model ?? 'unknown',
    memoryGiB: round(os.totalmem() / 2 ** 30, 1),
    /** 1/5/15-minute load averages at start: other work on the machine skews absolute timings. */
    loadAverage: os.loadavg().map((x) => round(x)),
    platform: `${os.platform()} ${os.release()} ${os.arch()}`,
    node: process.version,
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- a package's own version, read where it is reported
    temporalSdk: (require('@temporalio/worker/package.json') as { version: string }).version,
    temporalCli,
  };
}

function pad(text: string, width: number, right = false): string {
  return right ? text.padStart(width) : text.padEnd(width);
}

function printEventTypes(title: string, stats: Record<string, EventTypeStats>, steps: number): void {
  console.log(`\n${title}`);
  console.log(`  ${pad('event type', 36)}${pad('count', 7, true)}${pad('per step', 10, true)}${pad('bytes', 10, true)}${pad('share', 8, true)}${pad('ms before, mean', 17, true)}`);
  const total = Object.values(stats).reduce((sum, s) => sum + s.bytes, 0);
  for (const [name, s] of Object.entries(stats).sort((x, y) => y[1].bytes - x[1].bytes)) {
    const share = `${((100 * s.bytes) / total).toFixed(1)}%`;
    console.log(
      `  ${pad(name, 36)}${pad(String(s.count), 7, true)}${pad((s.count / steps).toFixed(2), 10, true)}${pad(String(s.bytes), 10, true)}` +
        `${pad(share, 8, true)}${pad((s.msBefore / s.count).toFixed(1), 17, true)}`,
    );
  }
}

function summarizeTree(reps: TreeMeasured[]) {
  const perIteration = reps.map((r) => r.ms / r.iterations);
  const last = reps.at(-1);
  return {
    label: `(d) tree run, depth 3, fan-out ${TREE_FANOUT}`,
    msPerIterationMedian: round(median(perIteration), 3),
    msPerIterationReps: perIteration.map((x) => round(x, 2)),
    iterations: last?.iterations ?? 0,
    workflows: last?.workflows ?? 0,
    eventsPerIteration: last ? round(last.totalEvents / last.iterations) : NaN,
    largestEvents: last?.largestEvents ?? NaN,
    largestBytes: last?.largestBytes ?? NaN,
    peakRssMiB: Math.max(...reps.map((r) => r.peakRssMiB)),
    /** The most any rep's run added to the process's RSS. */
    addedRssMiB: round(Math.max(...reps.map((r) => r.peakRssMiB - r.startRssMiB)), 1),
  };
}

/** One row per metric and label over all reps: total count, count-weighted mean. */
function mergeLatency(reps: LatencyRow[][]): LatencyRow[] {
  const merged = new Map<string, LatencyRow>();
  for (const row of reps.flat()) {
    const k = `${row.metric}|${row.of}`;
    const m = merged.get(k);
    if (!m) merged.set(k, { ...row });
    else {
      const count = m.count + row.count;
      merged.set(k, { ...m, count, meanMs: round((m.meanMs * m.count + row.meanMs * row.count) / count) });
    }
  }
  return [...merged.values()];
}

function printServerLatency(which: string, rows: LatencyRow[]): void {
  console.log(`\nserver metrics during the ${which} reps (mean ms per task; from the dev server's Prometheus endpoint):`);
  console.log(`  ${pad('metric', 26)}${pad('of', 38)}${pad('tasks', 8, true)}${pad('mean ms', 10, true)}`);
  for (const r of rows) console.log(`  ${pad(r.metric, 26)}${pad(r.of, 38)}${pad(String(r.count), 8, true)}${pad(r.meanMs.toFixed(2), 10, true)}`);
}

// ---------------------------------------------------------------- main

async function main(): Promise<void> {
  const args = parseCli();
  // Before any worker: the threads alive now are the main thread and V8's helpers.
  const threads = new ThreadCpu();
  const address = serverAddress();
  const machine = machineInfo();
  console.log(`Threadline orchestration benchmark — ${args.steps} steps × ${args.reps} reps (warm-up: ${args.warmupSteps} steps)`);
  if (args.dynamicConfig.length) console.log(`server dynamic config: ${args.dynamicConfig.join(', ')}`);
  console.log(`machine: ${machine.cores} cores (${machine.cpu}), ${machine.memoryGiB} GiB, ${machine.platform}, load average ${machine.loadAverage.join(' ')}`);
  console.log(`node ${machine.node}, Temporal SDK ${machine.temporalSdk}, ${machine.temporalCli}`);

  installCodecProfile();
  // SDK and core logs would drown the table; warnings and errors still show.
  Runtime.install({ logger: new DefaultLogger('WARN') });

  // Ctrl-C: leave at once, with the conventional code; scripts/bench.mjs stops the server.
  process.once('SIGINT', () => process.exit(130));

  const workers: Worker[] = [];
  const connections: { close(): Promise<void> }[] = [];
  let running: Promise<unknown> = Promise.resolve();
  let peer: LangGraphPeer | null = null;
  try {
    console.log(`dev server: ${address}`);

    const config = loadConfig({
      TEMPORAL_ADDRESS: address,
      TASK_QUEUE: PLAN_QUEUE,
      DATA_DIR: mkdtempSync(path.join(os.tmpdir(), 'threadline-bench-')),
    });
    const provider = new ZeroLatencyProvider();
    const nativeConnection = await NativeConnection.connect({ address: config.temporalAddress });
    connections.push(nativeConnection);
    const client = await connectClient(config);
    connections.push(client.connection);

    let t = performance.now();
    // Both contenders' activities keep their step journal in memory, so neither pays for disk.
    workers.push(
      await createWorker({ config, provider, extraTools: [NOOP_TOOL, BIG_TOOL], store: new MemoryKeyValueStore(), taskQueue: PLAN_QUEUE, connection: nativeConnection }),
      await Worker.create({
        connection: nativeConnection,
        namespace: config.TEMPORAL_NAMESPACE,
        taskQueue: BARE_QUEUE,
        workflowsPath: require.resolve('./bare-workflow'),
        activities: { noop: async () => ({}) },
      }),
    );
    // (g), (h), (h'): each its own worker and client, on its own queue, all else as (a)'s (same tools,
    // provider, memory store kind, DATA_DIR), so g/a is encryption's cost and h/h' the claim check's.
    const caseWorker = async (env: Record<string, string>): Promise<Client> => {
      const caseConfig = loadConfig({ TEMPORAL_ADDRESS: address, DATA_DIR: config.DATA_DIR, ...env });
      const caseClient = await connectClient(caseConfig);
      connections.push(caseClient.connection);
      workers.push(
        await createWorker({ config: caseConfig, provider, extraTools: [NOOP_TOOL, BIG_TOOL], store: new MemoryKeyValueStore(), taskQueue: caseConfig.TASK_QUEUE, connection: nativeConnection }),
      );
      return caseClient;
    };
    // (g) Every payload sealed (AES-256-GCM).
    const encryptedClient = await caseWorker({ TASK_QUEUE: ENCRYPTED_QUEUE, THREADLINE_ENCRYPTION_KEY: randomBytes(32).toString('base64') });
    // (h) 400 kB goals through the claim check at its default threshold; memory limits above the goal
    // (a CRITICAL chunk compaction cannot shorten). (h') the same with the claim check off.
    const bigGoalEnv = { MEMORY_SOFT_LIMIT: '400000', MEMORY_HARD_LIMIT: '400000' };
    const claimCheckClient = await caseWorker({ ...bigGoalEnv, TASK_QUEUE: CLAIM_CHECK_QUEUE });
    const noClaimCheckClient = await caseWorker({ ...bigGoalEnv, TASK_QUEUE: NO_CLAIM_CHECK_QUEUE, CLAIM_CHECK_THRESHOLD: '0' });
    console.log(`workers: bundled and started in ${Math.round(performance.now() - t)} ms`);
    // A worker that dies must fail the benchmark, not leave it waiting on a result.
    const workersStopped = Promise.all(workers.map((w) => w.run()));
    running = workersStopped;
    const failFast = workersStopped.then(() => {
      throw new Error('a worker stopped during the benchmark');
    });
    failFast.catch(() => undefined); // only races below see it; the planned shutdown at the end must not crash
    const guard = <T>(p: Promise<T>): Promise<T> => Promise.race([p, failFast]);

    // (c) writes and reads the same kind of memory store as (a)'s worker (MEMORY_STORE, default file), so a − c is orchestration.
    const inProcessMemory = await openMemory(config, provider);
    connections.push(inProcessMemory);
    const bench: Bench = {
      client,
      activities: createPlanActivities({
        provider,
        tools: new ToolRegistry([...BUILTIN_TOOLS, NOOP_TOOL]),
        memory: inProcessMemory.memory,
        contextBudget: config.MEMORY_HARD_LIMIT,
        store: new MemoryKeyValueStore(),
        repairAttempts: config.MODEL_REPAIR_ATTEMPTS,
        maxSteps: config.MAX_STEPS,
        maxDepth: config.MAX_SUBPLAN_DEPTH,
      }),
    };

    const cases = {
      a: { tag: 'a', client, taskQueue: PLAN_QUEUE },
      g: { tag: 'g', client: encryptedClient, taskQueue: ENCRYPTED_QUEUE, userId: 'bench-g' },
      h: { tag: 'h', client: claimCheckClient, taskQueue: CLAIM_CHECK_QUEUE, padBytes: CLAIM_CHECK_GOAL_BYTES, userId: 'bench-h' },
      h2: { tag: 'h2', client: noClaimCheckClient, taskQueue: NO_CLAIM_CHECK_QUEUE, padBytes: CLAIM_CHECK_GOAL_BYTES, userId: 'bench-h2' },
      e: { tag: 'e', client, taskQueue: PLAN_QUEUE, tool: 'big' },
    } satisfies Record<string, PlanCase>;

    t = performance.now();
    const warmA = await guard(runPlanWorkflow(cases.a, args.warmupSteps));
    // The other plan workers warm up too: a first run on a fresh worker pays its workflow context's start.
    for (const c of [cases.g, cases.h, cases.h2]) await guard(runPlanWorkflow(c, args.warmupSteps));
    await guard(runBareWorkflow(bench, args.warmupSteps));
    await runInProcess(bench, args.warmupSteps);
    const startedPeer = await startLangGraphPeer(FIXED_ANSWER);
    if ('skipped' in startedPeer) console.log(`(f) LangGraph.js skipped: ${startedPeer.skipped}`);
    else {
      peer = startedPeer;
      for (const durability of ['sync', 'async'] as const) await peer.run(args.warmupSteps, durability);
    }
    console.log(`warm-up: done in ${Math.round(performance.now() - t)} ms\n`);

    // f: checkpoints written before each next super-step (as Temporal records each step); fAsync: LangGraph's default.
    const runs = {
      g: [] as Measured[],
      h: [] as Measured[],
      h2: [] as Measured[],
      a: [] as Measured[],
      b: [] as Measured[],
      bLocal: [] as Measured[],
      c: [] as Measured[],
      d: [] as TreeMeasured[],
      dBare: [] as { ms: number; iterations: number }[],
      f: [] as PeerRun[],
      fAsync: [] as PeerRun[],
    };
    await guard(runTreeWorkflow(bench, 2)); // warm-up of the tree engine's code paths
    await guard(runBareTree(bench, 2));
    const metricsUrl = process.env.THREADLINE_BENCH_METRICS_URL;
    const serverLatency: { a: LatencyRow[][]; b: LatencyRow[][] } = { a: [], b: [] };
    /** Runs one case between two reads of the server's metrics. */
    const measured = async (which: 'a' | 'b', run: () => Promise<Measured>): Promise<Measured> => {
      const before = await scrapeMetrics(metricsUrl);
      const result = await guard(run());
      const after = await scrapeMetrics(metricsUrl);
      if (before && after) serverLatency[which].push(latencyBetween(before, after, 3));
      return result;
    };
    /** This process's CPU by thread kind during (a), (b'), (d) and (d'): where a step's time goes. */
    const cpu = { a: ThreadCpu.zero(), bLocal: ThreadCpu.zero(), d: ThreadCpu.zero(), dBare: ThreadCpu.zero() } satisfies Record<string, CpuByKind>;
    for (let rep = 1; rep <= args.reps; rep++) {
      // Interleaved, so drift on the machine hits all three alike.
      // Each pair compared, (a)/(g) and (h)/(h'), runs back to back, in alternating order, so neither
      // side always gets the other's after-effects (GC, the server's backlog).
      const pair = async (first: () => Promise<void>, second: () => Promise<void>) => {
        if (rep % 2) await first().then(second);
        else await second().then(first);
      };
      runs.b.push(await measured('b', () => runBareWorkflow(bench, args.steps)));
      runs.bLocal.push(await threads.measure(cpu.bLocal, () => guard(runBareWorkflow(bench, args.steps, 'bareLocalWorkflow'))));
      await pair(
        async () => void runs.a.push(await measured('a', () => threads.measure(cpu.a, () => runPlanWorkflow(cases.a, args.steps)))),
        async () => void runs.g.push(await guard(runPlanWorkflow(cases.g, args.steps))),
      );
      await pair(
        async () => void runs.h.push(await guard(runPlanWorkflow(cases.h, args.steps))),
        async () => void runs.h2.push(await guard(runPlanWorkflow(cases.h2, args.steps))),
      );
      runs.c.push(await runInProcess(bench, args.steps));
      runs.d.push(await threads.measure(cpu.d, () => guard(runTreeWorkflow(bench, TREE_FANOUT))));
      runs.dBare.push(await threads.measure(cpu.dBare, () => guard(runBareTree(bench, TREE_FANOUT))));
      if (peer) {
        runs.f.push(await peer.run(args.steps, 'sync'));
        runs.fAsync.push(await peer.run(args.steps, 'async'));
      }
      const last = (xs: Measured[]) => ((xs.at(-1)?.ms ?? NaN) / args.steps).toFixed(2);
      const d = runs.d.at(-1);
      console.log(
        `rep ${rep}/${args.reps}: a ${last(runs.a)} ms/step, b ${last(runs.b)} ms/step, c ${last(runs.c)} ms/step, g ${last(runs.g)}, h ${last(runs.h)}, h' ${last(runs.h2)} ms/step, d ${d ? (d.ms / d.iterations).toFixed(2) : '?'} ms/iteration${peer ? `, f ${last(runs.f)} ms/step` : ''}`,
      );
    }

    const a = summarize('(a) PlanExecutionWorkflow', runs.a, args.steps);
    const b = summarize('(b) bare workflow, N no-op activities', runs.b, args.steps);
    const bLocal = summarize("(b') bare workflow, N local activities", runs.bLocal, args.steps);
    const c = summarize('(c) same plan and memory, in-process loop', runs.c, args.steps);
    const ratio = round(a.msPerStepMedian / b.msPerStepMedian);
    const f = peer ? summarize('(f) LangGraph.js + PostgresSaver, same loop', runs.f, args.steps) : null;
    const fAsync = peer ? summarize("(f') the same, LangGraph's async durability", runs.fAsync, args.steps) : null;
    const ratioAF = f ? round(a.msPerStepMedian / f.msPerStepMedian) : null;
    const eventsA = a.historyEventsPerStep ?? NaN;
    // Events one more tool step adds, from the warm-up run and a full run of (a).
    const marginalEventsA = round(((runs.a.at(-1)?.history?.events ?? NaN) - (warmA.history?.events ?? NaN)) / (args.steps - args.warmupSteps));

    console.log('');
    const repsWidth = Math.max(26, 7 * args.reps + 2); // 5 reps of "48.51 " overflowed the column
    console.log(`${pad('', 46)}${pad('ms/step', 10, true)}${pad('reps (ms/step)', repsWidth, true)}${pad('events/step', 13, true)}${pad('bytes/step', 12, true)}`);
    for (const r of [a, b, bLocal, c, ...(f && fAsync ? [f, fAsync] : [])]) {
      console.log(
        `${pad(r.label, 46)}${pad(r.msPerStepMedian.toFixed(2), 10, true)}${pad(r.msPerStepReps.map((x) => x.toFixed(2)).join(' '), repsWidth, true)}` +
          `${pad(r.historyEventsPerStep?.toFixed(2) ?? '—', 13, true)}${pad(r.historyBytesPerStep?.toString() ?? '—', 12, true)}`,
      );
    }
    console.log(`\nms/step: wall time from start to result ÷ N, median over ${args.reps} reps; (a) and (c) include the plan and respond calls.`);
    console.log('events, bytes: one history of the last rep ÷ N; bytes = encoded temporal.api.history.v1.History protobuf.');
    const loadAfter = os.loadavg().map((x) => round(x));
    console.log(`load average now: ${loadAfter.join(' ')} (at start: ${machine.loadAverage.join(' ')}) on ${machine.cores} cores`);
    console.log(`(a) marginal events per extra tool step (${args.warmupSteps}-step vs ${args.steps}-step run): ${marginalEventsA}`);
    console.log(`ratio a/b: ${ratio.toFixed(2)}   (c) share of (a): ${((100 * c.msPerStepMedian) / a.msPerStepMedian).toFixed(1)}%`);
    const fLast = runs.f.at(-1);
    if (peer && fLast) {
      console.log(
        `(f) ${Object.entries(peer.versions)
          .map(([name, v]) => `${name} ${v}`)
          .join(', ')}; durability 'sync' (each super-step's checkpoint written before the next), (f') 'async'`,
      );
      console.log(`(f) per tool step: ${round(fLast.checkpoints / args.steps)} checkpoints, ${Math.round(fLast.bytes / args.steps)} bytes in PostgreSQL (one run)`);
    }

    const ratioOk = ratio <= TARGET_RATIO;
    const eventsOk = eventsA <= TARGET_EVENTS_PER_STEP;
    const verdict = (ok: boolean, detail: string) => `${ok ? 'PASS' : 'MISS'} (${detail})`;
    console.log('\ntargets:');
    const over = (value: number, max: number) => (value <= max ? '' : `, ${((value / max - 1) * 100).toFixed(0)}% over`);
    console.log(`  a/b ≤ ${TARGET_RATIO}:                      ${verdict(ratioOk, `${ratio.toFixed(2)}${over(ratio, TARGET_RATIO)}`)}`);
    console.log(
      `  (a) ≤ ${TARGET_MS_PER_STEP} ms per step:          ${verdict(a.msPerStepMedian <= TARGET_MS_PER_STEP, `${a.msPerStepMedian.toFixed(2)}${over(a.msPerStepMedian, TARGET_MS_PER_STEP)}`)}`,
    );
    if (ratioAF !== null) console.log(`  a/f ≤ ${TARGET_PEER_RATIO} (vs LangGraph.js):     ${verdict(ratioAF <= TARGET_PEER_RATIO, `${ratioAF.toFixed(2)}${over(ratioAF, TARGET_PEER_RATIO)}`)}`);
    console.log(
      `  (a) events per tool step ≤ ${TARGET_EVENTS_PER_STEP}:    ${verdict(eventsOk, `${eventsA.toFixed(2)} incl. fixed overhead${over(eventsA, TARGET_EVENTS_PER_STEP)}; ${marginalEventsA} marginal`)}`,
    );

    if (a.eventTypes) printEventTypes(`history of one (a) run, ${args.steps} steps (sorted by bytes):`, a.eventTypes, args.steps);
    if (b.eventTypes) printEventTypes(`history of one (b) run, ${args.steps} steps:`, b.eventTypes, args.steps);
    console.log('  ms before = server time from the previous event: *_STARTED ≈ dispatch to a poller, *_COMPLETED ≈ worker time.');
    const tree = summarizeTree(runs.d);
    const treeRatio = round(tree.msPerIterationMedian / a.msPerStepMedian);
    const bareTreeReps = runs.dBare.map((r) => round(r.ms / r.iterations, 2));
    const bareTree = {
      label: `(d') bare tree: ${TREE_FANOUT} child workflows of ${2 * TREE_FANOUT} local calls`,
      msPerIterationMedian: round(median(bareTreeReps), 3),
      msPerIterationReps: bareTreeReps,
    };
    // The issue-31 ratios, each Threadline's figure against Temporal's floor for its shape in this run.
    const floors = {
      ratioALocal: round(a.msPerStepMedian / bLocal.msPerStepMedian),
      ratioTreeToBareTree: round(tree.msPerIterationMedian / bareTree.msPerIterationMedian),
      ratioBareTreeToBareLocal: round(bareTree.msPerIterationMedian / bLocal.msPerStepMedian),
    };
    console.log(`\n(d) tree run, depth 3, fan-out ${TREE_FANOUT} (${tree.iterations} ReAct iterations, ${tree.workflows} workflows), median of ${args.reps}:`);
    console.log(
      `  ms per iteration ${tree.msPerIterationMedian.toFixed(2)} (reps ${tree.msPerIterationReps.join(' ')}); vs (a) per step: ${treeRatio.toFixed(2)} (target ≤ ${TARGET_TREE_RATIO}: ${treeRatio <= TARGET_TREE_RATIO ? 'PASS' : 'MISS'})`,
    );
    console.log(
      `  history events per iteration ${tree.eventsPerIteration} (all workflows); largest history ${tree.largestEvents} events / ${tree.largestBytes} bytes; peak RSS of the bench process (client + workers) ${tree.peakRssMiB} MiB, of which the tree run added at most ${tree.addedRssMiB} MiB (the rest: the process with its five workers)`,
    );
    console.log(
      `  (d') the same workflows and calls, bare (Temporal's floor for the tree's shape): ${bareTree.msPerIterationMedian.toFixed(2)} ms per call (reps ${bareTreeReps.join(' ')}); ` +
        `d/d' ${floors.ratioTreeToBareTree.toFixed(2)} against a/b' ${floors.ratioALocal.toFixed(2)} (Threadline's own share of each); d'/b' ${floors.ratioBareTreeToBareLocal.toFixed(2)} (the child runs' share: the floor of d/a)`,
    );
    const sum = (xs: { iterations: number }[]) => xs.reduce((n, x) => n + x.iterations, 0);
    const cpuByThread = {
      a: perUnit(cpu.a, args.reps * args.steps),
      bLocal: perUnit(cpu.bLocal, args.reps * args.steps),
      d: perUnit(cpu.d, sum(runs.d)),
      dBare: perUnit(cpu.dBare, sum(runs.dBare)),
    };
    if (cpuByThread.a) {
      console.log(`\nCPU ms a step (an iteration for (d), a call for (d')) by thread of this process, summed over ${args.reps} reps (/proc/self/task):`);
      console.log(`  ${pad('', 6)}${THREAD_KINDS.map((k) => pad(k, 10, true)).join('')}`);
      for (const [which, row] of Object.entries(cpuByThread)) if (row) console.log(`  ${pad(which, 6)}${THREAD_KINDS.map((k) => pad(row[k].toFixed(2), 10, true)).join('')}`);
      console.log("  main: activities and the SDK's activity side; workflow: the workflow threads; v8: V8's helper threads (GC, compiling); core: the Temporal core's threads");
    }
    // (d) once more on a worker alone in its process: the memory a worker serving it needs, apart from the other four.
    const alone = await runTreeAlone(bench, { TEMPORAL_ADDRESS: address, DATA_DIR: mkdtempSync(path.join(os.tmpdir(), 'threadline-bench-tree-')) }, args.reps);
    const aloneOk = !('skipped' in alone) && alone.hwmMiB <= TARGET_TREE_WORKER_RSS_MIB;
    if ('skipped' in alone) console.log(`  on a worker process of its own: skipped (${alone.skipped})`);
    else
      console.log(
        `  on one worker in a process of its own (bench/orchestration-worker.ts, made as (a)'s): peak RSS ${alone.hwmMiB} MiB over its life (VmHWM: start-up, a warm-up and ${args.reps} runs; ${alone.readyRssMiB} MiB after the warm-up, at most ${alone.peakRssMiB} MiB during the runs), target ≤ ${TARGET_TREE_WORKER_RSS_MIB}: ${verdict(aloneOk, `${alone.hwmMiB}${over(alone.hwmMiB, TARGET_TREE_WORKER_RSS_MIB)}`)}; ms per iteration ${alone.msPerIterationMedian.toFixed(2)} (reps ${alone.msPerIterationReps.join(' ')})`,
      );
    // (e) History growth with big tool results: a short and a full run, so "flat" is visible.
    const bigShort = await guard(runPlanWorkflow(cases.e, args.warmupSteps));
    const bigFull = await guard(runPlanWorkflow(cases.e, args.steps));
    const bytesOf = (m: Measured) => m.history?.bytes ?? NaN;
    const big = {
      bytesPerStep: Math.round(bytesOf(bigFull) / args.steps),
      marginalBytesPerStep: Math.round((bytesOf(bigFull) - bytesOf(bigShort)) / (args.steps - args.warmupSteps)),
      bytesPerStepShortRun: Math.round(bytesOf(bigShort) / args.warmupSteps),
    };
    console.log(
      `\n(e) ${args.steps} steps of a tool returning 100 kB: history ${big.bytesPerStep} bytes/step (${big.marginalBytesPerStep} per extra step; ${big.bytesPerStepShortRun} in a ${args.warmupSteps}-step run); target ≤ 2048 and flat: ${big.marginalBytesPerStep <= 2048 ? 'PASS' : 'MISS'}`,
    );
    const g = summarize('(g) (a) with every payload encrypted', runs.g, args.steps);
    const encryptionRatio = round(g.msPerStepMedian / a.msPerStepMedian);
    const encryptionOk = encryptionRatio <= TARGET_ENCRYPTION_RATIO;
    const reps = (r: ContenderResult) => r.msPerStepReps.map((x) => x.toFixed(2)).join(' ');
    console.log(`\n(g) (a) with AES-256-GCM payload encryption: ${g.msPerStepMedian.toFixed(2)} ms/step (reps ${reps(g)}), ${g.historyBytesPerStep ?? '?'} history bytes/step`);
    const kB = CLAIM_CHECK_GOAL_BYTES / 1000;
    const h = summarize(`(h) (a) with a ${kB} kB goal (claim check)`, runs.h, args.steps);
    const h2 = summarize(`(h') (h) with the claim check off`, runs.h2, args.steps);
    const claimCheckRatio = round(h.msPerStepMedian / h2.msPerStepMedian);
    const claimCheckOk = claimCheckRatio <= TARGET_CLAIM_CHECK_RATIO;
    const claimCheckToPlain = round(h.msPerStepMedian / a.msPerStepMedian);
    const bigGoalRatio = round(h2.msPerStepMedian / a.msPerStepMedian);
    console.log(`(h) (a) with a ${kB} kB goal, past the claim-check threshold: ${h.msPerStepMedian.toFixed(2)} ms/step (reps ${reps(h)}), ${h.historyBytesPerStep ?? '?'} history bytes/step`);
    console.log(`(h') the same, claim check off (CLAIM_CHECK_THRESHOLD=0): ${h2.msPerStepMedian.toFixed(2)} ms/step (reps ${reps(h2)}), ${h2.historyBytesPerStep ?? '?'} history bytes/step`);
    console.log(
      `(a) in the same reps: ${a.msPerStepMedian.toFixed(2)} ms/step, ${a.historyBytesPerStep ?? '?'} history bytes/step; h/a ${claimCheckToPlain.toFixed(2)}, h'/a ${bigGoalRatio.toFixed(2)} (the big goal itself)`,
    );
    // Ratios of medians, and the median of the per-rep ratios (each rep's pair ran back to back).
    const repRatio = (xs: Measured[], ys: Measured[]) => round(median(xs.map((x, i) => x.ms / (ys[i]?.ms ?? NaN))));
    const encryptionRepRatio = repRatio(runs.g, runs.a);
    const claimCheckRepRatio = repRatio(runs.h, runs.h2);
    console.log(
      `  g/a ≤ ${TARGET_ENCRYPTION_RATIO} (encryption's overhead):   ${verdict(encryptionOk, `${encryptionRatio.toFixed(2)}${over(encryptionRatio, TARGET_ENCRYPTION_RATIO)}; median of per-rep ratios ${encryptionRepRatio.toFixed(2)}`)}`,
    );
    console.log(
      `  h/h' ≤ ${TARGET_CLAIM_CHECK_RATIO} (claim check's overhead): ${verdict(claimCheckOk, `${claimCheckRatio.toFixed(2)}${over(claimCheckRatio, TARGET_CLAIM_CHECK_RATIO)}; median of per-rep ratios ${claimCheckRepRatio.toFixed(2)}`)}`,
    );
    const codecs = {
      g: codecSum(runs.g.flatMap((r) => (r.codecs ? [r.codecs] : []))),
      h: codecSum(runs.h.flatMap((r) => (r.codecs ? [r.codecs] : []))),
    };
    console.log(`\ncodec work per run, mean over ${args.reps} reps (worker and client, main thread; ms includes awaits):`);
    for (const [which, profile] of Object.entries(codecs)) {
      for (const [op, c] of Object.entries(profile)) {
        if (c.payloads === 0) continue;
        const per = (x: number) => x / args.reps;
        console.log(
          `  (${which}) ${pad(op, 18)} ${pad(per(c.payloads).toFixed(1), 7, true)} payloads ${pad((per(c.bytes) / 1000).toFixed(1), 9, true)} kB ${pad(per(c.ms).toFixed(2), 9, true)} ms  (${(per(c.ms) / args.steps).toFixed(3)} ms/step)`,
        );
      }
    }
    const latency = { a: mergeLatency(serverLatency.a), b: mergeLatency(serverLatency.b) };
    if (latency.a.length) printServerLatency('(a)', latency.a);
    if (latency.b.length) printServerLatency('(b)', latency.b);

    const report = {
      generatedAt: new Date().toISOString(),
      machine: { ...machine, loadAverageAtEnd: loadAfter },
      params: { ...args, provider: provider.label, store: 'memory' },
      method: {
        msPerStep: 'wall time from workflow start (or loop start) to result, divided by N; median over reps',
        historyBytes: 'length of temporal.api.history.v1.History.encode(history) of one run (the last rep)',
        cpuByThread:
          "this process's CPU ms by thread kind (/proc/self/task utime + stime) during (a), (b'), (d), (d'), summed over reps, per step, iteration or call; v8 = threads alive before the first worker, workflow = Node threads made after",
        marginalEventsPerToolStep: `(events of an N-step run − events of the ${args.warmupSteps}-step warm-up run) ÷ (N − ${args.warmupSteps}), for (a)`,
        peerF:
          'a LangGraph.js StateGraph (plan → act → replan per step → respond, zero-latency pure nodes, the act node invoking a no-op @langchain/core tool) compiled with PostgresSaver on BENCH_DATABASE_URL, own schema, fresh thread_id per run; wall time of app.invoke ÷ N in its own node process, interleaved with (a)–(d)',
      },
      results: {
        a,
        b,
        c,
        d: tree,
        dBare: bareTree,
        ...floors,
        cpuByThread,
        dOwnProcess: alone,
        e: big,
        g,
        ratioEncryptedToPlain: encryptionRatio,
        ratioEncryptedToPlainPerRepMedian: encryptionRepRatio,
        h,
        hNoClaimCheck: h2,
        ratioClaimCheckToNoClaimCheck: claimCheckRatio,
        ratioClaimCheckToNoClaimCheckPerRepMedian: claimCheckRepRatio,
        ratioClaimCheckToPlain: claimCheckToPlain,
        ratioBigGoalToPlain: bigGoalRatio,
        codecsPerRun: Object.fromEntries(
          Object.entries(codecs).map(([k, p]) => [
            k,
            Object.fromEntries(Object.entries(p).map(([op, c]) => [op, { payloads: round(c.payloads / args.reps, 1), bytes: Math.round(c.bytes / args.reps), ms: round(c.ms / args.reps) }])),
          ]),
        ),
        f,
        fAsync,
      },
      peers: peer
        ? {
            langgraph: {
              versions: peer.versions,
              durability: { f: 'sync', fAsync: 'async' },
              checkpointsPerStepF: fLast ? round(fLast.checkpoints / args.steps) : null,
              storedBytesPerStepF: fLast ? Math.round(fLast.bytes / args.steps) : null,
            },
          }
        : null,
      ratioAF,
      ratioTreeIterationToPlanStep: treeRatio,
      serverLatency: latency,
      ratioAB: ratio,
      bareLocal: bLocal,
      marginalEventsPerToolStepA: marginalEventsA,
      targets: {
        ratioAB: { max: TARGET_RATIO, value: ratio, pass: ratioOk },
        msPerStepA: { max: TARGET_MS_PER_STEP, value: a.msPerStepMedian, pass: a.msPerStepMedian <= TARGET_MS_PER_STEP },
        eventsPerToolStepA: { max: TARGET_EVENTS_PER_STEP, value: eventsA, marginal: marginalEventsA, pass: eventsOk },
        ratioAF: ratioAF === null ? null : { max: TARGET_PEER_RATIO, value: ratioAF, pass: ratioAF <= TARGET_PEER_RATIO },
        treeIterationToPlanStep: { max: TARGET_TREE_RATIO, value: treeRatio, pass: treeRatio <= TARGET_TREE_RATIO },
        treeWorkerPeakRssMiB: 'skipped' in alone ? null : { max: TARGET_TREE_WORKER_RSS_MIB, value: alone.hwmMiB, pass: aloneOk },
        encryptedToPlain: { max: TARGET_ENCRYPTION_RATIO, value: encryptionRatio, pass: encryptionOk },
        claimCheckToNoClaimCheck: { max: TARGET_CLAIM_CHECK_RATIO, value: claimCheckRatio, pass: claimCheckOk },
      },
    };
    const file = resultsFile('orchestration');
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, `${JSON.stringify(report, null, 2)}\n`);
    console.log(`\nresults written to ${path.relative(process.cwd(), file)}`);
  } finally {
    await peer?.close().catch(() => undefined);
    for (const worker of workers) if (worker.getState() === 'RUNNING') worker.shutdown();
    await running.catch(() => undefined);
    for (const connection of connections.reverse()) await connection.close().catch(() => undefined);
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof UsageError ? err.message : err);
  process.exitCode = 1;
});
