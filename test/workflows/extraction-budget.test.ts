/**
 * The background extraction after an import is held to the user's token budget: its passes are
 * the user's model calls, each checked before it is sent. Real Temporal server, worker and API
 * (`startApi`, with a model server configured, as `npm start` runs it).
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import pino from 'pino';
import { startApi, type ApiServer } from '../../src/api/server';
import { loadConfig } from '../../src/config';
import { createUsageStore, summarize } from '../../src/store/usage/usage-store';
import { memoryProgressQuery, userMemoryWorkflowId } from '../../src/workflows/memory-definitions';
import { requestJson } from '../helpers/http';
import { STUB_USAGE, StubModelServer } from '../helpers/stub-model-server';
import { startTestEnv, stubProvider, testConfig, waitFor, type TestEnv } from '../helpers/temporal-env';

const stub = new StubModelServer();
let env: TestEnv;
let api: ApiServer;

before(async () => {
  await stub.start();
  // One model call's tokens.
  const config = testConfig({
    MEMORY_EXTRACTION: 'on',
    MEMORY_EXTRACTION_DEBOUNCE_MS: '200',
    MEMORY_EXTRACTION_MAX_DELAY_MS: '1000',
    USER_TOKEN_BUDGET: String(STUB_USAGE.prompt + STUB_USAGE.completion),
  });
  env = await startTestEnv({ provider: stubProvider(stub.url), config });
  const strings = Object.fromEntries(Object.entries(env.config).filter(([, v]) => typeof v === 'string'));
  api = await startApi(loadConfig({ ...process.env, ...strings, PORT: '0', OPENAI_BASE_URL: stub.url }), { logger: pino({ level: 'silent' }) });
});
after(async () => {
  await api?.close();
  await env?.stop();
  await stub.stop();
});

test("an import's background extraction stops at the user's budget: the pass past it is refused before it is sent, and says why", async () => {
  const userId = 'budget-importer';
  const extraction = (summary: string) => ({ memory_extraction: [{ summary, facts: [], episode: null }] });
  stub.script('imported conversation imp-first', extraction('The first conversation.'));
  stub.script('imported conversation imp-second', extraction('The second conversation.'));
  const res = await requestJson(api.url, 'POST', `/v1/users/${userId}/memory/import`, {
    conversations: [
      { sessionId: 'imp-first', messages: [{ role: 'user', text: 'I grow tomatoes.' }] },
      { sessionId: 'imp-second', messages: [{ role: 'user', text: 'My cat is Miso.' }] },
    ],
  });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  const progress = await waitFor('both conversations to be taken up', async () => {
    const p = await env.client.workflow
      .getHandle(userMemoryWorkflowId(userId))
      .query(memoryProgressQuery)
      .catch(() => null);
    return p && p.imports.done === 2 ? p : null;
  });
  assert.equal(progress.failed, 1, 'the second pass is refused');
  assert.match(progress.lastError ?? '', /used 120 of a 120-token monthly budget \(USER_TOKEN_BUDGET\)/);
  assert.equal(stub.requestsFor('imported conversation imp-first', 'memory_extraction').length, 1);
  assert.equal(stub.requestsFor('imported conversation imp-second', 'memory_extraction').length, 0, 'nothing sent past the budget');
  const usage = createUsageStore(env.config);
  assert.equal(summarize(userId, await usage.records(userId)).total.calls, 1, 'the extraction is counted against the user');
  await usage.end();
});
