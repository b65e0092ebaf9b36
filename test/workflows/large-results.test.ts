/**
 * Bounded payloads end to end: a tool that returns 20 MB — a string without a space, and a JSON
 * object of many records — on the real Temporal server, with the real `openai` client talking
 * HTTP to the stub model server. The run completes, its history stays small (results cross it as
 * a head), the model's next prompt stays within the memory hard limit, and the whole result is
 * still there (the step journal) — with and without payload encryption.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { temporal } from '@temporalio/proto';
import { z } from 'zod';
import { countTextTokens } from '../../src/memory/tokens';
import type { ExecutionState } from '../../src/planning/execution-state';
import { openMemory } from '../../src/store/open-memory';
import { Runs } from '../../src/temporal/runs';
import { defineTool } from '../../src/tools/tool';
import { readToolResult } from '../../src/temporal/tool-results';
import { answer, cont, respondStep, toolStep } from '../helpers/scenarios';
import { StubModelServer } from '../helpers/stub-model-server';
import { startTestEnv, stubProvider, testConfig, type TestEnv } from '../helpers/temporal-env';

const MB = 1024 * 1024;
const END = 'END-OF-HUGE-RESULT';
const HARD_LIMIT = 8000;

/** 20 MB in one string without a space (the tokenizer's worst case: one endless pre-token). */
const plain = () => `${'x'.repeat(20 * MB)}${END}`;
/** 20 MB of JSON: records with words, numbers and nesting. */
function records() {
  const rows = [];
  for (let i = 0; rows.length * 100 < 20 * MB; i++) rows.push({ id: i, name: `record number ${i}`, tags: ['alpha', 'beta'], value: i * 3.25, note: 'the quick brown fox jumps' });
  return { rows, end: END };
}

const hugeTool = defineTool({
  name: 'huge',
  description: 'Returns 20 MB (test tool).',
  input: z.object({ shape: z.enum(['plain', 'json']) }),
  handler: async ({ shape }) => (shape === 'plain' ? plain() : records()),
});

async function historyBytes(env: TestEnv, runId: string): Promise<number> {
  const raw = await env.client.workflowService.getWorkflowExecutionHistory({ namespace: env.config.TEMPORAL_NAMESPACE, execution: { workflowId: runId } });
  return temporal.api.history.v1.History.encode(raw.history ?? {}).finish().length;
}

for (const encrypted of [false, true]) {
  describe(encrypted ? 'with every payload encrypted' : 'plain payloads', () => {
    const stub = new StubModelServer();
    let env: TestEnv;

    before(async () => {
      await stub.start();
      const config = testConfig({
        MEMORY_SOFT_LIMIT: '6000',
        MEMORY_HARD_LIMIT: String(HARD_LIMIT),
        ...(encrypted ? { THREADLINE_ENCRYPTION_KEY: randomBytes(32).toString('base64') } : {}),
      });
      env = await startTestEnv({ provider: stubProvider(stub.url), extraTools: [hugeTool], config });
    });
    after(async () => {
      await env?.stop();
      await stub.stop();
    });

    test('a run of two 20 MB tool results completes with a small history and a prompt within the hard limit; the whole results stay retrievable', { timeout: 600_000 }, async () => {
      const goal = `fetch two huge results (${encrypted ? 'sealed' : 'plain'})`;
      stub.script(goal, {
        execution_plan: [{ steps: [toolStep('huge', { shape: 'plain' }), toolStep('huge', { shape: 'json' }), respondStep] }],
        replan_decision: [cont, cont],
        final_answer: [answer('fetched both')],
      });
      const { runId } = await new Runs(env.client, env.config).start({ userId: 'big-results', goal });
      const state = (await env.client.workflow.getHandle(runId).result()) as ExecutionState;
      assert.equal(state.status, 'completed', state.lastError ?? '');
      assert.equal(state.finalAnswer, 'fetched both');
      assert.equal(state.observations.length, 2);
      for (const o of state.observations) assert.match(o.content, /… \[truncated \d+ chars\]$/);

      const bytes = await historyBytes(env, runId);
      assert.ok(bytes < 100_000, `history is ${bytes} bytes for 40 MB of results`);

      // Every prompt of the run (the replans after each result, and the answer) stays within the hard limit.
      const prompts = stub.requestsFor(goal);
      assert.equal(prompts.length, 4);
      for (const request of prompts) {
        const memory = request.messages.map((m) => m.content).join('\n');
        const tokens = countTextTokens(memory);
        assert.ok(tokens < HARD_LIMIT + 3000, `${request.name} prompt of ${tokens} tokens (hard limit ${HARD_LIMIT})`);
      }

      // The run's memory says where the whole result is; that reference gives it back whole.
      const { memory, close } = await openMemory(env.config);
      try {
        const view = await memory.view(state.threadId ?? '');
        const responses = view.chunks.filter((c) => c.type === 'action_response');
        assert.equal(responses.length, 2);
        const refs = responses.map((c) => /"ref":\s*"([^"]+)"/.exec(JSON.stringify(c.content).replace(/\\"/g, '"'))?.[1]);
        const [plainRef, jsonRef] = refs;
        assert.ok(plainRef && jsonRef, `the action responses name their whole results: ${JSON.stringify(responses.map((c) => c.content)).slice(0, 500)}`);
        const whole = await readToolResult(env.config, plainRef);
        assert.equal(whole?.length, JSON.stringify(plain()).length);
        assert.ok(whole?.endsWith(`${END}"`));
        const json = JSON.parse((await readToolResult(env.config, jsonRef)) ?? 'null') as { rows: unknown[]; end: string };
        assert.equal(json.end, END);
        assert.equal(json.rows.length, records().rows.length);
      } finally {
        await close();
      }
    });
  });
}
