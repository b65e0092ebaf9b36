/**
 * REST API v1 end to end: real HTTP to the express app, a real Temporal server,
 * a real worker, and the real `openai` client talking to a scripted stub model.
 */
import { randomUUID } from 'node:crypto';
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import pino from 'pino';
import { createApp } from '../../src/api/app';
import { startApi } from '../../src/api/server';
import type { ExecutionState } from '../../src/planning/execution-state';
import { Runs, type RunSummary } from '../../src/temporal/runs';
import { listen, requestJson } from '../helpers/http';
import { startRunsApi, type RunsApi } from '../helpers/runs-api';
import { readEvents as readSse, type ReadEventsOptions } from '../helpers/sse-client';
import { StubModelServer } from '../helpers/stub-model-server';
import { testConfig, waitFor, type TestEnv } from '../helpers/temporal-env';

const stub = new StubModelServer();
let env: TestEnv;
let runs: Runs;
let base: string;
let api: RunsApi | undefined;
const silent = pino({ level: 'silent' });
/** Unique per file run, so listings see only this file's runs. */
const USER = `api-e2e-${randomUUID().slice(0, 8)}@example.com`;

/** A JSON call to this file's API (or to the one at `url`). */
const call = <T = Record<string, unknown>>(method: string, path: string, body?: unknown, url = base) => requestJson<T>(url, method, path, body);

const getState = async (runId: string) => (await call<ExecutionState>('GET', `/v1/runs/${runId}`)).body;

async function waitForStatus(runId: string, status: ExecutionState['status']): Promise<ExecutionState> {
  return waitFor(`run ${runId} to be ${status}`, async () => {
    const res = await call<ExecutionState>('GET', `/v1/runs/${runId}`);
    assert.equal(res.status, 200);
    return res.body.status === status ? res.body : undefined;
  });
}

async function startRun(goal: string, userId = USER): Promise<string> {
  const res = await call<{ runId: string; status: string; uiUrl: string }>('POST', '/v1/runs', { userId, goal });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body.runId;
}

const noMisses = (goal: string) =>
  assert.deepEqual(
    stub.misses.filter((m) => m.goal === goal).map((m) => m.name),
    [],
    'the model was asked for a reply the test did not script',
  );

/** Scripts a run that asks one question, then answers after the reply. */
function scriptQuestion(goal: string, question: string, answer: string): void {
  stub.script(goal, {
    execution_plan: [
      {
        steps: [
          { type: 'ask_user', description: 'ask for the colour', question },
          { type: 'respond', description: 'answer' },
        ],
      },
    ],
    replan_decision: [{ decision: 'continue' }],
    final_answer: [{ answer }],
  });
}

function scriptAddition(goal: string, expression: string, answer: string): void {
  stub.script(goal, {
    execution_plan: [
      {
        steps: [
          { type: 'tool', description: 'add', tool: 'calculator', args: { expression } },
          { type: 'respond', description: 'answer' },
        ],
      },
    ],
    replan_decision: [{ decision: 'continue' }],
    final_answer: [{ answer }],
  });
}

/** Reads a run's event stream until the server ends it, or `until` says enough (then disconnects). */
const readEvents = (url: string, options: Omit<ReadEventsOptions, 'timeoutMs'> = {}) => readSse(url, { ...options, timeoutMs: 30_000 });

before(async () => {
  api = await startRunsApi(stub);
  ({ env, runs, url: base } = api);
});

after(async () => {
  await api?.stop();
});

test('GET /healthz is 200 {ok:true} while Temporal is reachable', async () => {
  const res = await call('GET', '/healthz');
  assert.equal(res.status, 200);
  assert.deepEqual(res.body, { ok: true });
});

test('a run started with POST /v1/runs completes, and GET shows the plan, the tool result and the answer', async () => {
  const goal = 'api: what is 2+3?';
  scriptAddition(goal, '2+3', '5');
  const res = await call<{ runId: string; status: string; uiUrl: string }>('POST', '/v1/runs', { userId: USER, goal });
  assert.equal(res.status, 201);
  const { runId } = res.body;
  assert.match(runId, /^run-/);
  assert.equal(res.body.status, 'planning');
  assert.equal(res.body.uiUrl, `${env.config.uiUrl}/namespaces/${env.config.TEMPORAL_NAMESPACE}/workflows/${runId}`);
  assert.equal(res.headers.get('location'), `/v1/runs/${runId}`);

  const first = await call<ExecutionState>('GET', `/v1/runs/${runId}`);
  assert.equal(first.status, 200, 'the run is readable right after it was started');
  assert.equal(first.body.runId, runId);

  const done = await waitForStatus(runId, 'completed');
  assert.equal(done.runId, runId);
  assert.equal(done.userId, USER);
  assert.equal(done.goal, goal);
  assert.equal(done.finalAnswer, '5');
  assert.deepEqual(
    done.steps.map((s) => [s.type, s.tool ?? null, s.status]),
    [
      ['tool', 'calculator', 'completed'],
      ['respond', null, 'completed'],
    ],
  );
  const toolObservation = done.observations.find((o) => o.kind === 'tool');
  assert.ok(toolObservation, 'the calculator result is recorded');
  assert.deepEqual(JSON.parse(toolObservation.content), { value: 5 });
  noMisses(goal);
});

test('ask_user: the run waits with its question, a reply (202) lets it complete, and the reply is observed', async () => {
  const goal = 'api: pick a colour for me';
  scriptQuestion(goal, 'Which colour do you like?', 'Blue it is.');
  const runId = await startRun(goal);

  const waiting = await waitForStatus(runId, 'waiting_user');
  const ask = waiting.steps.find((s) => s.id === waiting.currentStepId);
  assert.ok(ask);
  assert.equal(ask.type, 'ask_user');
  assert.equal(ask.question, 'Which colour do you like?');

  const reply = await call('POST', `/v1/runs/${runId}/reply`, { text: 'blue, please' });
  assert.equal(reply.status, 202);
  assert.deepEqual(reply.body, { runId, status: 'running' });

  const done = await waitForStatus(runId, 'completed');
  assert.equal(done.finalAnswer, 'Blue it is.');
  const replies = done.observations.filter((o) => o.kind === 'user_reply');
  assert.deepEqual(
    replies.map((o) => [o.stepId, o.content]),
    [[ask.id, 'blue, please']],
  );
  noMisses(goal);
});

test('a reply to a run that is not waiting is 409 not_waiting', async () => {
  const goal = 'api: what is 4+4?';
  scriptAddition(goal, '4+4', '8');
  const runId = await startRun(goal);
  await waitForStatus(runId, 'completed');

  const res = await call<{ error: { code: string; message: string } }>('POST', `/v1/runs/${runId}/reply`, { text: 'too late' });
  assert.equal(res.status, 409);
  assert.equal(res.body.error.code, 'not_waiting');
  assert.match(res.body.error.message, /completed/);
  const after = await getState(runId);
  assert.equal(after.observations.filter((o) => o.kind === 'user_reply').length, 0, 'the late reply was not delivered');
});

test('an unknown run is a JSON 404 on GET, reply, cancel and events', async () => {
  const missing = `run-nobody-${randomUUID().slice(0, 10)}`;
  const attempts: [string, string, unknown?][] = [
    ['GET', `/v1/runs/${missing}`],
    ['POST', `/v1/runs/${missing}/reply`, { text: 'hello?' }],
    ['POST', `/v1/runs/${missing}/cancel`],
    ['GET', `/v1/runs/${missing}/events`],
  ];
  for (const [method, path, body] of attempts) {
    const res = await call<{ error: { code: string; message: string } }>(method, path, body);
    assert.equal(res.status, 404, `${method} ${path}`);
    assert.match(res.headers.get('content-type') ?? '', /application\/json/, `${method} ${path} answers JSON, not a stream`);
    assert.equal(res.body.error.code, 'not_found');
    assert.match(res.body.error.message, new RegExp(missing));
  }
});

test('cancelling a waiting run is 202 and the run ends cancelled', async () => {
  const goal = 'api: ask me something, then get cancelled';
  scriptQuestion(goal, 'Are you still there?', 'unused');
  const runId = await startRun(goal);
  await waitForStatus(runId, 'waiting_user');

  const res = await call('POST', `/v1/runs/${runId}/cancel`);
  assert.equal(res.status, 202);
  assert.deepEqual(res.body, { runId });

  const cancelled = await waitForStatus(runId, 'cancelled');
  assert.equal(cancelled.finalAnswer, null);
  assert.ok(
    cancelled.steps.every((s) => s.status === 'skipped'),
    `no step ran or stays pending: ${JSON.stringify(cancelled.steps.map((s) => s.status))}`,
  );
  const late = await call('POST', `/v1/runs/${runId}/reply`, { text: 'yes' });
  assert.equal(late.status, 409, 'a cancelled run takes no reply');
});

/** The runs `GET /v1/runs?<query>` lists, once it lists any (visibility lags a little behind the runs). */
function listed(query: string): Promise<RunSummary[]> {
  return waitFor(`the run to be listed for ${query}`, async () => {
    const res = await call<{ runs: RunSummary[] }>('GET', `/v1/runs?${query}`);
    assert.equal(res.status, 200);
    return res.body.runs.length > 0 ? res.body.runs : undefined;
  });
}

test('GET /v1/runs lists a user’s runs, filtered by status', async () => {
  const user = `lister-${randomUUID().slice(0, 8)}`;
  const goal = 'api: what is 6+1?';
  scriptAddition(goal, '6+1', '7');
  const runId = await startRun(goal, user);
  await waitForStatus(runId, 'completed');

  const byUser = await listed(`userId=${encodeURIComponent(user)}`);
  assert.deepEqual(
    byUser.map((r) => r.runId),
    [runId],
  );
  assert.equal(byUser[0]?.goal, goal);
  assert.equal(byUser[0]?.userId, user);

  // The status attribute reaches visibility a little after the run ends.
  const completed = await listed(`userId=${encodeURIComponent(user)}&status=completed`);
  assert.deepEqual(
    completed.map((r) => [r.runId, r.status]),
    [[runId, 'completed']],
  );

  const waiting = await call<{ runs: RunSummary[] }>('GET', `/v1/runs?userId=${encodeURIComponent(user)}&status=waiting_user`);
  assert.equal(waiting.status, 200);
  assert.deepEqual(waiting.body.runs, []);
});

test('GET /v1/runs shows a long goal cut to its first 400 characters; the run keeps the whole goal', async () => {
  const user = `long-goal-${randomUUID().slice(0, 8)}`;
  const goal = `api: what is 2+3?${' Context pasted by the person.'.repeat(60)}`;
  scriptAddition(goal, '2+3', '5');
  const runId = await startRun(goal, user);
  const done = await waitForStatus(runId, 'completed');
  assert.equal(done.goal, goal, 'the run’s state has the whole goal');
  const [run] = await listed(`userId=${encodeURIComponent(user)}`);
  assert.equal(run?.runId, runId);
  assert.equal(run?.goal, `${goal.slice(0, 399)}…`);
});

test('GET /v1/runs/:runId/events streams states with increasing versions, then done with the final state', async () => {
  const goal = 'api: stream me the sum of 20+22';
  scriptAddition(goal, '20+22', '42');
  stub.delayMs = 300; // several polls per model call, so the stream sees the run move
  try {
    const runId = await startRun(goal);
    const sse = await readEvents(`${base}/v1/runs/${runId}/events`);

    assert.match(sse.contentType ?? '', /^text\/event-stream/);
    assert.ok(sse.ended, 'the server ends the stream after done');
    const states = sse.events.filter((e) => e.event === 'state').map((e) => JSON.parse(e.data) as ExecutionState);
    assert.ok(states.length >= 2, `the stream follows the run (got ${states.length} state events)`);
    const versions = states.map((s) => s.version);
    assert.ok(
      versions.every((v, i) => i === 0 || v > (versions[i - 1] ?? Infinity)),
      `versions strictly increase: ${versions.join(', ')}`,
    );
    assert.ok(states.every((s) => s.runId === runId));

    const last = sse.events.at(-1);
    assert.equal(last?.event, 'done', 'done is the last event');
    const final = JSON.parse(last.data) as ExecutionState;
    assert.equal(final.status, 'completed');
    assert.equal(final.finalAnswer, '42');
    assert.equal(final.version, versions.at(-1), 'done carries the last state sent');
    noMisses(goal);
  } finally {
    stub.delayMs = 0;
  }
});

/** The suite's Runs as the API uses them (without `getIfMoved` unless given), with `overrides` in place: to count what the API asks. */
function runsWith(
  overrides: Partial<Pick<Runs, 'get' | 'getIfMoved'>>,
): Pick<Runs, 'start' | 'get' | 'reply' | 'review' | 'approve' | 'skip' | 'redo' | 'cancel' | 'list'> & Partial<Pick<Runs, 'getIfMoved'>> {
  return {
    start: (r) => runs.start(r),
    get: (id) => runs.get(id),
    reply: (id, text) => runs.reply(id, text),
    review: (id, decision) => runs.review(id, decision),
    approve: (id, decision) => runs.approve(id, decision),
    skip: (id, index, reason) => runs.skip(id, index, reason),
    redo: (id, index, reason) => runs.redo(id, index, reason),
    cancel: (id) => runs.cancel(id),
    list: (f) => runs.list(f),
    ...overrides,
  };
}

test('an event stream of a waiting run sends heartbeats, and polling stops when the client disconnects', async () => {
  const goal = 'api: wait for me while I watch';
  scriptQuestion(goal, 'Ready?', 'unused');
  const runId = await startRun(goal);
  await waitForStatus(runId, 'waiting_user');

  let reads = 0;
  let reading = 0; // reads still in flight: a query may take long on a loaded machine
  const counting = runsWith({
    get: async (id) => {
      reads += 1;
      reading += 1;
      try {
        return await runs.get(id);
      } finally {
        reading -= 1;
      }
    },
  });
  const watcher = await listen(createApp({ runs: counting, config: env.config, isHealthy: async () => true, logger: silent, events: { pollMs: 50, heartbeatMs: 100 } }));
  try {
    const sse = await readEvents(`${watcher.url}/v1/runs/${runId}/events`, { until: (r) => r.comments.length >= 2 });
    assert.equal(sse.events.length, 1, 'a waiting run that does not change is sent once');
    assert.equal(sse.events[0]?.event, 'state');
    assert.equal((JSON.parse(sse.events[0]?.data ?? '{}') as ExecutionState).status, 'waiting_user');

    // Let the server notice the disconnect, however slowly: no read in flight and none started for five poll intervals.
    await waitFor('the server to stop reading the run', async () => {
      const before = reads;
      const idle = reading === 0;
      await new Promise((r) => setTimeout(r, 250));
      return idle && reading === 0 && reads === before;
    });
    const readsAfterDisconnect = reads;
    await new Promise((r) => setTimeout(r, 500)); // ten poll intervals
    assert.equal(reads, readsAfterDisconnect, 'the server stopped reading the run once the client left');
  } finally {
    await watcher.close();
    await runs.cancel(runId);
  }
});

test('an event stream queries a run only when its history grew: a waiting run is read once, its reply and end are seen', async () => {
  const goal = 'api: watch me wait, then finish';
  scriptQuestion(goal, 'Go on?', 'finished after the reply');
  const runId = await startRun(goal);
  await waitForStatus(runId, 'waiting_user');

  let polls = 0;
  let queried = 0;
  const counting = runsWith({
    getIfMoved: async (id, seen) => {
      polls += 1;
      const moved = await runs.getIfMoved(id, seen);
      if (moved.state !== null) queried += 1;
      return moved;
    },
  });
  const watcher = await listen(createApp({ runs: counting, config: env.config, isHealthy: async () => true, logger: silent, events: { pollMs: 50, heartbeatMs: 100 } }));
  try {
    const statuses: string[] = [];
    let streamDone = false;
    const stream = readSse(`${watcher.url}/v1/runs/${runId}/events`, {
      timeoutMs: 90_000,
      onEvent: (e) => statuses.push(`${e.event}:${(JSON.parse(e.data) as ExecutionState).status}`),
    }).finally(() => (streamDone = true));
    stream.catch(() => undefined); // awaited below; if an assertion fails first, the watcher's close cuts it
    // Watched a while first (however long eight polls take): polls of a run that does not move query nothing.
    await waitFor('eight polls of the waiting run', async () => {
      if (streamDone) await stream; // failed: its own error says why
      assert.ok(!streamDone, 'the stream ended before the reply');
      return statuses.length > 0 && polls >= 8;
    });
    assert.equal(queried, 1, `a waiting run is queried once, however often it is polled (${polls} polls)`);
    await runs.reply(runId, 'yes');
    await stream;
    assert.deepEqual(statuses.slice(0, 1), ['state:waiting_user']);
    assert.equal(statuses.at(-1), 'done:completed');
    assert.ok(queried >= 2 && queried < polls, `${queried} queries in ${polls} polls`);
  } finally {
    await watcher.close();
  }
});

test('startApi serves the API on its own listener and close() ends open event streams', async () => {
  const config = testConfig({ PORT: '0', TASK_QUEUE: env.config.TASK_QUEUE });
  const api = await startApi(config, { logger: silent });
  const goal = 'api: keep a stream open until shutdown';
  scriptQuestion(goal, 'Still there?', 'unused');
  try {
    assert.match(api.url, /^http:\/\/127\.0\.0\.1:\d+$/);
    const health = await call('GET', '/healthz', undefined, api.url);
    assert.deepEqual([health.status, health.body], [200, { ok: true }]);

    const created = await call<{ runId: string }>('POST', '/v1/runs', { userId: USER, goal }, api.url);
    assert.equal(created.status, 201);
    const runId = created.body.runId;
    await waitForStatus(runId, 'waiting_user'); // the worker of this file runs it: same task queue

    let opened!: () => void;
    const firstEvent = new Promise<void>((resolve) => (opened = resolve));
    const stream = readEvents(`${api.url}/v1/runs/${runId}/events`, { onEvent: () => opened() });
    await firstEvent;
    const started = Date.now();
    await api.close();
    assert.ok(Date.now() - started < 4_000, 'close() does not wait for the stream to end by itself');
    const sse = await stream;
    assert.ok(sse.ended, 'the stream was ended by the server');
    assert.equal(sse.events[0]?.event, 'state');
    await runs.cancel(runId);
  } finally {
    await api.close();
  }
});

test('POST /v1/runs `allow`: a run started with ask_user off finishes without waiting, its state says so; unknown switches are 400', async () => {
  const bad = await call<{ error: { code: string; message: string } }>('POST', '/v1/runs', { userId: USER, goal: 'x', allow: { teleport: false } });
  assert.equal(bad.status, 400);
  assert.equal(bad.body.error.code, 'invalid_request');
  const goal = 'check the overnight backups, nobody is around';
  scriptQuestion(goal, 'Which server?', 'All backups are fine.');
  const res = await call<{ runId: string }>('POST', '/v1/runs', { userId: USER, goal, allow: { askUser: false } });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  const done = await waitForStatus(res.body.runId, 'completed');
  assert.deepEqual(done.allow, { askUser: false });
  assert.equal(done.steps[0]?.status, 'failed');
  assert.match(done.observations[0]?.content ?? '', /refused: asking the person/);
  assert.equal(done.finalAnswer, 'All backups are fine.');
  noMisses(goal);
});
