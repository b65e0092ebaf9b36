// Comparison row (f) of bench/orchestration.ts: the same zero-latency plan loop as Threadline's
// (a) — plan → act → replan per step → respond, N no-op tool steps — as a LangGraph.js StateGraph
// compiled with its PostgreSQL checkpointer. Plain JS in this scratch folder so that its packages
// stay here, out of Threadline's dependencies; bench/peers/langgraph.ts drives it as a child process.
//
// Protocol, one JSON object per line: it prints {"ready":true,"versions":{…}} once set up, then
// answers each {"steps":N,"answer":"…","durability":"sync"|"async"} on stdin with
// {"ms":…,"checkpoints":…,"bytes":…} (or {"error":"…"}). Closing stdin drops its schema and exits.
import { readFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import readline from 'node:readline';
import { tool } from '@langchain/core/tools';
import { Annotation, END, START, StateGraph } from '@langchain/langgraph';
import { PostgresSaver } from '@langchain/langgraph-checkpoint-postgres';
import pg from 'pg';
import { z } from 'zod';

const DATABASE_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
// Its own schema, emptied at start: the tables hold this bench run's threads only.
const SCHEMA = 'threadline_bench_langgraph';

const send = (message) => process.stdout.write(`${JSON.stringify(message)}\n`);

/** Installed versions, from the lock file (some of these packages do not export their package.json). */
function versions() {
  const lock = JSON.parse(readFileSync(new URL('./package-lock.json', import.meta.url), 'utf8'));
  const names = ['@langchain/langgraph', '@langchain/langgraph-checkpoint-postgres', '@langchain/langgraph-checkpoint', '@langchain/core', 'pg'];
  return Object.fromEntries(names.map((name) => [name, lock.packages[`node_modules/${name}`]?.version ?? 'unknown']));
}

const noop = tool(async () => '{}', { name: 'noop', description: 'Does nothing and returns {}.', schema: z.object({}) });

const PlanState = Annotation.Root({
  goal: Annotation(),
  answerText: Annotation(),
  steps: Annotation({ reducer: (_, next) => next, default: () => [] }),
  observations: Annotation({ reducer: (all, added) => all.concat(added), default: () => [] }),
  decision: Annotation(),
  finalAnswer: Annotation(),
});

// The zero-latency "model": pure functions making the decisions bench/zero-latency-provider.ts makes.
const planSteps = (goal) => Array.from({ length: goal.steps }, (_, i) => ({ tool: goal.tool, args: {}, description: `${goal.tool} ${i + 1} of ${goal.steps}` }));
const replanDecision = (state) => (state.observations.length < state.steps.length ? 'continue' : 'respond');

const graph = new StateGraph(PlanState)
  .addNode('plan', (state) => ({ steps: planSteps(state.goal) }))
  .addNode('act', async (state) => {
    const step = state.steps[state.observations.length];
    const output = await noop.invoke(step.args);
    return { observations: [{ step: state.observations.length + 1, tool: step.tool, outcome: 'completed', output }] };
  })
  .addNode('replan', (state) => ({ decision: replanDecision(state) }))
  .addNode('respond', (state) => ({ finalAnswer: state.answerText }))
  .addEdge(START, 'plan')
  .addEdge('plan', 'act')
  .addEdge('act', 'replan')
  .addConditionalEdges('replan', (state) => (state.decision === 'continue' ? 'act' : 'respond'), ['act', 'respond'])
  .addEdge('respond', END);

const pool = new pg.Pool({ connectionString: DATABASE_URL });
await pool.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
const saver = new PostgresSaver(pool, undefined, { schema: SCHEMA });
await saver.setup();
const app = graph.compile({ checkpointer: saver });
const info = { ...versions(), postgres: (await pool.query('SHOW server_version')).rows[0].server_version };

/** What one run left in the checkpointer's tables: checkpoints, and bytes of all its rows. */
async function stored(threadId) {
  const { rows } = await pool.query(
    `SELECT (SELECT count(*) FROM ${SCHEMA}.checkpoints WHERE thread_id = $1)::int AS checkpoints,
            ((SELECT coalesce(sum(octet_length(checkpoint::text) + octet_length(metadata::text)), 0) FROM ${SCHEMA}.checkpoints WHERE thread_id = $1)
           + (SELECT coalesce(sum(octet_length(blob)), 0) FROM ${SCHEMA}.checkpoint_blobs WHERE thread_id = $1)
           + (SELECT coalesce(sum(octet_length(blob)), 0) FROM ${SCHEMA}.checkpoint_writes WHERE thread_id = $1))::bigint AS bytes`,
    [threadId],
  );
  return { checkpoints: rows[0].checkpoints, bytes: Number(rows[0].bytes) };
}

async function run({ steps, answer, durability }) {
  const threadId = `bench-f-${steps}-${randomUUID().slice(0, 8)}`;
  const started = performance.now();
  const final = await app.invoke(
    { goal: { steps, tool: 'noop' }, answerText: answer },
    // Each tool step is two super-steps (act, replan); plan and respond add two.
    { configurable: { thread_id: threadId }, durability, recursionLimit: 2 * steps + 10 },
  );
  const ms = performance.now() - started;
  const completed = final.observations.filter((o) => o.outcome === 'completed').length;
  if (completed !== steps || final.finalAnswer !== answer) throw new Error(`expected ${steps} completed noop steps and the fixed answer; got ${completed} and ${JSON.stringify(final.finalAnswer)}`);
  return { ms, ...(await stored(threadId)) };
}

send({ ready: true, versions: info });
// One request at a time, in order: runs must not overlap, or they would time each other.
let queue = Promise.resolve();
readline.createInterface({ input: process.stdin }).on('line', (line) => {
  queue = queue.then(async () => {
    try {
      send(await run(JSON.parse(line)));
    } catch (err) {
      send({ error: err instanceof Error ? err.message : String(err) });
    }
  });
}).on('close', () => {
  void queue.then(async () => {
    await pool.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`).catch(() => undefined);
    await pool.end();
  });
});
