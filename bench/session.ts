/**
 * Session benchmark (issue 4): one long conversation with a zero-latency model.
 * It sends N messages to one session, one after another, each waiting for the
 * run it started to finish (a full turn: message → run → answer), and prints
 *   - turns per second, against two baselines of Temporal alone (bench/bare-session.ts): the bare
 *     turn, Threadline's shape, and the floor, the least a turn can be while each run is a workflow;
 *   - the largest history of any workflow execution involved: every run of the
 *     session across continue-as-new, and a sample of its plan runs (the first and
 *     last few) — target ≤ 4,096 events and ≤ 4 MB;
 *   - tokens of the planner prompt (execution_plan messages) at turn 100 vs the
 *     last turn — target ratio ≤ 1.1 (the prompt must not grow with the conversation).
 *
 *   npm run bench -- [--session-turns N]    (or BENCH_SESSION_TURNS=N; default 1,000)
 *                    [--session-store memory|file]   (or BENCH_SESSION_STORE; default memory: the
 *                    in-memory store; file: the file store under DATA_DIR, what `npm start` uses)
 *   npm run bench -- --only session --session-turns 1000
 *
 * scripts/bench.mjs starts the private dev server and runs this file with
 * TEMPORAL_ADDRESS set. Results also go to bench/results/session.json (session-file-store.json with
 * --session-store file; a server variant of scripts/bench.mjs adds its name).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import type { Client } from '@temporalio/client';
import { connectClient } from '../src/temporal/connection';
import { encodedBytes } from './history';
import { resultsFile, serverCpuMs } from './server-metrics';
import { Context } from '@temporalio/activity';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { bareMessageUpdate, bareReportSignal, type BareSessionActivities, type bareSessionWorkflow, type BareTurn } from './bare-session';
import { z } from 'zod';
import { loadConfig } from '../src/config';
import type { ModelProvider, ModelRequest } from '../src/llm/provider';
import { countTextTokens } from '../src/memory/tokens';
import { openMemory } from '../src/store/open-memory';
import { Sessions } from '../src/temporal/sessions';
import { createWorker } from '../src/worker';
import { ZeroLatencyProvider } from './zero-latency-provider';

const QUEUE = 'bench-session';
/** The baselines' queue (bench/bare-session.ts): the bare turn and the floor, Temporal's shapes with no Threadline work. */
const BARE_QUEUE = 'bench-session-bare';
/** Turns of each baseline measured after every BLOCK turns of Threadline's, so all see the machine in the same state. */
const BLOCK = 200;
const BARE_PER_BLOCK = 60;
/** 1,000 turns take ~1.5 min here; the 10,000 (~15 min) with `npm run bench -- --session-turns 10000`. */
const DEFAULT_TURNS = 1_000;
/** Turn whose planner prompt is the baseline: by then the conversation has been compressed many times over. */
const BASELINE_TURN = 100;
/** Plan runs whose histories are fetched: this many from the start and from the end. */
const SAMPLE_RUNS = 3;
const TARGET_EVENTS = 4096;
const TARGET_BYTES = 4 * 1024 * 1024;
const TARGET_TOKEN_RATIO = 1.1;
/** Issue 13: a turn with a zero-latency model. */
const TARGET_MS_PER_TURN = 50;
/**
 * Per-turn time measured on the development machine (2 cores; three workflow tasks per turn: the
 * session's, the run's, the session's for the report), used only to say up front how long a run will
 * take; the real rate is printed as it goes.
 */
const EXPECTED_MS_PER_TURN = 90;

class UsageError extends Error {}

const TurnsSchema = z.coerce.number().int().min(2).max(1_000_000);
const StoreSchema = z.enum(['memory', 'file']);

function parseOptions(): { turns: number; store: z.infer<typeof StoreSchema> } {
  let values;
  try {
    ({ values } = parseArgs({ options: { 'session-turns': { type: 'string' }, 'session-store': { type: 'string' } } }));
  } catch (err) {
    throw new UsageError(`bad arguments: ${err instanceof Error ? err.message : String(err)}`);
  }
  const raw = values['session-turns'] ?? process.env.BENCH_SESSION_TURNS ?? String(DEFAULT_TURNS);
  const parsed = TurnsSchema.safeParse(raw);
  if (!parsed.success) throw new UsageError(`--session-turns / BENCH_SESSION_TURNS: expected an integer ≥ 2, got "${raw}"`);
  const rawStore = values['session-store'] ?? process.env.BENCH_SESSION_STORE ?? 'memory';
  const store = StoreSchema.safeParse(rawStore);
  if (!store.success) throw new UsageError(`--session-store / BENCH_SESSION_STORE: expected memory or file, got "${rawStore}"`);
  return { turns: parsed.data, store: store.data };
}

const round = (x: number, digits = 2) => Number(x.toFixed(digits));
/** CPU time (ms) this process has used so far: both workers and the client, every thread. */
const processCpuMs = (): number => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
};
const message = (turn: number) => `note #${turn}: the sky is blue`;
const turnOf = (goal: string): number | null => {
  const n = Number(/^note #(\d+):/.exec(goal)?.[1]);
  return Number.isInteger(n) ? n : null;
};
const duration = (ms: number) => (ms < 90_000 ? `${Math.round(ms / 1000)} s` : `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`);

/** The zero-latency model, keeping the planner prompts of the turns we compare. */
class RecordingProvider implements ModelProvider {
  readonly label: string;
  readonly plannerPrompts = new Map<number, { tokens: number; messages: number }>();
  constructor(
    private readonly inner: ModelProvider,
    private readonly turnsToKeep: ReadonlySet<number>,
  ) {
    this.label = inner.label;
  }

  complete(request: ModelRequest, signal?: AbortSignal): Promise<string> {
    if (request.name === 'execution_plan' && 'state' in request.context) {
      const turn = turnOf(request.context.state.goal);
      if (turn !== null && this.turnsToKeep.has(turn)) {
        const tokens = request.messages.reduce((sum, m) => sum + countTextTokens(m.content), 0);
        this.plannerPrompts.set(turn, { tokens, messages: request.messages.length });
      }
    }
    return this.inner.complete(request, signal);
  }
}

interface HistorySize {
  workflowId: string;
  runId: string;
  events: number;
  /** Length of the encoded temporal.api.history.v1.History protobuf. */
  bytes: number;
}

async function historySize(client: Client, workflowId: string, runId?: string): Promise<HistorySize> {
  const handle = client.workflow.getHandle(workflowId, runId);
  const history = await handle.fetchHistory();
  const described = runId ?? (await handle.describe()).runId;
  return {
    workflowId,
    runId: described,
    events: history.events?.length ?? 0,
    bytes: encodedBytes(history),
  };
}

/** The history with the most events (the bytes follow the events here: every turn adds the same kind). */
const largest = (xs: HistorySize[]): HistorySize | undefined => xs.reduce<HistorySize | undefined>((a, b) => (a && a.events >= b.events ? a : b), undefined);

/** The baselines' activities: a turn's start (eager, through the worker's client), and its run's one call (the bare turn's signals). */
const bareActivities: BareSessionActivities = {
  async startTurn(turn: BareTurn) {
    const { client } = Context.current();
    const workflowId = `${turn.sessionId}-t${turn.turn}`;
    await client.workflow.start('bareTurnWorkflow', { taskQueue: BARE_QUEUE, workflowId, args: [turn], requestEagerStart: true });
    return workflowId;
  },
  async reportTurn(turn: BareTurn) {
    if (turn.report) await Context.current().client.workflow.getHandle(turn.sessionId).signal(bareReportSignal, turn.turn);
  },
};

/** A baseline's turns, time and CPU (this process; the dev server when its pid is known), over its blocks. */
class Baseline {
  turns = 0;
  ms = 0;
  cpu = 0;
  serverCpu = 0;
  constructor(readonly report: boolean) {}

  get msPerTurn(): number {
    return this.ms / this.turns;
  }

  async measure(n: number, turn: (report: boolean) => Promise<void>): Promise<void> {
    const [started, cpuBefore, serverBefore] = [performance.now(), processCpuMs(), serverCpuMs()];
    for (let i = 0; i < n; i++) await turn(this.report);
    this.ms += performance.now() - started;
    this.cpu += processCpuMs() - cpuBefore;
    this.serverCpu += (serverCpuMs() ?? 0) - (serverBefore ?? 0);
    this.turns += n;
  }
}

async function main(): Promise<void> {
  const { turns, store } = parseOptions();
  /** Results of the file store's runs go apart: the two are not the same measurement. */
  const resultsPath = resultsFile(store === 'memory' ? 'session' : `session-${store}-store`);
  const address = process.env.TEMPORAL_ADDRESS;
  if (!address) throw new UsageError('TEMPORAL_ADDRESS is not set: run the benchmark with `npm run bench`, which starts its Temporal dev server.');
  const lastTurn = turns;
  const baselineTurn = Math.min(BASELINE_TURN, Math.max(1, Math.floor(turns / 2)));

  console.log(`Threadline session benchmark — one session, ${turns.toLocaleString('en-US')} turns, zero-latency model, ${store === 'memory' ? 'in-memory store' : 'file store (as under npm start)'}`);
  console.log(
    `expected duration: ~${duration(turns * EXPECTED_MS_PER_TURN)} at ~${EXPECTED_MS_PER_TURN} ms/turn (as measured on the development machine; ` +
      'set --session-turns N or BENCH_SESSION_TURNS=N for a shorter run)',
  );
  console.log(`dev server: ${address}`);
  Runtime.install({ logger: new DefaultLogger('WARN') });
  process.once('SIGINT', () => process.exit(130));

  /** The journal's and (with --session-store file) the memory's files; removed at the end. */
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'threadline-bench-session-'));
  const config = loadConfig({
    TEMPORAL_ADDRESS: address,
    TEMPORAL_NAMESPACE: process.env.TEMPORAL_NAMESPACE ?? 'default',
    TASK_QUEUE: QUEUE,
    MEMORY_STORE: store,
    DATA_DIR: dataDir,
  });
  const provider = new RecordingProvider(new ZeroLatencyProvider(), new Set([baselineTurn, lastTurn]));
  // One memory for the worker and for Sessions (which creates the session's thread).
  const opened = await openMemory(config, provider);
  const connections: { close(): Promise<void> }[] = [];
  /** Every worker started, stopped at the end. */
  const workers: Worker[] = [];
  let running: Promise<unknown> = Promise.resolve();
  try {
    const nativeConnection = await NativeConnection.connect({ address: config.temporalAddress });
    connections.push(nativeConnection);
    const client = await connectClient(config);
    connections.push(client.connection);

    const t = performance.now();
    workers.push(await createWorker({ config, provider, memory: opened.memory, connection: nativeConnection, taskQueue: QUEUE }));
    workers.push(
      await Worker.create({
        connection: nativeConnection,
        namespace: config.TEMPORAL_NAMESPACE,
        taskQueue: BARE_QUEUE,
        workflowsPath: require.resolve('./bare-session'),
        activities: bareActivities,
      }),
    );
    console.log(`workers: bundled and started in ${Math.round(performance.now() - t)} ms`);
    running = Promise.all(workers.map((w) => w.run()));
    const failFast = running.then(() => {
      throw new Error('a worker stopped during the benchmark');
    });
    failFast.catch(() => undefined);
    const guard = <T>(p: Promise<T>): Promise<T> => Promise.race([p, failFast]);

    const sessions = new Sessions(client, opened.memory, config);
    const { sessionId } = await guard(sessions.create({ userId: 'bench' }));
    console.log(`session: ${sessionId}\n`);
    // The bare turn's session, warmed up like Threadline's first turns are.
    const bare = await client.workflow.start<typeof bareSessionWorkflow>('bareSessionWorkflow', { taskQueue: BARE_QUEUE, workflowId: `bare-${sessionId}`, args: [`bare-${sessionId}`] });
    /** A baseline turn: the bare turn (its run reports back) or the floor (it does not). */
    const bareTurn = async (report: boolean) => {
      const turnId = await bare.executeUpdate(bareMessageUpdate, { args: [report] });
      await client.workflow.getHandle(turnId).result();
    };
    for (let i = 0; i < 10; i++) await guard(bareTurn(i % 2 === 0));
    const baselines = { bare: new Baseline(true), floor: new Baseline(false) };
    let blocks = 0;

    const runIds: string[] = [];
    /** Time spent on bare turns, left out of Threadline's. */
    let pausedMs = 0;
    const started = performance.now();
    const cpuAtStart = processCpuMs();
    const serverCpuAtStart = serverCpuMs();
    let windowStart = started;
    const progressEvery = Math.max(50, Math.round(turns / 20));
    for (let i = 1; i <= turns; i++) {
      const outcome = await guard(sessions.send(sessionId, message(i)));
      if (outcome.kind !== 'new_run' || !outcome.runId) throw new Error(`turn ${i}: expected a new run, got ${JSON.stringify(outcome)}`);
      runIds.push(outcome.runId);
      const result = (await guard(client.workflow.getHandle(outcome.runId).result())) as { status?: string };
      if (result.status !== 'completed') throw new Error(`turn ${i}: run ${outcome.runId} ended ${result.status ?? 'without a state'}`);
      if (i % BLOCK === 0 || i === turns) {
        // Baseline turns, timed apart from Threadline's (the block's window below excludes them); which comes first alternates.
        const baselinesStarted = performance.now();
        const order = blocks++ % 2 === 0 ? [baselines.bare, baselines.floor] : [baselines.floor, baselines.bare];
        for (const baseline of order) await guard(baseline.measure(BARE_PER_BLOCK, bareTurn));
        const spent = performance.now() - baselinesStarted;
        pausedMs += spent;
        windowStart += spent;
      }
      if (i % progressEvery === 0 || i === turns) {
        const now = performance.now();
        const overall = (now - started - pausedMs) / i;
        const recent = (now - windowStart) / (i % progressEvery === 0 ? progressEvery : i % progressEvery);
        windowStart = now;
        console.log(
          `turn ${String(i).padStart(String(turns).length)}/${turns}: ${overall.toFixed(1)} ms/turn overall, ${recent.toFixed(1)} ms/turn lately, ` + `~${duration((turns - i) * overall)} to go`,
        );
      }
    }
    const elapsedMs = performance.now() - started - pausedMs;
    const serverCpuNow = serverCpuMs();
    /** CPU per turn, Threadline's (everything outside the bare blocks) and the bare turn's. */
    const { bare: bareLine, floor } = baselines;
    const baselineCpu = bareLine.cpu + floor.cpu;
    const baselineServerCpu = bareLine.serverCpu + floor.serverCpu;
    const cpu = {
      process: { turn: round((processCpuMs() - cpuAtStart - baselineCpu) / turns, 1), bare: round(bareLine.cpu / bareLine.turns, 1), floor: round(floor.cpu / floor.turns, 1) },
      server:
        serverCpuNow !== null && serverCpuAtStart !== null
          ? { turn: round((serverCpuNow - serverCpuAtStart - baselineServerCpu) / turns, 1), bare: round(bareLine.serverCpu / bareLine.turns, 1), floor: round(floor.serverCpu / floor.turns, 1) }
          : null,
    };
    const turnsPerSecond = turns / (elapsedMs / 1000);
    const bareMsPerTurn = bareLine.msPerTurn;
    const ratioToBare = round(elapsedMs / turns / bareMsPerTurn);
    const floorMsPerTurn = floor.msPerTurn;
    await bare.terminate('benchmark done');

    // The session saw every turn, and its last run's answer is in the conversation.
    const view = await sessions.get(sessionId);
    if (view.turns !== turns) throw new Error(`the session counted ${view.turns} turns, not ${turns}`);
    const lastRun = runIds.at(-1);
    const lastStatus = view.runs.find((r) => r.runId === lastRun)?.status;

    // ---- histories: every run of the session (visibility, closed ones included) and a sample of plan runs
    console.log('\nfetching histories…');
    const sessionExecutions: { runId: string; status: string }[] = [];
    for await (const info of client.workflow.list({ query: `WorkflowId = '${sessionId}'` })) {
      sessionExecutions.push({ runId: info.runId, status: info.status.name });
    }
    const sessionHistories: HistorySize[] = [];
    for (const e of sessionExecutions) sessionHistories.push(await historySize(client, sessionId, e.runId));
    const sampled = [...new Set([...runIds.slice(0, SAMPLE_RUNS), ...runIds.slice(-SAMPLE_RUNS)])];
    const planHistories: HistorySize[] = [];
    for (const id of sampled) planHistories.push(await historySize(client, id));
    const biggestSession = largest(sessionHistories);
    const biggestPlan = largest(planHistories);
    const maxEvents = Math.max(...sessionHistories.map((h) => h.events), ...planHistories.map((h) => h.events));
    const maxBytes = Math.max(...sessionHistories.map((h) => h.bytes), ...planHistories.map((h) => h.bytes));

    const baseline = provider.plannerPrompts.get(baselineTurn);
    const last = provider.plannerPrompts.get(lastTurn);
    if (!baseline || !last) throw new Error(`no planner prompt was recorded for turn ${baseline ? lastTurn : baselineTurn}`);
    const tokenRatio = round(last.tokens / baseline.tokens, 3);

    // ---- report
    const pad = (s: string, w: number, right = false) => (right ? s.padStart(w) : s.padEnd(w));
    const row = (label: string, value: string, target = '', verdict = '') => console.log(`  ${pad(label, 52)}${pad(value, 26, true)}  ${pad(target, 14)}${verdict}`);
    const verdict = (ok: boolean) => (ok ? 'PASS' : 'MISS');
    const kib = (b: number) => `${(b / 1024).toFixed(1)} KiB`;
    console.log(`\n  ${pad('', 52)}${pad('value', 26, true)}  ${pad('target', 14)}`);
    row('turns', turns.toLocaleString('en-US'));
    row('wall time', `${round(elapsedMs / 1000, 1)} s`);
    row('turns per second', turnsPerSecond.toFixed(2));
    row('ms per turn (message → run → answer)', (elapsedMs / turns).toFixed(2), `≤ ${TARGET_MS_PER_TURN}`, verdict(elapsedMs / turns <= TARGET_MS_PER_TURN));
    row(`bare turn, same Temporal shape (${bareLine.turns} turns between blocks)`, `${bareMsPerTurn.toFixed(2)} ms`);
    row(`floor: message and run only, no report (${floor.turns} turns)`, `${floorMsPerTurn.toFixed(2)} ms`, `≤ ${TARGET_MS_PER_TURN}`, verdict(floorMsPerTurn <= TARGET_MS_PER_TURN));
    row('ratio: Threadline turn / bare turn', ratioToBare.toFixed(2));
    row('CPU per turn, this process: Threadline / bare / floor', `${cpu.process.turn} / ${cpu.process.bare} / ${cpu.process.floor} ms`);
    if (cpu.server) row('CPU per turn, the dev server: Threadline / bare / floor', `${cpu.server.turn} / ${cpu.server.bare} / ${cpu.server.floor} ms`);
    row('session executions (continue-as-new chain)', String(sessionExecutions.length));
    row('largest session execution history: events', String(biggestSession?.events ?? NaN));
    row('largest session execution history: bytes', `${biggestSession?.bytes ?? NaN} (${kib(biggestSession?.bytes ?? NaN)})`);
    row(`largest sampled plan run history (${sampled.length} runs): events`, String(biggestPlan?.events ?? NaN));
    row(`largest sampled plan run history: bytes`, `${biggestPlan?.bytes ?? NaN} (${kib(biggestPlan?.bytes ?? NaN)})`);
    row('largest history of any execution: events', String(maxEvents), `≤ ${TARGET_EVENTS}`, verdict(maxEvents <= TARGET_EVENTS));
    row('largest history of any execution: bytes', `${maxBytes} (${kib(maxBytes)})`, '≤ 4 MiB', verdict(maxBytes <= TARGET_BYTES));
    row(`planner prompt tokens at turn ${baselineTurn}`, `${baseline.tokens} (${baseline.messages} msgs)`);
    row(`planner prompt tokens at turn ${lastTurn}`, `${last.tokens} (${last.messages} msgs)`);
    row(`ratio turn ${lastTurn} / turn ${baselineTurn}`, tokenRatio.toFixed(3), `≤ ${TARGET_TOKEN_RATIO}`, verdict(tokenRatio <= TARGET_TOKEN_RATIO));
    row('session at the end: chatHistory turns / last run', `${view.chatHistory.length} / ${lastStatus ?? 'not listed'}`);
    console.log('\nbytes = length of temporal.api.history.v1.History.encode(history); tokens = countTextTokens over the execution_plan messages (o200k_base).');
    if (turns < DEFAULT_TURNS) console.log(`(a ${DEFAULT_TURNS.toLocaleString('en-US')}-turn run would take ~${duration((DEFAULT_TURNS * elapsedMs) / turns)} at this rate)`);

    const report = {
      generatedAt: new Date().toISOString(),
      machine: { cores: os.cpus().length, cpu: os.cpus()[0]?.model ?? 'unknown', platform: `${os.platform()} ${os.release()} ${os.arch()}`, node: process.version },
      params: { turns, provider: provider.label, memoryStore: store, baselineTurn, sampledPlanRuns: sampled.length },
      method: {
        turn: 'Sessions.send(message) → the plan run it starts completes (handle.result()) → next message',
        bareTurn: `bench/bare-session.ts: an update to a long-lived workflow whose local activity starts the turn's workflow (eager start); that workflow makes one local call, which signals the first, and ends; ${BARE_PER_BLOCK} such turns after every ${BLOCK} of Threadline's, timed apart`,
        floor: `the bare turn without the signal: two workflow tasks (the message's update, the run); ${BARE_PER_BLOCK} after every ${BLOCK} of Threadline's, before or after the bare turns in turn`,
        historyBytes: 'length of temporal.api.history.v1.History.encode(history) of each execution',
        sessionExecutions: `visibility query WorkflowId = '<sessionId>' (closed runs included), every execution's history fetched`,
        planRuns: `the first ${SAMPLE_RUNS} and last ${SAMPLE_RUNS} plan runs of the session`,
        cpuMsPerTurn:
          "process.cpuUsage() of the benchmark process (both workers and the client, every thread) and /proc/<pid>/stat of the dev server, over Threadline's turns and over the bare blocks apart",
        promptTokens: 'countTextTokens (src/memory/tokens.ts) summed over the messages of the execution_plan call of that turn',
      },
      results: {
        elapsedMs: round(elapsedMs, 1),
        turnsPerSecond: round(turnsPerSecond, 2),
        msPerTurn: round(elapsedMs / turns, 2),
        bareTurn: { turns: bareLine.turns, msPerTurn: round(bareMsPerTurn, 2), ratio: ratioToBare },
        floor: { turns: floor.turns, msPerTurn: round(floorMsPerTurn, 2), ratio: round(elapsedMs / turns / floorMsPerTurn) },
        cpuMsPerTurn: cpu,
        sessionExecutions: sessionHistories.map((h, i) => ({ ...h, status: sessionExecutions[i]?.status })),
        planRuns: planHistories,
        plannerPromptTokens: { [baselineTurn]: baseline, [lastTurn]: last },
        chatHistoryTurnsAtEnd: view.chatHistory.length,
      },
      targets: {
        msPerTurn: { max: TARGET_MS_PER_TURN, value: round(elapsedMs / turns, 2), pass: elapsedMs / turns <= TARGET_MS_PER_TURN },
        /** Whether the target is within reach on this machine at all: Temporal's least turn under it. */
        floorMsPerTurn: { max: TARGET_MS_PER_TURN, value: round(floorMsPerTurn, 2), pass: floorMsPerTurn <= TARGET_MS_PER_TURN },
        maxHistoryEvents: { max: TARGET_EVENTS, value: maxEvents, pass: maxEvents <= TARGET_EVENTS },
        maxHistoryBytes: { max: TARGET_BYTES, value: maxBytes, pass: maxBytes <= TARGET_BYTES },
        plannerPromptTokenRatio: { max: TARGET_TOKEN_RATIO, value: tokenRatio, pass: tokenRatio <= TARGET_TOKEN_RATIO },
      },
    };
    mkdirSync(path.dirname(resultsPath), { recursive: true });
    writeFileSync(resultsPath, `${JSON.stringify(report, null, 2)}\n`);
    console.log(`\nresults written to ${path.relative(process.cwd(), resultsPath)}`);
  } finally {
    for (const w of workers) if (w.getState() === 'RUNNING') w.shutdown();
    await running.catch(() => undefined);
    for (const connection of connections.reverse()) await connection.close().catch(() => undefined);
    await opened.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof UsageError ? err.message : err);
  process.exitCode = 1;
});
