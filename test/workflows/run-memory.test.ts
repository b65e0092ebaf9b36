/**
 * A run's working memory (seed 004): each tool step a record of its thought, action, result,
 * status and time; past the thread's soft token limit older steps are compacted by real
 * `memory_summary` model calls while the newest steps stay raw, and later prompts see both.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { KEEP_RECENT_STEPS } from '../../src/memory/compaction';
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
    assert.ok(
      renders.every((r) => states.has(r.stateId)),
      'each names a state of the thread',
    );
    assert.ok(new Set(renders.map((r) => r.stateId)).size > 1, 'later prompts read later states');
  } finally {
    await close();
  }
  // A later prompt was built from the compacted memory.
  const lastPrompt =
    stub
      .requestsFor(goal, 'final_answer')[0]
      ?.messages.map((m) => m.content)
      .join('\n') ?? '';
  assert.match(lastPrompt, /SUMMARY-\d+/);
  assert.equal(stub.misses.length, 0, `unexpected model calls: ${stub.misses.map((m) => m.name).join(', ')}`);
});

test('each tool step records its thought, action, result, status and time; older steps are summarized, the last KEEP_RECENT_STEPS stay raw', async () => {
  const goal = 'a long run of recorded steps';
  // Ten tool steps; the ninth divides by zero, so its record is an error.
  const steps = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map((n) => toolStep('calculator', { expression: n === 9 ? '1/0' : `${n}*7` }, `compute step ${n} of the series`));
  stub.script(goal, { execution_plan: [{ steps: [...steps, respondStep] }], replan_decision: steps.map(() => cont), final_answer: [answer('series done')] });
  stub.script('', { memory_summary: Array.from({ length: 30 }, (_, i) => ({ summary: `ROLLUP-${i}: the earlier steps computed multiples of seven.` })) });

  const runs = new Runs(env.client, env.config);
  const { runId } = await runs.start({ userId: 'recorder', goal });
  const state = (await env.client.workflow.getHandle(runId).result()) as ExecutionState;
  assert.equal(state.status, 'completed');

  const { memory, close } = await openMemory(env.config);
  try {
    const view = await memory.view(state.threadId ?? '');
    const raw = view.chunks.filter((c) => c.type === 'action' || c.type === 'action_response');
    // Only the newest steps are still raw, each whole (its action and its result), in order.
    const recent = state.steps
      .filter((s) => s.type === 'tool')
      .slice(-KEEP_RECENT_STEPS)
      .map((s) => s.id);
    assert.deepEqual(
      raw.map((c) => c.provenance.stepId),
      recent.flatMap((id) => [id, id]),
    );
    assert.deepEqual(
      raw.map((c) => c.type),
      recent.flatMap(() => ['action', 'action_response']),
    );
    // The older ones live on in a summary, placed before them.
    const types = view.chunks.map((c) => c.type);
    assert.equal(types[0], 'delegation');
    assert.equal(types[1], 'compacted');
    assert.match(JSON.stringify(view.chunks[1]?.content), /ROLLUP-\d+/);
    assert.equal(types.at(-1), 'output');

    const data = (i: number) => (raw[i]?.content as { kind: 'json'; data: Record<string, unknown> }).data;
    const step7 = state.steps[6];
    assert.deepEqual(data(0), { step: step7?.id, thought: 'compute step 7 of the series', tool: 'calculator', args: { expression: '7*7' } });
    const result7 = data(1);
    assert.deepEqual({ step: result7.step, result: result7.result, status: result7.status }, { step: step7?.id, result: { value: 49 }, status: 'success' });
    assert.ok(typeof result7.at === 'string' && !Number.isNaN(Date.parse(result7.at)), `time of the step: ${String(result7.at)}`);
    assert.ok(typeof result7.seconds === 'number' && result7.seconds >= 0, `execution time: ${String(result7.seconds)}`);
    const failed = data(5);
    assert.equal(failed.status, 'error');
    assert.match(String(failed.error), /1\/0/);
    assert.equal(failed.result, undefined);
  } finally {
    await close();
  }

  // The summaries were made from whole step records (the thought included), oldest first.
  const summarized = stub
    .requestsFor('', 'memory_summary')
    .map((r) => r.messages.map((m) => m.content).join('\n'))
    .join('\n');
  assert.match(summarized, /thought: compute step 1 of the series[\s\S]*status: success/);
  // The last prompt shows the summary, then the recent steps raw.
  const lastPrompt =
    stub
      .requestsFor(goal, 'final_answer')[0]
      ?.messages.map((m) => m.content)
      .join('\n') ?? '';
  assert.match(lastPrompt, /ROLLUP-\d+[\s\S]*thought: compute step 7 of the series[\s\S]*status: error[\s\S]*thought: compute step 10 of the series/);
  assert.doesNotMatch(lastPrompt, /thought: compute step 1 of the series/);
  assert.equal(stub.misses.length, 0, `unexpected model calls: ${stub.misses.map((m) => m.name).join(', ')}`);
});
