/**
 * However a run ends — an answer, a replan `finish`, the step limit, a failure, a cancellation,
 * a rejected tree plan — its memory thread drops its EPHEMERAL chunks and its last chunk is an
 * output chunk saying how it ended (seed 001). Real server, real worker, the stub model over HTTP.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { z } from 'zod';
import type { Chunk } from '../../src/memory/model';
import type { ExecutionState } from '../../src/planning/execution-state';
import { runThreadId } from '../../src/memory/run-chunks';
import { openMemory } from '../../src/store/open-memory';
import type { MemoryService } from '../../src/store/memory-service';
import { Runs } from '../../src/temporal/runs';
import { defineTool } from '../../src/tools/tool';
import { answer, askStep, cont, respondStep, toolStep } from '../helpers/scenarios';
import { StubModelServer, type StubScript } from '../helpers/stub-model-server';
import { startTestEnv, stubProvider, testConfig, waitFor, type TestEnv } from '../helpers/temporal-env';

const stub = new StubModelServer();
let env: TestEnv;
let runs: Runs;
let memory: MemoryService;
let closeMemory: () => Promise<void>;

/** A live tool: every plan run snapshots it first, an EPHEMERAL chunk of its thread. */
const weather = defineTool({ name: 'weather_now', description: 'The weather right now.', input: z.object({}), live: true, handler: async () => ({ sky: 'clear' }) });

before(async () => {
  await stub.start();
  // One step per run: a second step meets the step limit.
  env = await startTestEnv({ provider: stubProvider(stub.url), extraTools: [weather], config: testConfig({ MAX_STEPS: '1' }) });
  runs = new Runs(env.client, env.config);
  ({ memory, close: closeMemory } = await openMemory(env.config));
});
after(async () => {
  await closeMemory?.();
  await env?.stop();
  await stub.stop();
});

const calc = toolStep('calculator', { expression: '6*7' });
const result = async (runId: string) => (await env.client.workflow.getHandle(runId).result()) as ExecutionState;
const chunksOf = async (runId: string): Promise<Chunk[]> => (await memory.view(runThreadId(runId))).chunks;

/** Runs `goal` with a live snapshot first, and returns its final state and its thread's chunks. */
async function planRun(goal: string, script: StubScript, steer?: (runId: string) => Promise<void>) {
  stub.script(goal, { live_state_check: [{ tools: ['weather_now'] }], ...script });
  const { runId } = await runs.start({ userId: 'ender', goal });
  await steer?.(runId);
  const state = await result(runId);
  const chunks = await chunksOf(runId);
  assert.ok(!chunks.some((c) => c.retention === 'EPHEMERAL'), `EPHEMERAL chunks left: ${chunks.map((c) => `${c.type}/${c.retention}`).join(', ')}`);
  const audit = await memory.audit(runThreadId(runId), { kind: 'delete' });
  assert.ok(
    audit.some((r) => /^run ended: /.test(r.reason ?? '')),
    'the snapshot was dropped when the run ended',
  );
  return { state, chunks, last: chunks.at(-1) };
}

test('a run that answers with a respond step: the answer is its last chunk, the snapshot is gone', async () => {
  const { state, last } = await planRun('answer me', { execution_plan: [{ steps: [respondStep] }], final_answer: [answer('clear skies')] });
  assert.equal(state.status, 'completed');
  assert.equal(last?.type, 'output');
  assert.deepEqual(last?.content, { kind: 'text', text: 'clear skies' });
});

test('a run ended by a replan finish: its answer is its last chunk, the snapshot is gone', async () => {
  const { state, last } = await planRun('finish early', { execution_plan: [{ steps: [calc, calc] }], replan_decision: [{ decision: 'finish', answer: '42, done' }] });
  assert.equal(state.status, 'completed');
  assert.deepEqual(last?.content, { kind: 'text', text: '42, done' });
});

test('a run stopped by the step limit records that in its thread', async () => {
  const { state, last } = await planRun('too many steps', { execution_plan: [{ steps: [calc, calc] }], replan_decision: [cont] });
  assert.equal(state.status, 'failed');
  assert.equal(last?.type, 'output');
  assert.deepEqual(last?.content, { kind: 'json', data: { ending: 'step_limit', status: 'failed', reason: state.lastError } });
});

test('a run that fails while planning (after its snapshot) records the failure in its thread', async () => {
  const { state, last } = await planRun('unplannable', { execution_plan: ['not json', 'still not json', 'never json'] });
  assert.equal(state.status, 'failed');
  assert.equal(state.threadId, null, 'the state never learned its thread');
  assert.deepEqual(last?.content, { kind: 'json', data: { ending: 'failed', status: 'failed', reason: state.lastError } });
});

test('a run cancelled while it waits for a reply records the cancellation in its thread', async () => {
  const { state, last } = await planRun('ask then be cancelled', { execution_plan: [{ steps: [askStep('which city?'), respondStep] }] }, async (runId) => {
    await waitFor('the question', async () => (await runs.get(runId)).status === 'waiting_user');
    await runs.cancel(runId);
  });
  assert.equal(state.status, 'cancelled');
  assert.deepEqual(last?.content, { kind: 'json', data: { ending: 'cancelled', status: 'cancelled' } });
});

test('a tree run whose plan is rejected closes its thread the same way', async () => {
  const goal = 'a tree to reject';
  stub.script(goal, { task_tree: [{ name: 'Trip', goal, subtasks: [{ name: 'Train', goal: 'Book a train' }] }] });
  const { runId } = await runs.start({ userId: 'ender', goal, engine: 'tree', review: true });
  const waiting = await waitFor('the review', async () => {
    const s = await runs.get(runId);
    return s.status === 'waiting_review' ? s : null;
  });
  // Something only for this session of the run (tree runs take no snapshots of their own).
  await memory.apply(
    runThreadId(runId),
    { op: 'add', chunks: [{ type: 'environment', content: { kind: 'text', text: 'screen is 80 columns' }, retention: 'EPHEMERAL' }] },
    { origin: 'user', reason: 'only for this session', trigger: 'test' },
  );
  await runs.review(runId, { decision: 'reject', planId: waiting.planId ?? '', feedback: 'not now' });
  const state = await result(runId);
  assert.equal(state.status, 'cancelled');
  const chunks = await chunksOf(runId);
  assert.ok(!chunks.some((c) => c.retention === 'EPHEMERAL'));
  assert.deepEqual(chunks.at(-1)?.content, { kind: 'json', data: { ending: 'cancelled', status: 'cancelled', reason: 'plan rejected: not now' } });
});
