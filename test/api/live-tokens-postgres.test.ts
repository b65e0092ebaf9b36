/**
 * Live tokens over PostgreSQL's LISTEN/NOTIFY (MEMORY_STORE=postgres): the channel alone (batches
 * within NOTIFY's 8000 bytes, nothing lost or reordered), and a run streaming end to end.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import type { EventSourceMessage } from 'eventsource-parser';
import { listenPg, PgPublisher } from '../../src/live/pg-channel';
import type { LiveMessage } from '../../src/live/messages';
import { requestJson } from '../helpers/http';
import { startRunsApi, type RunsApi } from '../helpers/runs-api';
import { answer, respondStep } from '../helpers/scenarios';
import { createDatabase, dropDatabases } from '../helpers/scratch-postgres';
import { readEvents } from '../helpers/sse-client';
import { StubModelServer } from '../helpers/stub-model-server';
import { testConfig, waitFor } from '../helpers/temporal-env';

const stub = new StubModelServer();
let api: RunsApi;
let databaseUrl: string;

before(async () => {
  databaseUrl = await createDatabase();
  stub.streaming = true;
  stub.chunkChars = 5;
  stub.chunkDelayMs = 10;
  api = await startRunsApi(stub, { config: testConfig({ MEMORY_STORE: 'postgres', DATABASE_URL: databaseUrl }) });
});
after(async () => {
  await api?.stop();
  await dropDatabases();
});

test('NOTIFY carries every message in order, big deltas in several payloads', async () => {
  const heard: LiveMessage[] = [];
  const subscriber = listenPg(databaseUrl);
  subscriber.onMessages((messages) => heard.push(...messages));
  const publisher = new PgPublisher(databaseUrl);
  try {
    await waitFor('both connections', async () => publisher.wanted(), 10_000);
    await new Promise((r) => setTimeout(r, 200)); // LISTEN is issued right after connecting
    const sent: LiveMessage[] = [{ t: 'start', runId: 'r', callId: 'c', attempt: 1 }];
    for (let seq = 1; seq <= 40; seq++) sent.push({ t: 'token', runId: 'r', callId: 'c', field: 'answer', delta: `${seq}:${'ü'.repeat(900)}`, seq });
    for (const m of sent) publisher.publish(m);
    await waitFor('every message', async () => heard.length >= sent.length, 10_000);
    assert.deepEqual(heard, sent);
    assert.equal(publisher.dropped, 0);
  } finally {
    await publisher.close();
    await subscriber.close();
  }
});

test('a run streams its answer to the SSE client through PostgreSQL', async () => {
  const goal = `pg stream ${randomUUID()}`;
  const text = 'Streamed through LISTEN/NOTIFY, piece by piece, to the end.';
  stub.script(goal, { execution_plan: [{ steps: [respondStep] }], final_answer: [answer(text)] });
  const res = await requestJson<{ runId: string }>(api.url, 'POST', '/v1/runs', { userId: 'pg-live@example.com', goal });
  assert.equal(res.status, 201);
  const sse = await readEvents(`${api.url}/v1/runs/${res.body.runId}/events`, { timeoutMs: 30_000 });
  const tokens = sse.events.filter((e: EventSourceMessage) => e.event === 'token').map((e) => JSON.parse(e.data) as { field: string; delta: string; runId: string });
  assert.equal(
    tokens
      .filter((t) => t.field === 'answer')
      .map((t) => t.delta)
      .join(''),
    text,
  );
  assert.ok(tokens.every((t) => t.runId === res.body.runId));
});
