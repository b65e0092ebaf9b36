/**
 * Claim check end to end: a run whose goal is far over the threshold (so its workflow input,
 * activity inputs, queries and result are all large) runs on the real Temporal server with
 * encryption on; history keeps only references, the blobs only sealed bytes.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { temporal } from '@temporalio/proto';
import type { ExecutionState } from '../../src/planning/execution-state';
import { CLAIM_CHECK_ENCODING } from '../../src/temporal/codec/claim-check';
import { Runs } from '../../src/temporal/runs';
import { answer, respondStep } from '../helpers/scenarios';
import { StubModelServer } from '../helpers/stub-model-server';
import { startTestEnv, stubProvider, testConfig, type TestEnv } from '../helpers/temporal-env';

const stub = new StubModelServer();
let env: TestEnv;
const config = testConfig({
  THREADLINE_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
  CLAIM_CHECK_THRESHOLD: String(64 * 1024),
  MEMORY_SOFT_LIMIT: '400000',
  MEMORY_HARD_LIMIT: '400000',
});

before(async () => {
  await stub.start();
  env = await startTestEnv({ provider: stubProvider(stub.url), config });
});
after(async () => {
  await env?.stop();
  await stub.stop();
});

test('a run with a 400 kB goal completes; history holds claim-check references and no plaintext, blobs are sealed', async () => {
  const goal = `summarize this document: ${'lorem ipsum PLAINTEXT-MARK '.repeat(15_000)}`;
  assert.ok(goal.length > 400_000);
  stub.script(goal, { execution_plan: [{ steps: [respondStep] }], final_answer: [answer('a long document of lorem ipsum')] });
  const { runId } = await new Runs(env.client, env.config).start({ userId: 'big-goal', goal });
  const state = (await env.client.workflow.getHandle(runId).result()) as ExecutionState;
  assert.equal(state.status, 'completed');
  assert.equal(state.goal, goal, 'the result comes back whole through the blob store');
  assert.equal(state.finalAnswer, 'a long document of lorem ipsum');

  const raw = await env.client.workflowService.getWorkflowExecutionHistory({ namespace: config.TEMPORAL_NAMESPACE, execution: { workflowId: runId } });
  const events = raw.history?.events ?? [];
  const bytes = Buffer.from(temporal.api.history.v1.History.encode(raw.history ?? {}).finish());
  assert.ok(bytes.length < 40_000, `history is ${bytes.length} bytes for a 400 kB goal`);
  assert.ok(!bytes.includes('PLAINTEXT-MARK'));
  const input = events[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0];
  assert.equal(Buffer.from(input?.metadata?.encoding ?? []).toString(), CLAIM_CHECK_ENCODING);

  const dir = path.join(config.dataDir, 'blobs');
  const blobs = readdirSync(dir).flatMap((shard) => readdirSync(path.join(dir, shard)).map((f) => path.join(dir, shard, f)));
  assert.ok(blobs.length >= 2, 'input and result at least');
  for (const blob of blobs) assert.ok(!readFileSync(blob).includes('PLAINTEXT-MARK'), 'blobs hold sealed bytes only');
});
