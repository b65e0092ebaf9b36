/**
 * Token accounting end to end: the real `openai` client reads each reply's usage from the stub
 * model server, the worker records it per run, session and user, `GET /v1/users/:userId/usage`
 * sums it, and a monthly budget stops new runs. Real Temporal server and worker.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { createUsageStore, summarize, type UsageStore } from '../../src/store/usage/usage-store';
import { answer, cont, respondStep, toolStep } from '../helpers/scenarios';
import { requestJson } from '../helpers/http';
import { startRunsApi, type RunsApi } from '../helpers/runs-api';
import { STUB_USAGE, StubModelServer } from '../helpers/stub-model-server';
import { testConfig, waitFor } from '../helpers/temporal-env';

const stub = new StubModelServer();
const config = testConfig();
let usage: UsageStore;
let api: RunsApi;
const BUDGET = 5 * (STUB_USAGE.prompt + STUB_USAGE.completion);

before(async () => {
  usage = createUsageStore(config);
  await usage.setup();
  api = await startRunsApi(stub, { config, app: { usage: { store: usage, budget: BUDGET } } });
});
after(async () => {
  await api?.stop();
  await usage?.end();
});

async function runToEnd(userId: string, goal: string): Promise<string> {
  const res = await requestJson<{ runId: string }>(api.url, 'POST', '/v1/runs', { userId, goal });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  await waitFor('the run to complete', async () => (await requestJson<{ status: string }>(api.url, 'GET', `/v1/runs/${res.body.runId}`)).body.status === 'completed');
  return res.body.runId;
}

test("every model call's usage is recorded on its run and summed per run and per user; since= narrows it", async () => {
  const user = `usage-${randomUUID().slice(0, 8)}`;
  stub.script('count my tokens', {
    execution_plan: [{ steps: [toolStep('calculator', { expression: '1+1' }), respondStep] }],
    replan_decision: [cont],
    final_answer: [answer('2')],
  });
  const before = new Date();
  const runId = await runToEnd(user, 'count my tokens');
  // plan, the step's replan, the answer: three calls.
  const res = await requestJson<ReturnType<typeof summarize>>(api.url, 'GET', `/v1/users/${user}/usage`);
  assert.equal(res.status, 200);
  const calls = 3;
  assert.deepEqual(res.body.total, { promptTokens: calls * STUB_USAGE.prompt, completionTokens: calls * STUB_USAGE.completion, cachedTokens: calls * STUB_USAGE.cached, calls });
  assert.deepEqual(
    res.body.runs.map((r) => [r.runId, r.calls]),
    [[runId, calls]],
  );
  const later = await requestJson<ReturnType<typeof summarize>>(api.url, 'GET', `/v1/users/${user}/usage?since=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`);
  assert.equal(later.body.total.calls, 0);
  const all = await requestJson<ReturnType<typeof summarize>>(api.url, 'GET', `/v1/users/${user}/usage?since=${encodeURIComponent(before.toISOString())}`);
  assert.equal(all.body.total.calls, calls);
  assert.equal((await requestJson(api.url, 'GET', `/v1/users/${user}/usage?since=yesterday`)).status, 400);
});

test('a user whose tokens this month reach the budget cannot start runs (403 budget_exceeded); other users can', async () => {
  const user = `budget-${randomUUID().slice(0, 8)}`;
  stub.script('spend', { execution_plan: [{ steps: [respondStep] }, { steps: [respondStep] }, { steps: [respondStep] }], final_answer: [answer('a'), answer('b'), answer('c')] });
  // Two calls a run: the third run brings the user to the budget of five calls' tokens.
  for (let i = 0; i < 3; i++) await runToEnd(user, 'spend');
  const refused = await requestJson<{ error: { code: string; message: string } }>(api.url, 'POST', '/v1/runs', { userId: user, goal: 'spend' });
  assert.equal(refused.status, 403);
  assert.equal(refused.body.error.code, 'budget_exceeded');
  assert.match(refused.body.error.message, /budget/);
  stub.script('fresh', { execution_plan: [{ steps: [respondStep] }], final_answer: [answer('ok')] });
  assert.equal((await requestJson(api.url, 'POST', '/v1/runs', { userId: `other-${user}`, goal: 'fresh' })).status, 201);
});
