/**
 * USER_TOKEN_BUDGET within runs, over real HTTP with a real Temporal server and worker: a run whose
 * user's budget runs out mid-run fails at its next model call with a clear error (no retries, no
 * further call).
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import type { ExecutionState } from '../../src/engine/contract';
import { createUsageStore, type summarize, type UsageStore } from '../../src/usage/usage-store';
import { answer, cont, respondStep, toolStep } from '../helpers/scenarios';
import { requestJson } from '../helpers/http';
import { startRunsApi, type RunsApi } from '../helpers/runs-api';
import { STUB_USAGE, StubModelServer } from '../helpers/stub-model-server';
import { testConfig, waitFor } from '../helpers/temporal-env';

/** Three chat calls' tokens. */
const CALL = STUB_USAGE.prompt + STUB_USAGE.completion;
const BUDGET = 3 * CALL;

const stub = new StubModelServer();
const config = testConfig({ USER_TOKEN_BUDGET: String(BUDGET) });
let usage: UsageStore;
let api: RunsApi;

before(async () => {
  usage = createUsageStore(config);
  await usage.setup();
  api = await startRunsApi(stub, { config, app: { usage: { store: usage, budget: BUDGET } } });
});
after(async () => {
  await api?.stop();
  await usage?.end();
});

const newUser = (what: string) => `${what}-${randomUUID().slice(0, 8)}`;
const usageOf = async (userId: string) => (await requestJson<ReturnType<typeof summarize>>(api.url, 'GET', `/v1/users/${userId}/usage`)).body;

test("a run whose user's budget runs out mid-run fails at its next model call with a clear error, without retrying it", async () => {
  const user = newUser('spender');
  const goal = `spend it all ${user}`;
  const calc = toolStep('calculator', { expression: '1+1' });
  stub.script(goal, { execution_plan: [{ steps: [calc, calc, calc, respondStep] }], replan_decision: [cont, cont, cont], final_answer: [answer('done')] });
  const started = await requestJson<{ runId: string }>(api.url, 'POST', '/v1/runs', { userId: user, goal });
  assert.equal(started.status, 201, JSON.stringify(started.body));
  const startedAt = Date.now();
  // The plan and two replans reach the budget: the third replan is refused before it is sent.
  const failed = await waitFor('the run to fail', async () => {
    const state = (await requestJson<ExecutionState>(api.url, 'GET', `/v1/runs/${started.body.runId}`)).body;
    return state.status === 'failed' ? state : state.status === 'completed' ? assert.fail('the run completed past its budget') : undefined;
  });
  assert.match(failed.lastError ?? '', new RegExp(`user "${user}" used ${BUDGET} of a ${BUDGET}-token monthly budget \\(USER_TOKEN_BUDGET\\); model calls resume on \\d{4}-\\d{2}-01`));
  assert.doesNotMatch(failed.lastError ?? '', /attempts/, 'refused once, not retried');
  assert.ok(Date.now() - startedAt < 10_000, 'no retries with backoff');
  assert.equal(stub.requestsFor(goal).length, 3, 'no model call past the budget');
  assert.equal((await usageOf(user)).total.calls, 3);
  // And the API refuses the next run of that user.
  const refused = await requestJson<{ error: { code: string } }>(api.url, 'POST', '/v1/runs', { userId: user, goal });
  assert.equal(refused.status, 403);
  assert.equal(refused.body.error.code, 'budget_exceeded');
});
