/**
 * Live tokens over PostgreSQL's LISTEN/NOTIFY (MEMORY_STORE=postgres): the channel alone (batches
 * within NOTIFY's 8000 bytes, nothing lost or reordered; an API's watches heard by the workers),
 * a run streaming end to end, and a run nobody watches sending nothing.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import type { EventSourceMessage } from 'eventsource-parser';
import { listenPg, PgPublisher } from '../../src/live/pg-channel';
import type { LiveMessage } from '../../src/live/messages';
import { watchKey } from '../../src/live/watch';
import { requestJson } from '../helpers/http';
import { gate } from '../helpers/gate';
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

/** Publishes a probe until the listener hears one: its LISTEN is in place before the messages that count go out. */
async function probeUntilHeard(publisher: PgPublisher, heard: LiveMessage[], what: string): Promise<void> {
  await waitFor(
    what,
    async () => {
      publisher.publish({ t: 'end', runId: 'probe', callId: 'probe' });
      await new Promise((r) => setTimeout(r, 50));
      return heard.length > 0;
    },
    10_000,
  );
}

test('NOTIFY carries every message in order, big deltas in several payloads', async () => {
  const heard: LiveMessage[] = [];
  const subscriber = listenPg(databaseUrl);
  subscriber.onMessages((messages) => heard.push(...messages));
  const publisher = new PgPublisher(databaseUrl);
  // What the channel carried of run 'r' (the probes below are run 'probe').
  const heardOfR = () => heard.filter((m) => m.runId === 'r');
  try {
    await waitFor('the publisher connected', async () => publisher.wanted(), 10_000);
    // The subscriber hears the channel (its LISTEN is in place) before the messages go out.
    await probeUntilHeard(publisher, heard, 'the subscriber');
    const sent: LiveMessage[] = [{ t: 'start', runId: 'r', callId: 'c', attempt: 1 }];
    for (let seq = 1; seq <= 40; seq++) sent.push({ t: 'token', runId: 'r', callId: 'c', field: 'answer', delta: `${seq}:${'ü'.repeat(900)}`, seq });
    for (const m of sent) publisher.publish(m);
    await waitFor('every message', async () => heardOfR().length >= sent.length, 10_000);
    assert.deepEqual(heardOfR(), sent);
    assert.equal(publisher.dropped, 0);
  } finally {
    await publisher.close();
    await subscriber.close();
  }
});

test('a run streams its answer to the SSE client through PostgreSQL', async () => {
  const goal = `pg stream ${randomUUID()}`;
  const text = 'Streamed through LISTEN/NOTIFY, piece by piece, to the end.';
  // The run's first model call waits until the workers know the reader watches (a call that ends before
  // anyone watches sends nothing): a second worker's ear hears the API's watches as the run's worker does.
  const held = gate();
  stub.script(goal, { execution_plan: [held.hold({ steps: [respondStep] })], final_answer: [answer(text)] });
  const ear = new PgPublisher(databaseUrl);
  try {
    await waitFor('the ear connected', async () => ear.wanted(), 10_000);
    const res = await requestJson<{ runId: string }>(api.url, 'POST', '/v1/runs', { userId: 'pg-live@example.com', goal });
    assert.equal(res.status, 201);
    const { runId } = res.body;
    const reading = readEvents(`${api.url}/v1/runs/${runId}/events`, { timeoutMs: 30_000 });
    try {
      await waitFor("the reader's watch heard", async () => ear.watched(runId, undefined), 20_000);
    } catch (err) {
      reading.catch(() => undefined);
      throw err;
    } finally {
      held.open();
    }
    const sse = await reading;
    const tokens = sse.events.filter((e: EventSourceMessage) => e.event === 'token').map((e) => JSON.parse(e.data) as { field: string; delta: string; runId: string });
    assert.equal(
      tokens
        .filter((t) => t.field === 'answer')
        .map((t) => t.delta)
        .join(''),
      text,
    );
    assert.ok(tokens.every((t) => t.runId === runId));
  } finally {
    held.open();
    await ear.close();
  }
});

test("an API's watch reaches the workers over NOTIFY, and lapses when no longer announced", async () => {
  const subscriber = listenPg(databaseUrl);
  const publisher = new PgPublisher(databaseUrl);
  try {
    await waitFor('both connections', async () => publisher.wanted(), 10_000);
    assert.equal(publisher.watched('r-pg', 's-pg'), false);
    await waitFor(
      'the watch heard',
      async () => {
        subscriber.announce([watchKey.session('s-pg')]);
        return publisher.watched('r-pg', 's-pg');
      },
      10_000,
    );
    assert.equal(publisher.watched('r-pg', undefined), false, 'only what was announced');
    await waitFor('the watch forgotten', async () => !publisher.watched('r-pg', 's-pg'), 10_000);
  } finally {
    await publisher.close();
    await subscriber.close();
  }
});

test('a run nobody watches sends no NOTIFY at all', async () => {
  const heard: LiveMessage[] = [];
  const subscriber = listenPg(databaseUrl);
  subscriber.onMessages((messages) => heard.push(...messages));
  const probe = new PgPublisher(databaseUrl);
  try {
    // The listener hears the channel before the run starts.
    await probeUntilHeard(probe, heard, 'the listener');
    const goal = `pg unwatched ${randomUUID()}`;
    stub.script(goal, { execution_plan: [{ steps: [respondStep] }], final_answer: [answer('Nobody reads this one as it streams.')] });
    const res = await requestJson<{ runId: string }>(api.url, 'POST', '/v1/runs', { userId: 'pg-live@example.com', goal });
    assert.equal(res.status, 201);
    const runId = res.body.runId;
    await waitFor('the run completed', async () => (await requestJson<{ status?: string }>(api.url, 'GET', `/v1/runs/${runId}`)).body.status === 'completed', 30_000);
    assert.ok(
      stub.streams.some((s) => s.goal === goal && s.name === 'final_answer' && s.pieceAt.length > 3),
      'the model did stream',
    );
    // The test before shows the same run streams through the channel when someone watches.
    await new Promise((r) => setTimeout(r, 200));
    assert.deepEqual(
      heard.filter((m) => m.runId === runId),
      [],
    );
  } finally {
    await probe.close();
    await subscriber.close();
  }
});
