/**
 * Live tokens end to end (issue 29): a real Temporal server and worker, the real `openai` client
 * streaming from the stub model server over HTTP, the token channel of the embedded default
 * (loopback datagrams to the API registered under DATA_DIR), and SSE clients of the API.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import type { EventSourceMessage } from 'eventsource-parser';
import pino from 'pino';
import { createApp } from '../../src/api/app';
import type { ExecutionState } from '../../src/planning/execution-state';
import { openMemory } from '../../src/store/open-memory';
import { Sessions } from '../../src/temporal/sessions';
import { listen, requestJson, type Listening } from '../helpers/http';
import { startRunsApi, type RunsApi } from '../helpers/runs-api';
import { answer, respondStep, toolStep, cont } from '../helpers/scenarios';
import { gate } from '../helpers/gate';
import { readEvents } from '../helpers/sse-client';
import type { LiveMessage } from '../../src/live/messages';
import { listenUdp, registryDir, UdpPublisher } from '../../src/live/udp-channel';
import { StubModelServer } from '../helpers/stub-model-server';
import { waitFor } from '../helpers/temporal-env';

const stub = new StubModelServer();
let api: RunsApi;
let memory: Awaited<ReturnType<typeof openMemory>>;
let sessionsApp: Listening;
/**
 * A second worker's ear on the token channel: an API announces a watch to every registered worker at
 * once, so once this one has heard it, the run's worker has been told too (src/live/watch.ts).
 */
let ear: UdpPublisher;
const USER = `live-${randomUUID().slice(0, 8)}@example.com`;

before(async () => {
  stub.streaming = true;
  stub.chunkChars = 6;
  stub.chunkDelayMs = 15;
  api = await startRunsApi(stub);
  memory = await openMemory(api.env.config);
  const sessions = new Sessions(api.env.client, memory.memory, api.env.config);
  sessionsApp = await listen(createApp({ runs: api.runs, sessions, config: api.env.config, isHealthy: async () => true, logger: pino({ level: 'silent' }) }));
  ear = new UdpPublisher(registryDir(api.env.config.dataDir));
});
after(async () => {
  await ear?.close();
  await sessionsApp?.close();
  await memory?.close();
  await api?.stop();
});

const call = <T = Record<string, unknown>>(method: string, path: string, body?: unknown, url = api.url) => requestJson<T>(url, method, path, body);

async function startRun(goal: string): Promise<string> {
  const res = await call<{ runId: string }>('POST', '/v1/runs', { userId: USER, goal });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body.runId;
}

interface Token {
  runId: string;
  callId: string;
  stepId?: string;
  taskIndex?: string;
  field: string;
  delta: string;
  seq: number;
}

/** What a client shows: per call and field, the deltas since the call's last reset. */
function assemble(events: EventSourceMessage[]): Map<string, string> {
  const text = new Map<string, string>();
  for (const e of events) {
    if (e.event === 'token_reset') {
      const { callId } = JSON.parse(e.data) as { callId: string };
      for (const key of [...text.keys()]) if (key.startsWith(`${callId} `)) text.delete(key);
    }
    if (e.event !== 'token') continue;
    const t = JSON.parse(e.data) as Token;
    text.set(`${t.callId} ${t.field}`, (text.get(`${t.callId} ${t.field}`) ?? '') + t.delta);
  }
  return text;
}
const answerOf = (events: EventSourceMessage[]) => [...assemble(events)].filter(([k]) => k.endsWith(' answer')).map(([, v]) => v);
const tokensOf = (events: EventSourceMessage[]) => events.filter((e) => e.event === 'token').map((e) => JSON.parse(e.data) as Token);
const finalState = (events: EventSourceMessage[]) => JSON.parse([...events].reverse().find((e) => e.event === 'done')!.data) as ExecutionState;

/** Resolves once the workers know a reader watches the run (or, with `sessionId`, the session). */
const watched = (runId: string, sessionId?: string) => waitFor(`the watch of ${sessionId ?? runId} heard`, async () => ear.watched(runId, sessionId), 20_000);

/** Reads a run's events once the run is held at `held` until the reader watches: no call streams before. */
async function readWatched(runId: string, held: { open: () => void }, options: Parameters<typeof readEvents>[1]): ReturnType<typeof readEvents> {
  const reading = readEvents(`${api.url}/v1/runs/${runId}/events`, options);
  try {
    await watched(runId);
  } catch (err) {
    reading.catch(() => undefined);
    throw err;
  } finally {
    held.open();
  }
  return reading;
}

const LONG = (tag: string) => `${tag}: the answer, told slowly — with "quotes", a newline\nand an é, piece by piece until it ends.`;

test('tokens of the answer reach an SSE client before the model call finishes, and add up to the final answer', async () => {
  const goal = `stream one ${randomUUID()}`;
  const plan = gate();
  stub.script(goal, { execution_plan: [plan.hold({ steps: [{ ...respondStep, description: 'Write the slow answer' }] })], final_answer: [answer(LONG('one'))] });
  const runId = await startRun(goal);
  const firstTokenAt: number[] = [];
  const sse = await readWatched(runId, plan, {
    timeoutMs: 30_000,
    onEvent: (e) => {
      if (e.event === 'token' && (JSON.parse(e.data) as Token).field === 'answer') firstTokenAt.push(performance.now());
    },
  });
  const state = finalState(sse.events);
  assert.equal(state.status, 'completed');
  assert.deepEqual(answerOf(sse.events), [state.finalAnswer]);
  const streamed = stub.streams.find((s) => s.goal === goal && s.name === 'final_answer');
  assert.ok(streamed?.endedAt);
  assert.ok(firstTokenAt[0]! < streamed.endedAt, `the first answer token (${firstTokenAt[0]}) came before the reply ended (${streamed.endedAt})`);
  const tokens = tokensOf(sse.events);
  assert.ok(tokens.every((t) => t.runId === runId));
  const planTokens = tokens.filter((t) => t.field === 'steps[0].description');
  assert.equal(planTokens.map((t) => t.delta).join(''), 'Write the slow answer', 'the plan streams too');
  const answerTokens = tokens.filter((t) => t.field === 'answer');
  assert.deepEqual(
    answerTokens.map((t) => t.seq),
    answerTokens.map((_t, i) => (answerTokens[0]?.seq ?? 1) + i),
    'seq grows by one within the call',
  );
  // The state events are what they were: increasing versions, ids equal to them.
  const states = sse.events.filter((e) => e.event === 'state');
  for (const e of states) assert.equal(e.id, String((JSON.parse(e.data) as ExecutionState).version));
  // Tokens never enter Temporal history.
  const history = JSON.stringify(await api.env.client.workflow.getHandle(runId).fetchHistory());
  for (const t of tokens) assert.ok(!history.includes(t.callId), 'no call id in history');
  assert.ok(!history.includes('token_reset'));
});

test('a run nobody watches sends no tokens; a reader who comes mid-answer gets it from its start, then live', async () => {
  const goal = `late reader ${randomUUID()}`;
  const text = LONG('late').repeat(3);
  stub.script(goal, { execution_plan: [{ steps: [{ ...respondStep, description: 'Answer with nobody watching yet' }] }], final_answer: [answer(text)] });
  // Registered as an API that watches nothing: it hears whatever the worker sends.
  const heard: { at: number; message: LiveMessage }[] = [];
  const listener = await listenUdp(registryDir(api.env.config.dataDir));
  listener.onMessages((messages) => heard.push(...messages.map((message) => ({ at: performance.now(), message }))));
  // The answer's stream stops after 12 pieces until the worker knows of the reader, who so comes mid-answer.
  const PAUSE_AT = 12;
  let resume!: () => void;
  const resumed = new Promise<void>((resolve) => (resume = resolve));
  stub.beforePiece = (s, i) => (s.goal === goal && s.name === 'final_answer' && i === PAUSE_AT ? resumed : undefined);
  try {
    const runId = await startRun(goal);
    const answerStream = () => stub.streams.find((s) => s.goal === goal && s.name === 'final_answer');
    const deadline = Date.now() + 20_000;
    while ((answerStream()?.pieceAt.length ?? 0) < PAUSE_AT) {
      assert.ok(Date.now() < deadline, 'the answer did not stream');
      await new Promise((r) => setTimeout(r, 5));
    }
    const readerCame = performance.now();
    const sse = await readWatched(runId, { open: resume }, { timeoutMs: 30_000 });
    assert.equal(finalState(sse.events).finalAnswer, text);
    const mine = heard.filter((h) => h.message.runId === runId);
    assert.equal(mine.filter((h) => h.at < readerCame).length, 0, 'nothing was sent before anyone watched');
    assert.ok(!mine.some((h) => h.message.t === 'token' && h.message.field.startsWith('steps')), "the plan's call, unwatched, was never sent");
    assert.deepEqual(answerOf(sse.events), [text], 'the reader has the whole answer');
    const answerTokens = tokensOf(sse.events).filter((t) => t.field === 'answer');
    assert.ok(answerTokens[0]!.delta.length > stub.chunkChars * 6, `the first delta is the text so far (${answerTokens[0]!.delta.length} characters)`);
    assert.ok(answerTokens.length > 5, 'then the rest, piece by piece');
    assert.ok(!sse.events.some((e) => e.event === 'token_reset'), 'a first streaming seen late is no reset');
  } finally {
    stub.beforePiece = undefined;
    resume();
    await listener.close();
  }
});

/** Each call's result in a run's history, as bytes, by activity type (regular activities and local calls alike). */
async function resultBytes(runId: string): Promise<Map<string, number[]>> {
  const history = await api.env.client.workflow.getHandle(runId).fetchHistory();
  const events = history.events ?? [];
  const typeOf = new Map(events.map((e) => [String(e.eventId), e.activityTaskScheduledEventAttributes?.activityType?.name]));
  const bytes = new Map<string, number[]>();
  const add = (type: string | null | undefined, data: Uint8Array | null | undefined) => {
    if (!type || !data) return;
    bytes.set(type, [...(bytes.get(type) ?? []), data.length]);
  };
  for (const e of events) {
    const completed = e.activityTaskCompletedEventAttributes;
    if (completed) add(`regular ${typeOf.get(String(completed.scheduledEventId))}`, completed.result?.payloads?.[0]?.data);
    const marker = e.markerRecordedEventAttributes;
    if (marker?.markerName === 'core_local_activity') {
      const meta = marker.details?.data?.payloads?.[0]?.data;
      const type = meta ? (JSON.parse(Buffer.from(meta).toString('utf8')) as { activity_type?: string }).activity_type : undefined;
      add(`local ${type}`, marker.details?.result?.payloads?.[0]?.data);
    }
  }
  return bytes;
}

test('history bytes per call are the same with streaming and without', async () => {
  const results: Map<string, number[]>[] = [];
  for (const streaming of [true, false]) {
    stub.streaming = streaming;
    const goal = `history ${streaming ? 'on ' : 'off'} ${randomUUID()}`;
    stub.script(goal, { execution_plan: [{ steps: [toolStep('calculator', { expression: '6*7' }), respondStep] }], replan_decision: [cont], final_answer: [answer(LONG('h'))] });
    const runId = await startRun(goal);
    await api.env.client.workflow.getHandle(runId).result();
    results.push(await resultBytes(runId));
  }
  stub.streaming = true;
  const [on, off] = results as [Map<string, number[]>, Map<string, number[]>];
  // A call made the same way (regular or local: that follows the previous call's time) has the same result; only
  // its timing (a few digits of ms) may differ.
  const compared = [...on.keys()].filter((key) => off.has(key));
  assert.ok(compared.includes('regular planRun'), `compared: ${compared.join(', ')}`);
  for (const key of compared) {
    const a = on.get(key)![0]!;
    const b = off.get(key)![0]!;
    assert.ok(Math.abs(a - b) <= 4, `${key}: ${a} bytes streaming, ${b} without`);
  }
});

test('a stream broken mid-reply is retried: token_reset, then the retried call’s tokens, and the final answer is the retried one', async () => {
  const goal = `broken ${randomUUID()}`;
  const plan = gate();
  stub.script(goal, {
    execution_plan: [plan.hold({ steps: [toolStep('calculator', { expression: '1+1' }), respondStep] })],
    replan_decision: [cont],
    final_answer: [answer(LONG('first draft, never finished')), answer(LONG('retried'))],
  });
  // Break the answer's stream only (armed before the run, so the answer cannot start before it is).
  Object.assign(stub, { failMidStream: 1, failMidStreamOf: 'final_answer' });
  let sse: Awaited<ReturnType<typeof readEvents>>;
  let runId: string;
  try {
    runId = await startRun(goal);
    sse = await readWatched(runId, plan, { timeoutMs: 40_000 });
  } finally {
    Object.assign(stub, { failMidStream: 0, failMidStreamOf: undefined });
  }
  const state = finalState(sse.events);
  assert.equal(state.status, 'completed');
  assert.equal(state.finalAnswer, LONG('retried'));
  assert.ok(stub.streams.some((s) => s.goal === goal && s.broken));
  const resetEvent = sse.events.find((e) => e.event === 'token_reset');
  assert.ok(resetEvent, 'a token_reset');
  const resetData = JSON.parse(resetEvent.data) as Record<string, unknown>;
  assert.deepEqual(Object.keys(resetData).sort(), ['callId', 'runId']);
  // The answer call's tokens and its reset (the plan's thoughts stream too, under other call ids).
  const kinds = sse.events
    .filter((e) => e === resetEvent || (e.event === 'token' && (JSON.parse(e.data) as Token).callId === resetData.callId))
    .map((e) => (e.event === 'token' ? (JSON.parse(e.data) as Token).delta : 'RESET'));
  const reset = kinds.indexOf('RESET');
  assert.ok(reset > 0, `a token_reset after the first tokens: ${kinds.join('|')}`);
  assert.ok(kinds.slice(0, reset).join('').startsWith('first'), `the broken call streamed first: ${kinds.join('|')}`);
  assert.deepEqual(answerOf(sse.events), [LONG('retried')], 'what a client shows after the reset is the retried answer');
  assert.equal(resetData.runId, runId);
});

test('two runs streaming at once never mix', async () => {
  const goals = [`mix a ${randomUUID()}`, `mix b ${randomUUID()}`];
  const plans = goals.map(() => gate());
  for (const [i, goal] of goals.entries()) stub.script(goal, { execution_plan: [plans[i]!.hold({ steps: [respondStep] })], final_answer: [answer(LONG(`run ${i}`).repeat(2))] });
  const runIds = await Promise.all(goals.map(startRun));
  const streams = await Promise.all(runIds.map((runId, i) => readWatched(runId, plans[i]!, { timeoutMs: 30_000 })));
  for (const [i, sse] of streams.entries()) {
    assert.ok(tokensOf(sse.events).every((t) => t.runId === runIds[i]));
    assert.deepEqual(answerOf(sse.events), [LONG(`run ${i}`).repeat(2)]);
  }
});

test('a client that drops resumes with Last-Event-ID: no gap, no repeat', async () => {
  const goal = `resume ${randomUUID()}`;
  const text = LONG('resumed').repeat(3);
  const plan = gate();
  stub.script(goal, { execution_plan: [plan.hold({ steps: [respondStep] })], final_answer: [answer(text)] });
  const runId = await startRun(goal);
  const url = `${api.url}/v1/runs/${runId}/events`;
  const first = await readWatched(runId, plan, { timeoutMs: 30_000, until: (r) => tokensOf(r.events).filter((t) => t.field === 'answer').length >= 4 });
  const lastId = first.events.at(-1)!.id!;
  assert.match(lastId, /^t\./);
  await new Promise((r) => setTimeout(r, 150)); // tokens go on while the client is away
  const second = await readEvents(url, { timeoutMs: 30_000, headers: { 'last-event-id': lastId } });
  const all = [...first.events, ...second.events];
  assert.deepEqual(answerOf(all), [text]);
  assert.equal(finalState(second.events).finalAnswer, text);
  const ids = tokensOf(all).map((t) => `${t.callId}:${t.field}:${t.seq}`);
  assert.equal(new Set(ids).size, ids.length, 'no token twice');
});

test('a model server that answers stream:true with plain JSON works, with one request per call and no tokens', async () => {
  stub.streaming = false;
  try {
    const goal = `plain ${randomUUID()}`;
    stub.script(goal, { execution_plan: [{ steps: [respondStep] }], final_answer: [answer('plain answer')] });
    const runId = await startRun(goal);
    const sse = await readEvents(`${api.url}/v1/runs/${runId}/events`, { timeoutMs: 30_000 });
    assert.equal(finalState(sse.events).finalAnswer, 'plain answer');
    assert.equal(stub.requestsFor(goal, 'final_answer').length, 1);
    assert.equal(stub.requestsFor(goal, 'final_answer')[0]!.body.stream, true, 'it was asked to stream');
    assert.equal(tokensOf(sse.events).length, 0);
  } finally {
    stub.streaming = true;
  }
});

test('a session’s event stream carries the tokens of its runs', async () => {
  const created = await call<{ sessionId: string }>('POST', '/v1/sessions', { userId: USER }, sessionsApp.url);
  assert.equal(created.status, 201);
  const { sessionId } = created.body;
  const goal = `session stream ${randomUUID()}`;
  stub.script(goal, { execution_plan: [{ steps: [respondStep] }], final_answer: [answer(LONG('session'))] });
  const events: EventSourceMessage[] = [];
  const reading = readEvents(`${sessionsApp.url}/v1/sessions/${sessionId}/events`, {
    timeoutMs: 30_000,
    onEvent: (e) => events.push(e),
    until: (r) => r.events.some((e) => e.event === 'run' && (JSON.parse(e.data) as ExecutionState).status === 'completed'),
  });
  // The run starts once the workers know the session is watched: its calls' tokens all go out.
  await watched('', sessionId);
  const sent = await call('POST', `/v1/sessions/${sessionId}/messages`, { text: goal }, sessionsApp.url);
  assert.ok(sent.status < 300, JSON.stringify(sent.body));
  await reading;
  assert.deepEqual(answerOf(events), [LONG('session')]);
});
