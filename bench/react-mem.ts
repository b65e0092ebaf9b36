/**
 * Answer latency with MEMORY_MANAGER=react_mem against react (`npm run bench -- --only react-mem`).
 *
 * Two workers on one dev server, one per memory manager, each with its own file stores, the same
 * zero-latency model and a 2-step no-op plan. The react_mem user already has a long-term memory
 * (--react-mem-messages imported messages, default 20,000, and 500 facts), so recall at the start
 * of each run does real work, and the passes after each answer (extraction, debounced) run on the
 * same worker while the next runs go on. Runs alternate between the two, one at a time; a run's
 * answer latency is from the start request until its workflow's result (the answer) is back.
 *
 * Needs TEMPORAL_ADDRESS (scripts/bench.mjs starts a dev server). Results: bench/results/react-mem.json.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { DefaultLogger, Runtime, type Worker } from '@temporalio/worker';
import { loadConfig, type Config } from '../src/config';
import type { ExecutionState } from '../src/planning/execution-state';
import { openLongTerm } from '../src/store/longterm/open-longterm';
import { connectClient } from '../src/temporal/connection';
import { Runs } from '../src/temporal/runs';
import { createWorker } from '../src/worker';
import { benchGoal, NOOP_TOOL, ZeroLatencyProvider } from './zero-latency-provider';
import { argNumber, quantile, round } from './figures';
import { resultsFile } from './server-metrics';

const RESULTS_FILE = resultsFile('react-mem');
const USER = 'bench-memory-user';
const TOPICS = ['garden', 'printer', 'trip to Kyoto', 'sourdough', 'tax return', 'bicycle', 'piano lessons', 'the flat in Porto', 'a new laptop', 'the dentist'];

/** A user with a past: conversations about everyday topics, and facts. */
async function seedMemory(config: Config, messages: number): Promise<number> {
  const opened = await openLongTerm(config);
  const started = performance.now();
  try {
    const perConversation = 50;
    for (let c = 0; c * perConversation < messages; c++) {
      const topic = TOPICS[c % TOPICS.length] ?? 'life';
      const msgs = Array.from({ length: Math.min(perConversation, messages - c * perConversation) }, (_, i) => ({
        role: (i % 2 === 0 ? 'user' : 'assistant') as 'user' | 'assistant',
        text: i % 2 === 0 ? `About ${topic}: question ${c}-${i}, what should I do next with ${topic}?` : `For ${topic} (${c}-${i}) I would check the details first.`,
      }));
      await opened.longterm.importConversations(USER, [{ title: topic, messages: msgs }], { origin: 'system', reason: 'benchmark seed' }, () => `bench-s${c}`);
    }
    for (let f = 0; f < 500; f++) {
      const topic = TOPICS[f % TOPICS.length] ?? 'life';
      await opened.longterm.recordFact(
        USER,
        { subject: 'user', predicate: `note ${f}`, object: `${topic} ${f}`, text: `The user noted ${topic} item ${f}.` },
        { messageIds: [] },
        { origin: 'system', reason: 'benchmark seed' },
      );
    }
  } finally {
    await opened.close();
  }
  return performance.now() - started;
}

async function main(): Promise<void> {
  const runs = argNumber('--react-mem-runs', 40);
  const messages = argNumber('--react-mem-messages', 20_000);
  if (!process.env.TEMPORAL_ADDRESS) throw new Error('TEMPORAL_ADDRESS is not set: run `npm run bench -- --only react-mem`');
  const base = { ...process.env, MEMORY_STORE: 'file', MAX_STEPS: '10' };
  const configs = {
    react_mem: loadConfig({ ...base, MEMORY_MANAGER: 'react_mem', DATA_DIR: mkdtempSync(path.join(os.tmpdir(), 'threadline-bench-rm-')), TASK_QUEUE: 'bench-react-mem' }),
    react: loadConfig({ ...base, MEMORY_MANAGER: 'react', DATA_DIR: mkdtempSync(path.join(os.tmpdir(), 'threadline-bench-r-')), TASK_QUEUE: 'bench-react' }),
  };
  console.log(
    `Threadline react_mem vs react — answer latency of ${runs} runs each (2 no-op steps, zero-latency model), alternating; the react_mem user has ${messages.toLocaleString('en-US')} messages and 500 facts`,
  );
  const seedMs = await seedMemory(configs.react_mem, messages);
  console.log(`seeded long-term memory in ${round(seedMs / 1000)} s`);

  Runtime.install({ logger: new DefaultLogger('WARN') });
  const workers: Worker[] = [];
  const running: Promise<void>[] = [];
  for (const config of Object.values(configs)) {
    const worker = await createWorker({ config, provider: new ZeroLatencyProvider(), extraTools: [NOOP_TOOL] });
    workers.push(worker);
    running.push(worker.run());
  }
  const client = await connectClient(configs.react);
  const times: Record<keyof typeof configs, number[]> = { react_mem: [], react: [] };
  try {
    const goal = benchGoal(2);
    const once = async (mode: keyof typeof configs) => {
      const started = performance.now();
      const { runId } = await new Runs(client, configs[mode]).start({ userId: USER, goal });
      const state = (await client.workflow.getHandle(runId).result()) as ExecutionState;
      if (state.status !== 'completed') throw new Error(`${mode} run ${runId} ended ${state.status}: ${state.lastError ?? ''}`);
      return performance.now() - started;
    };
    // Warm-up: both workers load their code and stores (react_mem: the user's index) once.
    await once('react_mem');
    await once('react');
    for (let i = 0; i < runs; i++) {
      const order: (keyof typeof configs)[] = i % 2 === 0 ? ['react_mem', 'react'] : ['react', 'react_mem'];
      for (const mode of order) times[mode].push(await once(mode));
    }
  } finally {
    for (const worker of workers) worker.shutdown();
    await Promise.all(running);
    await client.connection.close();
  }
  const summary = (xs: number[]) => ({ p50: round(quantile(xs, 0.5)), p95: round(quantile(xs, 0.95)), mean: round(xs.reduce((a, b) => a + b, 0) / xs.length) });
  const results = { react_mem: summary(times.react_mem), react: summary(times.react) };
  const ratio = round(results.react_mem.p50 / results.react.p50, 2);
  console.log(`react      p50 ${results.react.p50} ms, p95 ${results.react.p95} ms`);
  console.log(`react_mem  p50 ${results.react_mem.p50} ms, p95 ${results.react_mem.p95} ms`);
  console.log(`react_mem / react (p50): ${ratio} (target ≤ 1.1)`);
  mkdirSync(path.dirname(RESULTS_FILE), { recursive: true });
  writeFileSync(
    RESULTS_FILE,
    `${JSON.stringify({ at: new Date().toISOString(), machine: { cpus: os.cpus().length, node: process.version, load: os.loadavg() }, runs, seededMessages: messages, seededFacts: 500, results, ratioP50: ratio }, null, 2)}\n`,
  );
  console.log(`\nresults written to ${path.relative(process.cwd(), RESULTS_FILE)}`);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
