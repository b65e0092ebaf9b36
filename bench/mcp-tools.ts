/**
 * Per-call overhead of an MCP tool over stdio against a built-in tool (`npm run bench -- --only mcp`).
 *
 * 1. In one plan run (real Temporal server, real worker, a zero-latency model): --mcp-pairs N
 *    (default 24) pairs of steps, the in-process `noop` tool then the official filesystem server's
 *    `list_allowed_directories` (it does next to nothing), each step one activity with its replan.
 *    A step's time is the gap between its observation and the one before; the medians of the two
 *    kinds, and their difference — what the MCP round trip adds to a step of a run.
 * 2. The same two tools called directly through the registry, 500 times each: the call alone.
 *
 * Needs TEMPORAL_ADDRESS (scripts/bench.mjs starts a dev server). Results: bench/results/mcp-tools.json.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { connectClient } from '../src/temporal/connection';
import { loadConfig } from '../src/config';
import type { ModelProvider, ModelRequest } from '../src/llm/provider';
import { McpToolSource } from '../src/mcp/tool-source';
import type { ExecutionState } from '../src/planning/execution-state';
import type { StepSpec } from '../src/planning/step-spec';
import { MemoryKeyValueStore } from '../src/store/kv';
import { Runs } from '../src/temporal/runs';
import { ToolRegistry } from '../src/tools/registry';
import { createWorker } from '../src/worker';
import { NOOP_TOOL } from './zero-latency-provider';
import { resultsFile } from './server-metrics';

const RESULTS_FILE = resultsFile('mcp-tools');
const MCP_TOOL = 'filesystem.list_allowed_directories';
const DIRECT_CALLS = 500;
const filesystemServer = (dir: string) => ({ command: process.execPath, args: [require.resolve('@modelcontextprotocol/server-filesystem/dist/index.js'), dir] });

function pairsArg(): number {
  const i = process.argv.indexOf('--mcp-pairs');
  const n = i >= 0 ? Number(process.argv[i + 1]) : 24;
  if (!Number.isInteger(n) || n < 1 || n > 24) throw new Error('--mcp-pairs: 1 to 24 (a plan holds at most 50 steps)');
  return n;
}

/** Plans the pairs at once, continues after every step, answers at the end; instantly. */
class PairsModel implements ModelProvider {
  readonly label = 'bench-zero-latency';
  constructor(private readonly pairs: number) {}
  async complete(request: ModelRequest): Promise<string> {
    switch (request.name) {
      case 'execution_plan': {
        const steps: StepSpec[] = Array.from({ length: this.pairs }, (_, i): StepSpec[] => [
          { type: 'tool', description: `built-in ${i + 1}`, tool: NOOP_TOOL.name, args: {} },
          { type: 'tool', description: `MCP ${i + 1}`, tool: MCP_TOOL, args: {} },
        ]).flat();
        return JSON.stringify({ steps: [...steps, { type: 'respond', description: 'answer' }] });
      }
      case 'replan_decision':
        return JSON.stringify({ decision: 'continue' });
      case 'final_answer':
        return JSON.stringify({ answer: 'done' });
      case 'live_state_check':
        return JSON.stringify({ tools: [] });
      default:
        throw new Error(`unexpected model call ${request.name}`);
    }
  }
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? (s[Math.floor((s.length - 1) / 2)]! + s[Math.ceil((s.length - 1) / 2)]!) / 2 : NaN;
};
const round = (x: number, digits = 2) => Number(x.toFixed(digits));

async function directCalls(registry: ToolRegistry, tool: string): Promise<number[]> {
  const store = new MemoryKeyValueStore();
  const times: number[] = [];
  for (let i = 0; i < DIRECT_CALLS + 20; i++) {
    // A signal per call, as each step has its own.
    const ctx = { userId: 'bench', runId: 'bench', stepId: 's', idempotencyKey: 'k', store, heartbeat: () => undefined, signal: new AbortController().signal };
    const started = performance.now();
    const outcome = await registry.run(tool, {}, ctx);
    if (!outcome.ok) throw new Error(outcome.error);
    if (i >= 20) times.push(performance.now() - started); // the first calls warm up
  }
  return times;
}

async function main(): Promise<void> {
  const pairs = pairsArg();
  if (!process.env.TEMPORAL_ADDRESS) throw new Error('TEMPORAL_ADDRESS is not set: run `npm run bench -- --only mcp`');
  const dir = mkdtempSync(path.join(os.tmpdir(), 'threadline-bench-mcp-'));
  const files = path.join(dir, 'files');
  mkdirSync(files);
  const mcpConfig = path.join(dir, 'mcp.json');
  writeFileSync(mcpConfig, JSON.stringify({ mcpServers: { filesystem: filesystemServer(files) } }));
  const config = loadConfig({ ...process.env, DATA_DIR: dir, TASK_QUEUE: 'bench-mcp', MCP_CONFIG: mcpConfig, MAX_STEPS: '60', MEMORY_STORE: 'memory' });
  console.log(`Threadline MCP tool benchmark — ${pairs} pairs of steps (built-in noop, then ${MCP_TOOL} over stdio) in one run; ${DIRECT_CALLS} direct calls of each`);

  Runtime.install({ logger: new DefaultLogger('WARN') });
  const worker = await createWorker({ config, provider: new PairsModel(pairs), extraTools: [NOOP_TOOL], store: new MemoryKeyValueStore() });
  const running = worker.run();
  const client = await connectClient(config);
  let state: ExecutionState;
  try {
    const { runId } = await new Runs(client, config).start({ userId: 'bench', goal: 'benchmark: built-in and MCP tools' });
    state = (await client.workflow.getHandle(runId).result()) as ExecutionState;
  } finally {
    worker.shutdown();
    await running;
    await client.connection.close();
  }
  if (state.status !== 'completed') throw new Error(`the run ended ${state.status}: ${state.lastError ?? ''}`);
  const stepGap = { builtin: [] as number[], mcp: [] as number[] };
  const tools = new Map(state.steps.map((s) => [s.id, s.tool]));
  state.observations.forEach((o, i) => {
    const previous = state.observations[i - 1];
    if (!previous || o.kind !== 'tool') return;
    stepGap[tools.get(o.stepId ?? '') === MCP_TOOL ? 'mcp' : 'builtin'].push(Date.parse(o.at) - Date.parse(previous.at));
  });

  const source = new McpToolSource({ filesystem: { ...filesystemServer(files), env: {}, transport: 'stdio' } }, { callTimeoutMs: 10_000, media: async () => 'blob:unused' });
  await source.start();
  const registry = new ToolRegistry([NOOP_TOOL], [source]);
  let direct;
  try {
    direct = { builtin: await directCalls(registry, NOOP_TOOL.name), mcp: await directCalls(registry, MCP_TOOL) };
  } finally {
    await source.close();
  }

  const inRun = { builtinMs: median(stepGap.builtin), mcpMs: median(stepGap.mcp) };
  const alone = { builtinMs: median(direct.builtin), mcpMs: median(direct.mcp) };
  const rows: [string, string][] = [
    ['step in a run, built-in (median of gaps)', `${round(inRun.builtinMs, 1)} ms (${stepGap.builtin.length} steps)`],
    ['step in a run, MCP stdio (median of gaps)', `${round(inRun.mcpMs, 1)} ms (${stepGap.mcp.length} steps)`],
    ['  MCP overhead per step', `${round(inRun.mcpMs - inRun.builtinMs, 1)} ms`],
    ['direct call, built-in (median)', `${round(alone.builtinMs * 1000, 0)} µs`],
    ['direct call, MCP stdio (median)', `${round(alone.mcpMs * 1000, 0)} µs`],
    ['  MCP overhead per call', `${round((alone.mcpMs - alone.builtinMs) * 1000, 0)} µs`],
  ];
  const width = Math.max(...rows.map(([k]) => k.length));
  for (const [k, v] of rows) console.log(`${k.padEnd(width)}  ${v}`);

  mkdirSync(path.dirname(RESULTS_FILE), { recursive: true });
  const report = {
    at: new Date().toISOString(),
    machine: { cpus: os.cpus().length, cpu: os.cpus()[0]?.model ?? 'unknown', node: process.version },
    pairs,
    directCalls: DIRECT_CALLS,
    results: {
      inRun: { builtinStepMs: round(inRun.builtinMs, 1), mcpStepMs: round(inRun.mcpMs, 1), overheadMs: round(inRun.mcpMs - inRun.builtinMs, 1) },
      direct: { builtinUs: round(alone.builtinMs * 1000, 0), mcpUs: round(alone.mcpMs * 1000, 0), overheadUs: round((alone.mcpMs - alone.builtinMs) * 1000, 0) },
    },
  };
  writeFileSync(RESULTS_FILE, `${JSON.stringify(report, null, 2)}\n`);
  console.log(`\nresults written to ${path.relative(process.cwd(), RESULTS_FILE)}`);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
