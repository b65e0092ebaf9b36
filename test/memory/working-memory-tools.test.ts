/**
 * The agent's tools over its own working memory (list_memory, update_memory, delete_memory,
 * compress_memory) run through the tool registry as a step runs them, over a real memory service:
 * what they may change (seed 001's retention classes and agent-modifiable flag), that every change
 * is an audited operation a person can roll back, and seed 002's compression every N steps.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { rememberInRun } from '../../src/activities/plan-activities';
import type { Chunk, ChunkInput } from '../../src/memory/model';
import { renderContent } from '../../src/memory/parser';
import { goalChunk, runThreadId, stepChunks } from '../../src/memory/run-chunks';
import { applyPlan, initialState, type PlanStep } from '../../src/planning/execution-state';
import { MemoryService, type Summarizer } from '../../src/store/memory-service';
import { InMemoryMemoryStore } from '../../src/store/memory/in-memory-store';
import { ToolRegistry, type ToolOutcome } from '../../src/tools/registry';
import { WORKING_MEMORY_TOOLS } from '../../src/tools/working-memory-tools';
import { toolContext } from '../helpers/tool-context';

const system = { origin: 'system' as const, reason: 'test', trigger: 'test' };
const text = (t: string) => ({ kind: 'text' as const, text: t });
const summaries: string[][] = [];
const summarizer: Summarizer = async (texts) => {
  summaries.push(texts);
  return `summary of ${texts.length} chunk(s)`;
};

async function setup(options: { summarizer?: Summarizer } = {}) {
  const memory = new MemoryService({ store: new InMemoryMemoryStore(), limits: { soft: 50_000, hard: 100_000 }, ...options });
  const threadId = runThreadId('run-1');
  const chunks: ChunkInput[] = [
    { type: 'delegation', content: text('Goal: plan a trip to Lyon'), retention: 'CRITICAL', agentModifiable: false },
    { type: 'thinking', content: text('The user probably wants a hotel near Bellecour.') },
    { type: 'user', content: text('My budget is 80 EUR a night.') },
    { type: 'output', content: text('An earlier answer') }, // read-only for the agent by default
  ];
  const { chunks: made } = await memory.createThread({ threadId, userId: 'ada', chunks, meta: system });
  const other = await memory.createThread({ userId: 'ada', chunks: [{ type: 'thinking', content: text('another run') }], meta: system });
  const registry = new ToolRegistry(WORKING_MEMORY_TOOLS);
  let attempt = 0;
  const run = (tool: string, args: unknown, key?: string): Promise<ToolOutcome> =>
    registry.run(tool, args, toolContext({ memory, runThread: threadId, threads: [threadId], idempotencyKey: key ?? `run-1/s${++attempt}/1`, stepId: `s${attempt}` }));
  return { memory, threadId, made: made as [Chunk, Chunk, Chunk, Chunk], otherChunk: other.chunks[0] as Chunk, run };
}

const result = <T>(outcome: ToolOutcome): T => {
  assert.ok(outcome.ok, outcome.ok ? '' : outcome.error);
  return outcome.result as T;
};
const failure = (outcome: ToolOutcome): string => {
  assert.ok(!outcome.ok, 'the tool should have refused');
  return outcome.error;
};

test('list_memory shows the run’s chunks with what the agent may change; the read is audited', async () => {
  const { memory, threadId, made, run } = await setup();
  const { chunks } = result<{ chunks: { chunkId: string; type: string; modifiable: boolean; messageId?: string }[] }>(await run('list_memory', {}));
  assert.deepEqual(
    chunks.map((c) => [c.type, c.modifiable]),
    [
      ['delegation', false],
      ['thinking', true],
      ['user', true],
      ['output', false],
    ],
  );
  assert.equal(chunks[2]?.messageId, made[2].messageId);
  // A long thread is listed newest last, as many as asked (50 by default), with how many there are.
  const newest = result<{ chunks: { type: string }[]; total: number }>(await run('list_memory', { limit: 2 }));
  assert.deepEqual(
    newest.chunks.map((c) => c.type),
    ['user', 'output'],
  );
  assert.equal(newest.total, 4);
  const reads = await memory.auditReads(threadId);
  assert.ok(reads.some((r) => r.origin === 'agent' && r.reason === 'list_memory' && r.runId === 'run-1'));
});

test('update_memory rewrites a modifiable chunk through the reducer: linked to the old one, audited, and a person can roll it back', async () => {
  const { memory, threadId, made, run } = await setup();
  const before = (await memory.view(threadId)).state;
  const out = result<{ updated: string; chunkId: string }>(await run('update_memory', { chunkId: made[1].id, text: 'The user wants a hotel near Perrache.', reason: 'the user said so' }));
  assert.equal(out.updated, made[1].id);
  const after = await memory.view(threadId);
  const edited = after.chunks[1] as Chunk;
  assert.equal(edited.id, out.chunkId);
  assert.equal(edited.parentChunkId, made[1].id);
  assert.equal(renderContent(edited.content), 'The user wants a hotel near Perrache.');
  const record = (await memory.audit(threadId, { kind: 'update' }))[0];
  assert.equal(record?.origin, 'agent');
  assert.equal(record?.reason, 'update_memory: the user said so');
  await memory.rollback(threadId, before.id, { origin: 'user', reason: 'undo', trigger: 'test' });
  assert.deepEqual((await memory.view(threadId)).chunks[1], made[1]);
  // By message id too.
  result(await run('update_memory', { chunkId: made[2].messageId, text: 'Budget: 90 EUR a night.' }));
  assert.equal(renderContent(((await memory.view(threadId)).chunks[2] as Chunk).content), 'Budget: 90 EUR a night.');
});

test('CRITICAL and read-only chunks, and chunks of another thread, are refused with a clear error; nothing is written', async () => {
  const { memory, threadId, made, otherChunk, run } = await setup();
  const ops = (await memory.audit(threadId)).length;
  assert.match(failure(await run('update_memory', { chunkId: made[0].id, text: 'new goal' })), /is CRITICAL: it cannot be changed by the agent/);
  assert.match(failure(await run('delete_memory', { chunkIds: [made[3].id] })), /read-only for the agent/);
  assert.match(failure(await run('delete_memory', { chunkIds: [made[1].id, made[0].id] })), /CRITICAL/);
  assert.match(failure(await run('delete_memory', { chunkIds: [otherChunk.id] })), /no chunk .* in this run's memory/);
  assert.match(failure(await run('update_memory', { chunkId: 'not an id', text: 'x' })), /invalid arguments/);
  assert.equal((await memory.audit(threadId)).length, ops);
  assert.equal((await memory.view(threadId)).chunks.length, 4);
});

test('delete_memory removes chunks; a retried step (same idempotency key) deletes nothing twice and answers the same', async () => {
  const { memory, threadId, made, run } = await setup();
  const first = result<{ deleted: string[] }>(await run('delete_memory', { chunkIds: [made[1].id] }, 'run-1/s9/1'));
  assert.deepEqual(first.deleted, [made[1].id]);
  const again = result<{ deleted: string[] }>(await run('delete_memory', { chunkIds: [made[1].id] }, 'run-1/s9/1'));
  assert.deepEqual(again, first);
  assert.equal((await memory.audit(threadId, { kind: 'delete' })).length, 1);
  assert.deepEqual(
    (await memory.view(threadId)).chunks.map((c) => c.type),
    ['delegation', 'user', 'output'],
  );
});

/** A run of `n` tool steps (plus an ask_user as step 2) written as a run writes them. */
async function runSteps(memory: MemoryService, n: number, compressEvery?: number) {
  const base = initialState({ runId: 'run-c', userId: 'ada', goal: 'Compare hotels', model: 'm' }, new Date('2025-01-01T00:00:00.000Z'));
  const specs = Array.from({ length: n }, (_, i) =>
    i === 1
      ? { type: 'ask_user' as const, description: 'Ask the budget', question: 'What is your budget?' }
      : { type: 'tool' as const, description: `Look up hotel ${i}`, tool: 'calculator', args: { expression: `${i}` } },
  );
  const state = { ...applyPlan(base, specs, new Date('2025-01-01T00:00:00.000Z')), threadId: runThreadId('run-c') };
  await memory.ensureThread({ threadId: state.threadId, userId: 'ada', chunks: [goalChunk(state)], meta: system });
  const write = async (step: PlanStep) => {
    const outcome =
      step.type === 'ask_user'
        ? { kind: 'user_reply' as const, content: 'About 80 EUR a night.' }
        : { kind: 'tool' as const, content: JSON.stringify({ hotel: step.description, rooms: 12, stars: 4 }) };
    await rememberInRun({ memory, ...(compressEvery ? { compressEvery } : {}) }, state, stepChunks(state, step, outcome), `step ${step.id}`, `key-${step.id}`);
  };
  return { state, write };
}

test('compress_memory summarizes the older steps now, keeps the newest four and the person’s words verbatim, audited as the agent’s', async () => {
  const memory = new MemoryService({ store: new InMemoryMemoryStore(), limits: { soft: 50_000, hard: 100_000 }, summarizer });
  const { state, write } = await runSteps(memory, 8);
  for (const step of state.steps) await write(step);
  const registry = new ToolRegistry(WORKING_MEMORY_TOOLS);
  const out = result<{ steps: number; tokensBefore: number; tokensAfter: number }>(
    await registry.run('compress_memory', { reason: 'long enough' }, toolContext({ memory, runThread: state.threadId as string, runId: 'run-c' })),
  );
  assert.ok(out.steps >= 1 && out.tokensAfter < out.tokensBefore);
  const { chunks } = await memory.view(state.threadId as string);
  assert.deepEqual(
    chunks.map((c) => c.type),
    [
      'delegation',
      'compacted',
      'user',
      'compacted',
      ...Array<string>(8)
        .fill('')
        .map((_, i) => (i % 2 ? 'action_response' : 'action')),
    ],
  );
  assert.equal(renderContent((chunks[2] as Chunk).content), 'About 80 EUR a night.');
  const records = await memory.audit(state.threadId as string, { kind: 'batch_replace' });
  assert.ok(records.length >= 1 && records.every((r) => r.origin === 'agent' && r.reason.startsWith('compress_memory: long enough')));
});

test('compress_memory without a summarizer says so', async () => {
  const { run } = await setup();
  assert.match(failure(await run('compress_memory', {})), /needs a summarizer/);
});

test('MEMORY_COMPRESS_EVERY: a run under its soft limit is compressed once N older steps have gathered, and again N steps later', async () => {
  const memory = new MemoryService({ store: new InMemoryMemoryStore(), limits: { soft: 50_000, hard: 100_000 }, summarizer });
  const { state, write } = await runSteps(memory, 14, 3);
  const compressions = async () => (await memory.audit(state.threadId as string, { kind: 'batch_replace' })).length;
  const steps = state.steps;
  // Steps 1–6: two steps (1 and 2) older than the newest four.
  for (const step of steps.slice(0, 6)) await write(step);
  assert.equal(await compressions(), 0);
  // Step 7 makes three (1, 2 — its question; the reply itself stays — and 3): due.
  await write(steps[6] as PlanStep);
  const first = await compressions();
  assert.ok(first >= 1, 'compressed once three older steps gathered');
  const reasons = (await memory.audit(state.threadId as string, { kind: 'batch_replace' })).map((r) => r.reason);
  assert.ok(reasons.every((r) => r.startsWith('every 3 steps (MEMORY_COMPRESS_EVERY)')));
  for (const step of steps.slice(7, 9)) await write(step);
  assert.equal(await compressions(), first, 'not again before three more steps');
  await write(steps[9] as PlanStep);
  assert.equal(await compressions(), first + 1, 'again three steps later, the earlier summary folded in');
  const { chunks } = await memory.view(state.threadId as string);
  assert.ok(chunks.some((c) => c.type === 'user' && renderContent(c.content) === 'About 80 EUR a night.'));
  // Without the setting, the same run under its soft limit is never compressed.
  const plain = new MemoryService({ store: new InMemoryMemoryStore(), limits: { soft: 50_000, hard: 100_000 }, summarizer });
  const again = await runSteps(plain, 14);
  for (const step of again.state.steps) await again.write(step);
  assert.equal((await plain.audit(again.state.threadId as string, { kind: 'batch_replace' })).length, 0);
});
