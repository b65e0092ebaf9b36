/**
 * Seed 002's compression beside the token threshold, on the real server: with
 * MEMORY_COMPRESS_EVERY a run's older steps are summarized every N steps while its thread is far
 * under its soft limit, and the run's model reaches its own memory with list_memory,
 * compress_memory and update_memory (seed 001: only what it may change; a refusal is an error
 * observation it can react to), each recorded in the thread's audit as the agent's.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { ExecutionState } from '../../src/planning/execution-state';
import { openMemory } from '../../src/store/open-memory';
import { Runs } from '../../src/temporal/runs';
import { answer, cont, respondStep, toolStep } from '../helpers/scenarios';
import { StubModelServer } from '../helpers/stub-model-server';
import { startTestEnv, stubProvider, testConfig, waitFor, type TestEnv } from '../helpers/temporal-env';

const stub = new StubModelServer();
let env: TestEnv;

before(async () => {
  await stub.start();
  env = await startTestEnv({ provider: stubProvider(stub.url), config: testConfig({ MEMORY_SOFT_LIMIT: '50000', MEMORY_HARD_LIMIT: '60000', MEMORY_COMPRESS_EVERY: '2' }) });
});
after(async () => {
  await env?.stop();
  await stub.stop();
});

test('every 2 steps the older steps are summarized; the model lists, compresses and may not rewrite what it may not change', async () => {
  const goal = 'sum things up as you go';
  const steps = [1, 2, 3, 4, 5, 6, 7].map((n) => toolStep('calculator', { expression: `${n}*7` }, `multiply ${n}`));
  const own = [
    toolStep('list_memory', {}, 'look at my memory'),
    toolStep('update_memory', { chunkId: 'chunk_notmine', text: 'rewritten' }, 'rewrite a chunk that is not there'),
    toolStep('compress_memory', { reason: 'done with the early steps' }, 'compress my memory'),
  ];
  const plan = [...steps, ...own, respondStep];
  stub.script(goal, { execution_plan: [{ steps: plan }], replan_decision: plan.map(() => cont), final_answer: [answer('done')] });
  stub.script('', { memory_summary: Array.from({ length: 30 }, (_, i) => ({ summary: `SUMMARY-${i}: multiplied small numbers by 7.` })) });

  const { runId } = await new Runs(env.client, env.config).start({ userId: 'compressor', goal });
  const state = (await env.client.workflow.getHandle(runId).result()) as ExecutionState;
  assert.equal(state.status, 'completed', state.lastError ?? '');

  const observed = (description: string) => state.observations.find((o) => o.stepId === state.steps.find((s) => s.description === description)?.id);
  // The observation in the run's state is the head of the result (the whole is in the thread).
  const listed = observed('look at my memory')?.content ?? '';
  assert.match(listed, /^\{"chunks":\[\{"chunkId":"chunk_\w+","type":"delegation","retention":"CRITICAL","tokens":\d+,"modifiable":false/);
  const refused = observed('rewrite a chunk that is not there');
  assert.equal(refused?.kind, 'error');
  assert.match(refused?.content ?? '', /no chunk "chunk_notmine" in this run's memory/);
  assert.equal(observed('compress my memory')?.kind, 'tool');

  const { memory, close } = await openMemory(env.config);
  try {
    const threadId = state.threadId ?? '';
    const every = await memory.audit(threadId, { origin: 'system', kind: 'batch_replace' });
    assert.ok(every.length >= 2, `compressed every 2 steps, got ${every.length}`);
    assert.ok(every.every((r) => r.reason.startsWith('every 2 steps (MEMORY_COMPRESS_EVERY)')));
    const byAgent = await memory.audit(threadId, { origin: 'agent', kind: 'batch_replace' });
    assert.ok(byAgent.every((r) => r.reason.startsWith('compress_memory: done with the early steps')));
    // The goal is untouched, and nothing but the system and the agent's tool compressed.
    assert.equal((await memory.view(threadId)).chunks[0]?.type, 'delegation');
    const reads = await waitFor('the list_memory read in the audit', async () => {
      const found = await memory.auditReads(threadId, { runId, origin: 'agent' });
      return found.some((r) => r.reason === 'list_memory') ? found : null;
    });
    assert.ok(reads.some((r) => r.target === 'thread'));
  } finally {
    await close();
  }
});
