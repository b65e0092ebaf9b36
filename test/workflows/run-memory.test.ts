/**
 * A run's working memory past its thread's soft token limit is compacted by
 * real `memory_summary` model calls, and later prompts see the summary.
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
  env = await startTestEnv({ provider: stubProvider(stub.url), config: testConfig({ MEMORY_SOFT_LIMIT: '120', MEMORY_HARD_LIMIT: '4000' }) });
});
after(async () => {
  await env?.stop();
  await stub.stop();
});

test('working memory past the soft limit is compacted by memory_summary calls, and the planner sees the summary', async () => {
  const goal = 'many steps to remember';
  const steps = [1, 2, 3, 4, 5, 6].map((n) => toolStep('calculator', { expression: `${n}*1000` }, `multiply ${n}`));
  stub.script(goal, { execution_plan: [{ steps: [...steps, respondStep] }], replan_decision: steps.map(() => cont), final_answer: [answer('all multiplied')] });
  // Summaries have no goal line: the stub files them under the empty goal.
  stub.script('', { memory_summary: Array.from({ length: 20 }, (_, i) => ({ summary: `SUMMARY-${i}: earlier calculations gave thousands.` })) });

  const runs = new Runs(env.client, env.config);
  const { runId } = await runs.start({ userId: 'compactor', goal });
  const state = (await env.client.workflow.getHandle(runId).result()) as ExecutionState;
  assert.equal(state.status, 'completed');

  const summaries = stub.requestsFor('', 'memory_summary');
  assert.ok(summaries.length >= 1, 'expected at least one memory_summary call');
  const format = summaries[0]?.body.response_format as { json_schema: { name: string } };
  assert.equal(format.json_schema.name, 'memory_summary');
  assert.match(summaries[0]?.messages.map((m) => m.content).join('\n') ?? '', /1\*1000/);

  const { memory, close } = await openMemory(env.config);
  try {
    const view = await memory.view(state.threadId ?? '');
    const compacted = view.chunks.filter((c) => c.type === 'compacted');
    assert.ok(compacted.length >= 1, `expected a compacted chunk, got ${view.chunks.map((c) => c.type).join(', ')}`);
    assert.match(JSON.stringify(compacted[0]?.content), /SUMMARY-\d+/);
    // The goal (CRITICAL) is never compacted.
    assert.equal(view.chunks[0]?.type, 'delegation');
    const audit = await memory.audit(state.threadId ?? '', { origin: 'system', kind: 'batch_replace' });
    assert.ok(audit.length >= 1);
    // Every prompt rendered from the thread is in its audit: the agent's read, for which call of which run, of which state.
    const renders = await waitFor('the worker to record its renderings', async () => {
      const reads = await memory.auditReads(state.threadId ?? '', { target: 'context', runId });
      return reads.some((r) => r.reason === 'prompt of final_answer') ? reads : null;
    });
    assert.deepEqual([...new Set(renders.map((r) => r.reason))], ['prompt of execution_plan', 'prompt of replan_decision', 'prompt of final_answer']);
    assert.ok(renders.every((r) => r.origin === 'agent' && r.kind === 'read'));
    const states = new Set((await memory.states(state.threadId ?? '')).map((s) => s.stateId));
    assert.ok(renders.every((r) => states.has(r.stateId)), 'each names a state of the thread');
    assert.ok(new Set(renders.map((r) => r.stateId)).size > 1, 'later prompts read later states');
  } finally {
    await close();
  }
  // A later prompt was built from the compacted memory.
  const lastPrompt = stub.requestsFor(goal, 'final_answer')[0]?.messages.map((m) => m.content).join('\n') ?? '';
  assert.match(lastPrompt, /SUMMARY-\d+/);
  assert.equal(stub.misses.length, 0, `unexpected model calls: ${stub.misses.map((m) => m.name).join(', ')}`);
});
