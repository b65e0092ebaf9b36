/**
 * The inspector's run view shows a tool call held for approval (issue 28 §3) — the tool, its args
 * and why it waits — and decides it: in a real headless browser, over the real REST API, Temporal
 * server and worker, the stub model server behind the real `openai` client.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import type { ExecutionState } from '../../src/planning/execution-state';
import { openMemory, type OpenMemory } from '../../src/store/open-memory';
import { launchBrowser, withPage } from '../helpers/browser';
import { requestJson } from '../helpers/http';
import { startRunsApi, type RunsApi } from '../helpers/runs-api';
import { answer, cont, respondStep, toolStep } from '../helpers/scenarios';
import { StubModelServer } from '../helpers/stub-model-server';
import { testConfig } from '../helpers/temporal-env';

const stub = new StubModelServer();
let api: RunsApi;
let browser: Browser;
let memory: OpenMemory;
const userId = 'inspector-approver';

before(async () => {
  const config = testConfig();
  // The page loads the user's threads with the runs: the API needs the memory store.
  memory = await openMemory(config);
  api = await startRunsApi(stub, { config, app: { memory: memory.memory } });
  browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
  await api?.stop();
  await memory?.close();
});

async function startHeld(goal: string, expression: string): Promise<string> {
  stub.script(goal, { execution_plan: [{ steps: [toolStep('calculator', { expression }), respondStep] }], replan_decision: [cont], final_answer: [answer(`done: ${goal}`)] });
  const res = await requestJson<{ runId: string }>(api.url, 'POST', '/v1/runs', { userId, goal, approval: ['calculator'] });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body.runId;
}

/** Opens the run in the inspector and waits for its held call to show. */
async function openHeld(page: Page, goal: string): Promise<void> {
  await page.goto(`${api.url}/inspector`);
  await page.fill('input[name="userId"]', userId);
  await page.click('button:has-text("Load")');
  await page.click(`[data-testid="runs"] button:has-text("${goal}")`);
  await page.locator('[data-testid="run-status"]', { hasText: 'waiting_approval' }).waitFor();
  await page.locator('[data-testid="pending-approval"]').waitFor();
}

test('the run view shows the held call and approves it, or runs it with edited args', async () => {
  const approveGoal = 'inspector: add two and three';
  const editGoal = 'inspector: add four and four';
  const approved = await startHeld(approveGoal, '2+3');
  const edited = await startHeld(editGoal, '4+4');
  await withPage(browser, 'inspector-approval', async (page) => {
    await openHeld(page, approveGoal);
    assert.equal(await page.locator('[data-testid="approval-tool"]').textContent(), 'calculator');
    assert.deepEqual(JSON.parse((await page.locator('[data-testid="approval-args"]').textContent()) ?? ''), { expression: '2+3' });
    assert.match((await page.locator('[data-testid="pending-approval"]').textContent()) ?? '', /TOOL_APPROVAL calculator/);
    await page.click('[data-testid="pending-approval"] button:has-text("Approve")');
    await page.locator('[data-testid="run-status"]', { hasText: 'completed' }).waitFor();
    assert.equal(await page.locator('[data-testid="pending-approval"]').count(), 0, 'nothing waits any more');

    await openHeld(page, editGoal);
    await page.click('[data-testid="pending-approval"] summary');
    await page.fill('[data-testid="pending-approval"] textarea[name="args"]', '{"expression": "40+2"}');
    await page.fill('[data-testid="pending-approval"] input[name="feedback"]', 'the answer, please');
    await page.click('[data-testid="pending-approval"] button:has-text("Run with these args")');
    await page.locator('[data-testid="run-status"]', { hasText: 'completed' }).waitFor();
  });
  const first = (await api.env.client.workflow.getHandle(approved).result()) as ExecutionState;
  assert.ok(first.observations.some((o) => o.kind === 'tool' && o.content.includes('5')));
  const second = (await api.env.client.workflow.getHandle(edited).result()) as ExecutionState;
  assert.deepEqual(second.steps[0]?.args, { expression: '40+2' });
  assert.ok(second.observations.some((o) => o.kind === 'user_reply' && o.content.includes('the answer, please')));
});
