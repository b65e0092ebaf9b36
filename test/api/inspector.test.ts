/**
 * The memory inspector (`GET /inspector`) in a real headless browser: the page over the real REST
 * API, a real Temporal server and worker, the file memory store, the stub model server behind the
 * real `openai` client. A person opens a thread, sees its chunks, adds one, rolls back; the API
 * agrees with what the page shows. With THREADLINE_AUTH=apikey the page's calls carry the key.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { registryDir, UdpPublisher } from '../../src/live/udp-channel';
import { openLongTerm, type OpenLongTerm } from '../../src/store/longterm/open-longterm';
import { openMemory, type OpenMemory } from '../../src/store/open-memory';
import { launchBrowser, withPage } from '../helpers/browser';
import { requestJson } from '../helpers/http';
import { gate } from '../helpers/gate';
import { startKeyedApi, type KeyedApi } from '../helpers/keyed-api';
import { startRunsApi, type RunsApi } from '../helpers/runs-api';
import { answer, cont, respondStep } from '../helpers/scenarios';
import { StubModelServer } from '../helpers/stub-model-server';
import { testConfig, waitFor } from '../helpers/temporal-env';

const stub = new StubModelServer();
const keyedStub = new StubModelServer();
let api: RunsApi;
let memory: OpenMemory;
let longterm: OpenLongTerm;
let keyed: KeyedApi;
let browser: Browser;

before(async () => {
  const config = testConfig();
  memory = await openMemory(config);
  longterm = await openLongTerm(config);
  api = await startRunsApi(stub, { config, app: { memory: memory.memory, longterm: { longterm: longterm.longterm }, events: { pollMs: 50, heartbeatMs: 1000 } } });
  keyed = await startKeyedApi(keyedStub);
  browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
  await api?.stop();
  await keyed?.stop();
  await memory?.close();
  await longterm?.close();
});

interface ThreadJson {
  headStateId: string;
  state: { stateId: string; chunkIds: string[] };
  chunks: { id: string; content: { kind: string; text?: string } }[];
}
interface StateJson {
  state: { stateId: string; chunkIds: string[] };
}
interface AuditJson {
  operations: { kind: string; origin: string; operation: { op: string; toStateId?: string } | null }[];
}

/** A call that must answer `status`; returns the body. */
async function call<T = Record<string, unknown>>(base: string, status: number, method: string, route: string, body?: unknown, headers: Record<string, string> = {}): Promise<T> {
  const res = await requestJson<T>(base, method, route, body, headers);
  assert.equal(res.status, status, `${method} ${route}: ${JSON.stringify(res.body)}`);
  return res.body;
}

const addText = (text: string) => ({ operation: { op: 'add', chunks: [{ type: 'user', content: { kind: 'text', text } }] }, reason: 'test setup' });

/** Enters the user id, loads the lists and opens `threadId`; waits for its chunks. */
async function openThread(page: Page, base: string, userId: string, threadId: string): Promise<void> {
  await page.goto(`${base}/inspector`);
  await page.fill('input[name="userId"]', userId);
  await page.click('button:has-text("Load")');
  await page.click(`[data-testid="threads"] button:has-text("${threadId}")`);
  await page.waitForSelector('[data-testid="chunks"]');
}

test('the inspector shows a thread and its chunks, adds a chunk, rolls back to an earlier state, and shows a run', async () => {
  const userId = 'inspector-alice';
  const t = `/v1/threads`;
  const { threadId } = await call<{ threadId: string }>(api.url, 201, 'POST', t, { userId, limits: { soft: 3000, hard: 4000 } });
  const first = await call<{ stateId: string }>(api.url, 201, 'POST', `${t}/${threadId}/operations`, addText('first note: metric units'));
  await call(api.url, 201, 'POST', `${t}/${threadId}/operations`, addText('second note: prefers tea'));
  const third = await call<{ stateId: string }>(api.url, 201, 'POST', `${t}/${threadId}/operations`, addText('third note: lives in Porto'));
  const firstState = await call<StateJson>(api.url, 200, 'GET', `${t}/${threadId}/states/${first.stateId}`);

  const goal = 'inspector: say hello';
  stub.script(goal, { execution_plan: [{ steps: [respondStep] }], replan_decision: [cont], final_answer: [answer('hello from the run')] });
  const { runId } = await call<{ runId: string }>(api.url, 201, 'POST', '/v1/runs', { userId, goal });
  await waitFor('the run to complete', async () => (await call<{ status: string }>(api.url, 200, 'GET', `/v1/runs/${runId}`)).status === 'completed');

  await withPage(browser, 'inspector-rollback', async (page) => {
    await openThread(page, api.url, userId, threadId);
    const head = page.locator('[data-testid="head"]');
    assert.equal(await head.textContent(), third.stateId);
    const chunks = page.locator('[data-testid="chunks"]');
    for (const text of ['first note', 'second note', 'third note']) assert.ok((await chunks.textContent())?.includes(text), `chunk "${text}" shown`);
    assert.match((await page.locator('[data-testid="tokens"]').textContent()) ?? '', /\d+ tokens · soft 3000 · hard 4000/);

    // A person adds a chunk through the page: the API has it at the head, of origin user.
    await page.fill('[data-testid="add-chunk"] textarea[name="text"]', 'added in the browser');
    await page.click('[data-testid="add-chunk"] button:has-text("Add")');
    await chunks.locator('text=added in the browser').waitFor();
    const afterAdd = await call<ThreadJson>(api.url, 200, 'GET', `${t}/${threadId}`);
    assert.equal(afterAdd.chunks.at(-1)?.content.text, 'added in the browser');
    await waitFor('the new head on the page', async () => (await head.textContent()) === afterAdd.headStateId);

    // Roll back to the state after the first note.
    await page.locator(`tr[data-state="${first.stateId}"] button:has-text("Rollback")`).click();
    const shownHead = await waitFor('the rolled-back head on the page', async () => {
      const text = await head.textContent();
      return text && text !== afterAdd.headStateId && !((await chunks.textContent()) ?? '').includes('third note') ? text : undefined;
    });

    const thread = await call<ThreadJson>(api.url, 200, 'GET', `${t}/${threadId}`);
    assert.equal(shownHead, thread.headStateId, 'the page shows the API head');
    assert.deepEqual(thread.state.chunkIds, firstState.state.chunkIds, 'the new head holds the rolled-back state');
    const shownChunks = (await chunks.textContent()) ?? '';
    assert.ok(shownChunks.includes('first note') && !shownChunks.includes('second note') && !shownChunks.includes('added in the browser'));
    const audit = await call<AuditJson>(api.url, 200, 'GET', `${t}/${threadId}/audit?kind=rollback`);
    assert.equal(audit.operations.length, 1);
    assert.equal(audit.operations[0]?.origin, 'user');
    assert.equal(audit.operations[0]?.operation?.toStateId, first.stateId);
    // The live stream told the page of it too.
    await page.locator('[data-testid="live"] li', { hasText: 'rollback by user' }).waitFor();

    // A person edits a chunk of the head: a new chunk replaces it, and the API has it.
    await chunks.locator('button:has-text("Edit")').first().click();
    await page.fill('[data-testid="chunk-editor"] textarea[name="content"]', 'first note: metric units, always');
    await page.click('[data-testid="chunk-editor"] button:has-text("Save")');
    await chunks.locator('text=metric units, always').waitFor();
    const edited = await call<ThreadJson>(api.url, 200, 'GET', `${t}/${threadId}`);
    assert.equal(edited.chunks[0]?.content.text, 'first note: metric units, always');

    // The run: its steps, answer and its link to the Temporal Web UI.
    await page.click(`[data-testid="runs"] button:has-text("${goal}")`);
    await page.locator('[data-testid="run-status"]', { hasText: 'completed' }).waitFor();
    assert.ok(((await page.locator('[data-testid="steps"]').textContent()) ?? '').includes('Answer the user'));
    const link = await page.locator('[data-testid="web-ui"]').getAttribute('href');
    assert.ok(link?.endsWith(`/workflows/${encodeURIComponent(runId)}`), `Web UI link: ${link}`);
  });
});

test('with THREADLINE_AUTH=apikey the page loads without a key and its API calls send the key entered', async () => {
  const userId = 'inspector-bob';
  const key = await keyed.keyFor(userId);
  const auth = { authorization: `Bearer ${key}` };
  const { threadId } = await call<{ threadId: string }>(keyed.url, 201, 'POST', '/v1/threads', {}, auth);
  await call(keyed.url, 201, 'POST', `/v1/threads/${threadId}/operations`, addText('a keyed note'), auth);
  const page = await fetch(`${keyed.url}/inspector`);
  assert.equal(page.status, 200);
  assert.match(await page.text(), /importmap/);
  // Its modules load without a key too; nothing else beside them does (not the route's own source).
  assert.equal((await fetch(`${keyed.url}/inspector/vendor/preact/preact.mjs`)).status, 200);
  assert.equal((await fetch(`${keyed.url}/inspector/app.js`)).status, 200);
  assert.equal((await fetch(`${keyed.url}/inspector/inspector-routes.ts`)).status, 401);
  assert.equal((await fetch(`${api.url}/inspector/inspector-routes.ts`)).status, 404);

  await withPage(browser, 'inspector-apikey', async (page) => {
    await page.goto(`${keyed.url}/inspector`);
    await page.fill('input[name="userId"]', userId);
    await page.click('button:has-text("Load")');
    await page.locator('[role="alert"]', { hasText: '401' }).waitFor();

    await page.fill('input[name="apiKey"]', key);
    await page.click('button:has-text("Load")');
    await page.click(`[data-testid="threads"] button:has-text("${threadId}")`);
    await page.locator('[data-testid="chunks"]', { hasText: 'a keyed note' }).waitFor();
    // The live stream is read with the key too (EventSource could not send it).
    await page.locator('[data-testid="live"] li', { hasText: 'add by user' }).waitFor();
    assert.equal(await page.evaluate("sessionStorage.getItem('threadline.inspector.apiKey')"), key, 'the key is kept for the tab');
    assert.equal(await page.evaluate("localStorage.getItem('threadline.inspector.apiKey')"), null, 'the key is never written to the profile on disk');
  });
});

test('the inspector is never framed, runs only its own scripts, and works under its content security policy', async () => {
  for (const route of ['/inspector', '/inspector/app.js', '/inspector/vendor/preact/preact.mjs']) {
    const res = await fetch(`${api.url}${route}`);
    assert.equal(res.status, 200, route);
    assert.equal(res.headers.get('x-frame-options'), 'DENY', route);
    assert.equal(res.headers.get('x-content-type-options'), 'nosniff', route);
    const csp = res.headers.get('content-security-policy') ?? '';
    for (const directive of ["default-src 'none'", "frame-ancestors 'none'", "connect-src 'self'", "base-uri 'none'"]) assert.ok(csp.includes(directive), `${route}: ${csp}`);
    assert.ok(!/unsafe-inline|unsafe-eval/.test(csp), csp);
  }
  const userId = 'inspector-csp';
  const { threadId } = await call<{ threadId: string }>(api.url, 201, 'POST', '/v1/threads', { userId, limits: { soft: 3000, hard: 4000 } });
  await call(api.url, 201, 'POST', `/v1/threads/${threadId}/operations`, addText('<img src=x onerror="window.pwned=1">'));
  await withPage(browser, 'inspector-csp', async (page) => {
    const violations: string[] = [];
    page.on('console', (msg) => {
      if (/Content Security Policy/i.test(msg.text())) violations.push(msg.text());
    });
    await openThread(page, api.url, userId, threadId);
    await page.locator('[data-testid="chunks"]', { hasText: 'onerror' }).waitFor();
    await page.locator('.bar .fill').first().waitFor(); // styled through the CSSOM, which the policy allows
    assert.deepEqual(violations, [], 'the page itself needs nothing the policy refuses');
    // Markup that reaches the page anyway (a rendering bug, an extension) runs no inline script.
    await page.evaluate(`document.body.insertAdjacentHTML('beforeend', '<img src="/nothing" onerror="window.pwned = 1">')`);
    await waitFor('the policy to refuse the inline handler', async () => violations.length > 0);
    assert.equal(await page.evaluate('window.pwned'), undefined);
  });
});

test("the inspector shows a user's long-term facts with their validity, and searches them", async () => {
  const userId = 'inspector-carol';
  const fact = { subject: 'I', predicate: 'live in', object: 'Lisbon', text: 'Carol lives in Lisbon' };
  await call(api.url, 201, 'POST', `/v1/users/${userId}/facts`, fact);
  await call(api.url, 201, 'POST', `/v1/users/${userId}/facts`, { ...fact, object: 'Porto', text: 'Carol lives in Porto' });
  await withPage(browser, 'inspector-longterm', async (page) => {
    await page.goto(`${api.url}/inspector`);
    await page.fill('input[name="userId"]', userId);
    await page.click('button:has-text("Load")');
    await page.click('button:has-text("Long-term memory")');
    const facts = page.locator('[data-testid="facts"]');
    await facts.locator('text=Carol lives in Porto').waitFor();
    // The superseded fact is listed with the end of its validity; the current one as valid.
    const lisbon = facts.locator('tr', { hasText: 'Carol lives in Lisbon' });
    const porto = facts.locator('tr', { hasText: 'Carol lives in Porto' });
    assert.notEqual(await lisbon.locator('td').nth(2).textContent(), 'valid');
    assert.equal(await lisbon.locator('button:has-text("End")').count(), 0, 'an ended fact cannot be ended again');
    assert.equal(await porto.locator('td').nth(2).textContent(), 'valid');
    await page.fill('input[name="query"]', 'where does Carol live');
    await page.click('button:has-text("Search")');
    await page.locator('[data-testid="search-results"] tr', { hasText: 'Carol lives in Porto' }).waitFor();
    // The audit shows the writes and the inspector's own reads (a person's, through the API).
    const audit = page.locator('[data-testid="longterm-audit"]');
    await audit.locator('tr', { hasText: 'record_fact' }).first().waitFor();
    assert.ok((await audit.locator('tr', { hasText: 'list_facts' }).count()) >= 1, 'the facts listing is a recorded read');
  });
});

test("the inspector shows a user's schedules with their next runs; pause, unpause and cancel from the page", async () => {
  const userId = 'inspector-dora';
  const key = await keyed.keyFor(userId);
  const auth = { authorization: `Bearer ${key}` };
  const made = await call<{ scheduleId: string; nextRuns: string[] }>(keyed.url, 201, 'POST', '/v1/schedules', { goal: 'water the plants', cron: '0 9 * * MON', timeZone: 'Europe/Paris' }, auth);
  const id = made.scheduleId;
  const view = () => call<{ paused: boolean }>(keyed.url, 200, 'GET', `/v1/schedules/${id}`, undefined, auth);
  await waitFor('the schedule listed', async () => (await call<{ schedules: unknown[] }>(keyed.url, 200, 'GET', '/v1/schedules', undefined, auth)).schedules.length === 1);
  await withPage(browser, 'inspector-schedules', async (page) => {
    await page.goto(`${keyed.url}/inspector`);
    await page.fill('input[name="apiKey"]', key);
    await page.fill('input[name="userId"]', userId);
    await page.click('button:has-text("Load")');
    await page.click('button:has-text("Schedules")');
    const row = page.locator(`[data-testid="schedules"] tr[data-schedule="${id}"]`);
    await row.waitFor();
    assert.match((await row.textContent()) ?? '', /water the plants[\s\S]*cron "0 9 \* \* MON" \(Europe\/Paris\)/);
    // Exact names: "Unpause" contains "Pause".
    const button = (name: string) => row.getByRole('button', { name, exact: true });
    await button('Pause').click();
    await button('Unpause').waitFor();
    assert.equal((await view()).paused, true);
    await button('Unpause').click();
    await button('Pause').waitFor();
    assert.equal((await view()).paused, false);
    await row.locator('button:has-text("Cancel")').click();
    await row.waitFor({ state: 'detached' });
  });
  await call(keyed.url, 404, 'GET', `/v1/schedules/${id}`, undefined, auth);
});

test('the run view shows the model call in progress as its answer streams (live tokens)', async () => {
  const userId = 'inspector-live';
  const goal = 'inspector: answer slowly';
  const text = `A slow answer, streamed a few characters at a time. ${'It goes on. '.repeat(12)}The end.`;
  // However slow the machine, the page sees the call in progress: the run's plan waits until the page
  // shows the run and the worker knows it is watched (a second worker's ear hears the API's watches as
  // the run's worker does), and the answer's stream stops after PAUSE_AT pieces until the page shows part of it.
  const PAUSE_AT = 20;
  const watching = gate();
  const resuming = gate();
  stub.script(goal, { execution_plan: [watching.hold({ steps: [respondStep] })], final_answer: [answer(text)] });
  Object.assign(stub, { streaming: true, chunkChars: 3, chunkDelayMs: 50 });
  stub.beforePiece = (s, i) => (s.goal === goal && s.name === 'final_answer' && i === PAUSE_AT ? resuming.opened : undefined);
  const ear = new UdpPublisher(registryDir(api.env.config.dataDir));
  try {
    const { runId } = await call<{ runId: string }>(api.url, 201, 'POST', '/v1/runs', { userId, goal });
    // The page lists the user's runs once, when loaded: the run must be listed by then.
    await waitFor('the run listed', async () => (await call<{ runs: { runId: string }[] }>(api.url, 200, 'GET', `/v1/runs?userId=${userId}`)).runs.some((r) => r.runId === runId));
    await withPage(browser, 'inspector-live', async (page) => {
      await page.goto(`${api.url}/inspector`);
      await page.fill('input[name="userId"]', userId);
      await page.click('button:has-text("Load")');
      await page.click(`[data-testid="runs"] button:has-text("${goal}")`);
      await page.locator('[data-testid="run-status"]').waitFor();
      await waitFor("the page's watch heard", async () => ear.watched(runId, undefined));
      watching.open();
      const partial = await waitFor('part of the answer on the page', async () => {
        const shown = (await page.locator('[data-testid="live-call"] [data-testid="live-text"]').allTextContents()).join('');
        return shown.length > 0 && text.startsWith(shown) && shown.length < text.length ? shown : undefined;
      });
      assert.ok(text.startsWith(partial));
      resuming.open();
      await page.locator('[data-testid="run-status"]', { hasText: 'completed' }).waitFor();
      await page.locator('text=Answer: A slow answer').waitFor();
      assert.equal(await page.locator('[data-testid="live-call"]').count(), 0, 'the live call gives way to the answer');
    });
    assert.equal((await call<{ finalAnswer: string }>(api.url, 200, 'GET', `/v1/runs/${runId}`)).finalAnswer, text);
  } finally {
    watching.open();
    resuming.open();
    stub.beforePiece = undefined;
    await ear.close();
    Object.assign(stub, { streaming: false, chunkDelayMs: 0 });
  }
});
