/**
 * The sessions API end to end: real HTTP to the express app, a real Temporal
 * server, a real worker running the session and plan workflows, the real
 * memory store, and the real `openai` client talking to a scripted stub model.
 */
import { randomUUID } from 'node:crypto';
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { EventSourceMessage } from 'eventsource-parser';
import { Client } from '@temporalio/client';
import pino from 'pino';
import { createApp } from '../../src/api/app';
import { runUiUrl } from '../../src/config';
import type { ExecutionState } from '../../src/planning/execution-state';
import type { Chunk } from '../../src/memory/model';
import { taskStateChunk } from '../../src/sessions/session-chunks';
import { emptyTaskState, HELP_TEXT } from '../../src/sessions/session-model';
import { openMemory, type OpenMemory } from '../../src/store/open-memory';
import { Runs } from '../../src/temporal/runs';
import { Sessions, type SessionSummary } from '../../src/temporal/sessions';
import type { MessageOutcome, SessionView } from '../../src/workflows/session-definitions';
import { listen, requestJson, type Listening } from '../helpers/http';
import { askStep, cont, respondStep, toolStep } from '../helpers/scenarios';
import { readEvents } from '../helpers/sse-client';
import { StubModelServer } from '../helpers/stub-model-server';
import { startTestEnv, stubProvider, waitFor, type TestEnv } from '../helpers/temporal-env';

const stub = new StubModelServer();
let env: TestEnv;
let memory: OpenMemory;
let server: Listening;
/** Unique per file run, so listings see only this file's sessions. */
const USER = `sessions-${randomUUID().slice(0, 8)}`;

const call = <T = Record<string, unknown>>(method: string, path: string, body?: unknown) => requestJson<T>(server.url, method, path, body);

async function createSession(userId = USER): Promise<{ sessionId: string; threadId: string }> {
  const res = await call<{ sessionId: string; threadId: string }>('POST', '/v1/sessions', { userId });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body;
}

async function send(sessionId: string, text: string): Promise<MessageOutcome> {
  const res = await call<MessageOutcome>('POST', `/v1/sessions/${sessionId}/messages`, { text });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body;
}

async function view(sessionId: string): Promise<SessionView> {
  const res = await call<SessionView>('GET', `/v1/sessions/${sessionId}`);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body;
}

const waitForView = (sessionId: string, what: string, ok: (v: SessionView) => boolean) =>
  waitFor(`session ${sessionId}: ${what}`, async () => {
    const v = await view(sessionId);
    return ok(v) ? v : undefined;
  });

async function waitForRun(runId: string, status: ExecutionState['status']): Promise<ExecutionState> {
  return waitFor(`run ${runId} to be ${status}`, async () => {
    const res = await call<ExecutionState>('GET', `/v1/runs/${runId}`);
    return res.status === 200 && res.body.status === status ? res.body : undefined;
  });
}

const noMisses = (goal: string) =>
  assert.deepEqual(
    stub.misses.filter((m) => m.goal === goal).map((m) => m.name),
    [],
    'the model was asked for a reply the test did not script',
  );

/** calculator, then an answer. */
function scriptAddition(goal: string, expression: string, answer: string): void {
  stub.script(goal, {
    execution_plan: [{ steps: [toolStep('calculator', { expression }), respondStep] }],
    replan_decision: [cont],
    final_answer: [{ answer }],
  });
}

before(async () => {
  await stub.start();
  env = await startTestEnv({ provider: stubProvider(stub.url) });
  // The API's own memory service over the worker's store, as `npm run api` has.
  memory = await openMemory(env.config);
  const runs = new Runs(env.client, env.config);
  const sessions = new Sessions(env.client, memory.memory, env.config);
  const app = createApp({
    runs,
    sessions,
    memory: memory.memory,
    config: env.config,
    isHealthy: async () => true,
    logger: pino({ level: 'silent' }),
    events: { pollMs: 100 },
  });
  server = await listen(app);
});

after(async () => {
  await server?.close();
  await env?.stop();
  await memory?.close();
  await stub.stop();
});

test('a new session has a readable id, its own memory thread, and an empty conversation', async () => {
  const { sessionId, threadId } = await createSession();
  assert.match(sessionId, /^session-sessions-[0-9a-f]{8}-[0-9a-f]{10}$/);
  const v = await view(sessionId);
  assert.equal(v.sessionId, sessionId);
  assert.equal(v.userId, USER);
  assert.equal(v.threadId, threadId);
  assert.deepEqual(v.chatHistory, []);
  assert.deepEqual(v.runs, []);
  assert.equal(v.taskState.CurrentGoal, '');
  const thread = await call<{ threadId: string; userId: string }>('GET', `/v1/threads/${threadId}`);
  assert.equal(thread.status, 200);
  assert.equal(thread.body.userId, USER);
});

test('a request starts a run of the session; its answer joins the chat history; /state shows it and /help explains', async () => {
  const { sessionId } = await createSession();
  const goal = `what is 19+23? (${sessionId})`;
  scriptAddition(goal, '19+23', 'It is 42.');

  const outcome = await send(sessionId, goal);
  assert.equal(outcome.kind, 'new_run');
  assert.ok(outcome.runId, JSON.stringify(outcome));
  const runId = outcome.runId;
  assert.equal((outcome as MessageOutcome & { uiUrl?: string }).uiUrl, runUiUrl(env.config, runId), 'where to watch the run');
  const state = await waitForRun(runId, 'completed');
  assert.equal(state.sessionId, sessionId);
  assert.equal(state.goal, goal);
  assert.equal(state.finalAnswer, 'It is 42.');

  const v = await waitForView(sessionId, 'the answer in the chat history', (s) => s.chatHistory.some((t) => t.role === 'assistant' && t.text.includes('It is 42.')));
  const mine = v.chatHistory.findIndex((t) => t.role === 'user' && t.text === goal);
  const answer = v.chatHistory.findIndex((t) => t.role === 'assistant' && t.text.includes('It is 42.'));
  assert.ok(mine >= 0 && mine < answer, JSON.stringify(v.chatHistory));
  const run = v.runs.find((r) => r.runId === runId);
  assert.equal(run?.status, 'completed');
  assert.equal(run?.finalAnswer, 'It is 42.');

  const help = await send(sessionId, '/help');
  assert.deepEqual(help, { kind: 'command', reply: HELP_TEXT });
  const shown = await send(sessionId, '/state');
  assert.equal(shown.kind, 'command');
  assert.equal(shown.runId, undefined);
  assert.ok(shown.reply?.includes(goal), `the state shows the conversation: ${shown.reply}`);
  // Commands start nothing.
  assert.deepEqual(
    (await view(sessionId)).runs.map((r) => r.runId),
    [runId],
  );
  noMisses(goal);
});

test('while a run waits, the next message is its reply; the run goes on with it', async () => {
  const { sessionId } = await createSession();
  const goal = `paint the fence (${sessionId})`;
  stub.script(goal, {
    execution_plan: [{ steps: [askStep('Which colour would you like?'), respondStep] }],
    replan_decision: [cont],
    final_answer: [(req: { messages: { content: string }[] }) => ({ answer: req.messages.some((m) => m.content.includes('forest green')) ? 'Painted forest green.' : 'no reply seen' })],
  });
  const started = await send(sessionId, goal);
  assert.equal(started.kind, 'new_run');
  const runId = started.runId!;
  const waiting = await waitForView(sessionId, 'the run waiting', (s) => s.runs.some((r) => r.runId === runId && r.status === 'waiting_user'));
  assert.equal(waiting.runs.find((r) => r.runId === runId)?.question, 'Which colour would you like?');

  const replied = await send(sessionId, 'forest green');
  assert.equal(replied.kind, 'reply');
  assert.equal(replied.runId, runId);
  const done = await waitForRun(runId, 'completed');
  assert.equal(done.finalAnswer, 'Painted forest green.');
  assert.ok(
    done.observations.some((o) => o.kind === 'user_reply' && o.content === 'forest green'),
    JSON.stringify(done.observations),
  );
  // The reply was not taken for a new request.
  assert.deepEqual(
    (await view(sessionId)).runs.map((r) => r.runId),
    [runId],
  );
  noMisses(goal);
});

test('DELETE …/memory forgets the conversation, like /clear', async () => {
  const { sessionId } = await createSession();
  const goal = `what is 2*21? (${sessionId})`;
  scriptAddition(goal, '2*21', 'Forty-two.');
  const { runId } = await send(sessionId, goal);
  await waitForRun(runId!, 'completed');
  await waitForView(sessionId, 'the answer in the chat history', (s) => s.chatHistory.some((t) => t.text.includes('Forty-two.')));

  const res = await call<MessageOutcome>('DELETE', `/v1/sessions/${sessionId}/memory`);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.equal(res.body.kind, 'command');
  const v = await view(sessionId);
  assert.deepEqual(v.chatHistory, []);
  assert.equal(v.taskState.CurrentGoal, '');
  assert.deepEqual(v.taskState.ImportantFacts, []);
  assert.equal(v.runs.length, 0, JSON.stringify(v.runs));
  // The session itself goes on.
  assert.equal((await send(sessionId, '/help')).kind, 'command');
});

test("the conversation lives in the session thread: a rollback and a person's edit of it are what GET /v1/sessions/:id, /state and the next run's prompt see", async () => {
  const { sessionId, threadId } = await createSession();
  const asked = (goal: string, text: string) => stub.script(goal, { execution_plan: [{ steps: [respondStep] }], final_answer: [{ answer: text }] });
  const [first, second, third] = ['first', 'second', 'third'].map((n) => `${n} request (${sessionId})`) as [string, string, string];
  asked(first, 'First answer.');
  await send(sessionId, first);
  await waitForView(sessionId, 'the first answer', (v) => v.chatHistory.some((t) => t.text === 'First answer.'));
  const head = await call<{ headStateId: string }>('GET', `/v1/threads/${threadId}`);
  const afterFirst = head.body.headStateId;
  asked(second, 'Second answer.');
  await send(sessionId, second);
  const before = await waitForView(sessionId, 'the second answer', (v) => v.chatHistory.some((t) => t.text === 'Second answer.'));

  // A person rolls the session thread back to before the second request, then edits what is left.
  assert.equal((await call('POST', `/v1/threads/${threadId}/rollback`, { stateId: afterFirst })).status, 201);
  const rolledBack = await view(sessionId);
  assert.deepEqual(
    rolledBack.chatHistory.map((t) => t.text),
    [first, 'First answer.'],
  );
  assert.ok(rolledBack.version > before.version, 'a change of the thread is a new version of the view');
  assert.ok(
    rolledBack.chatHistory.every((t) => /^msg_[0-9a-z]+$/.test(t.messageId ?? '')),
    'turns carry their message ids',
  );
  const answerChunk = (await call<{ chunks: Chunk[] }>('GET', `/v1/threads/${threadId}`)).body.chunks.find((c) => c.type === 'response');
  const edit = await call('POST', `/v1/threads/${threadId}/operations`, {
    operation: { op: 'update', chunkId: answerChunk?.id, patch: { content: { kind: 'text', text: 'First answer, corrected by a person.' } } },
  });
  assert.equal(edit.status, 201, JSON.stringify(edit.body));
  const facts = { ...emptyTaskState(), ImportantFacts: ['my colour is green'] };
  const added = await call('POST', `/v1/threads/${threadId}/operations`, { operation: { op: 'add', chunks: [taskStateChunk(sessionId, facts)] } });
  assert.equal(added.status, 201, JSON.stringify(added.body));

  const edited = await view(sessionId);
  assert.deepEqual(
    edited.chatHistory.map((t) => t.text),
    [first, 'First answer, corrected by a person.'],
  );
  assert.deepEqual(edited.taskState.ImportantFacts, ['my colour is green']);
  const state = await send(sessionId, '/state');
  assert.match(state.reply ?? '', /Recent turns \(2\):[^]*First answer, corrected by a person\.[^]*ImportantFacts:\n  - my colour is green/);
  // (Runs are the workflow's: the second run is still listed under "Runs"; its turns are gone.)
  assert.doesNotMatch((state.reply ?? '').split('Runs (')[0] ?? '', /second request|Second answer/);

  // The next run's planner prompt is built from the thread as it is now.
  asked(third, 'Third answer.');
  const outcome = await send(sessionId, third);
  await waitForRun(outcome.runId ?? '', 'completed');
  const planPrompt =
    stub
      .requestsFor(third, 'execution_plan')[0]
      ?.messages.map((m) => m.content)
      .join('\n') ?? '';
  assert.match(planPrompt, /First answer, corrected by a person\.[^]*ImportantFacts:\n  - my colour is green/);
  assert.doesNotMatch(planPrompt, /second request|Second answer/);
});

test('unknown sessions are 404s in the API error shape, runs are not sessions', async () => {
  const { sessionId } = await createSession();
  const goal = `what is 1+1? (${sessionId})`;
  scriptAddition(goal, '1+1', 'Two.');
  const { runId } = await send(sessionId, goal);
  for (const id of ['session-nobody-0000000000', runId!]) {
    for (const [method, path, body] of [
      ['GET', `/v1/sessions/${id}`],
      ['POST', `/v1/sessions/${id}/messages`, { text: 'hello' }],
      ['DELETE', `/v1/sessions/${id}/memory`],
      ['GET', `/v1/sessions/${id}/events`],
    ] as const) {
      const res = await call<{ error: { code: string; message: string } }>(method, path, body);
      assert.equal(res.status, 404, `${method} ${path}: ${JSON.stringify(res.body)}`);
      assert.equal(res.body.error.code, 'not_found');
      assert.match(res.body.error.message, new RegExp(`no session with id "${id}"`));
    }
  }
  await waitForRun(runId!, 'completed');
});

test('a session is not a run: a reply or an approval sent to it through the runs API is a 404 and reaches nothing', async () => {
  const { sessionId } = await createSession();
  for (const [path, body] of [
    [`/v1/runs/${sessionId}/reply`, { text: 'hello' }],
    [`/v1/runs/${sessionId}/approval`, { stepId: 's1', decision: 'approve' }],
  ] as const) {
    const res = await call<{ error: { code: string; message: string } }>('POST', path, body);
    assert.equal(res.status, 404, `POST ${path}: ${JSON.stringify(res.body)}`);
    assert.equal(res.body.error.code, 'not_found');
    assert.match(res.body.error.message, new RegExp(`no run with id "${sessionId}"`));
  }
  const v = await view(sessionId);
  assert.deepEqual(v.chatHistory, [], 'nothing reached the session');
  assert.deepEqual(v.runs, []);
});

test('bad requests are 400s that name the offending field', async () => {
  const { sessionId } = await createSession();
  const cases: [string, string, unknown, string][] = [
    ['POST', '/v1/sessions', {}, 'userId'],
    ['POST', '/v1/sessions', { userId: 'two words' }, 'userId'],
    ['POST', `/v1/sessions/${sessionId}/messages`, {}, 'text'],
    ['POST', `/v1/sessions/${sessionId}/messages`, { text: '' }, 'text'],
    ['POST', `/v1/sessions/${sessionId}/messages`, { text: '   ' }, 'text'],
    ['POST', `/v1/sessions/${sessionId}/messages`, { text: 'x'.repeat(10_001) }, 'text'],
    ['GET', '/v1/sessions?limit=0', undefined, 'limit'],
  ];
  for (const [method, path, body, field] of cases) {
    const res = await call<{ error: { code: string; details: { path: string }[] } }>(method, path, body);
    assert.equal(res.status, 400, `${method} ${path} ${JSON.stringify(body)?.slice(0, 40)}: ${JSON.stringify(res.body)}`);
    assert.equal(res.body.error.code, 'invalid_request');
    // Every issue is listed (an empty text is both too short and blank), all of them about the one field.
    assert.deepEqual([...new Set(res.body.error.details.map((d) => d.path))], [field]);
  }
  // None of them reached the session.
  assert.equal((await view(sessionId)).turns, 0);
  // The longest message allowed is accepted (as a command, so no model is needed).
  assert.equal((await send(sessionId, `/help ${'x'.repeat(9_994)}`)).kind, 'command');
});

test('sessions are listed by user', async () => {
  const user = `${USER}-list`;
  const a = await createSession(user);
  const b = await createSession(user);
  const other = await createSession(`${USER}-other`);
  const listed = await waitFor('both sessions in the list', async () => {
    const res = await call<{ sessions: SessionSummary[] }>('GET', `/v1/sessions?userId=${user}`);
    assert.equal(res.status, 200);
    return res.body.sessions.length >= 2 ? res.body.sessions : undefined;
  });
  assert.deepEqual(listed.map((s) => s.sessionId).sort(), [a.sessionId, b.sessionId].sort());
  for (const s of listed) {
    assert.equal(s.userId, user);
    assert.equal(s.status, 'running');
    assert.equal(s.threadId, s.sessionId === a.sessionId ? a.threadId : b.threadId);
  }
  assert.ok(!listed.some((s) => s.sessionId === other.sessionId));
});

test('the event stream shows the session and its run step by step, in order', async () => {
  const { sessionId } = await createSession();
  const goal = `what is 6*7? (${sessionId})`;
  scriptAddition(goal, '6*7', 'Six times seven is 42.');
  let opened!: () => void;
  const ready = new Promise<void>((resolve) => (opened = resolve));
  const parse = <T>(e: EventSourceMessage) => JSON.parse(e.data) as T;
  // Done once both have been seen: the session with the answer, and the run's final state (sent by the
  // same poll, right after the session's view — the reader must not stop between the two).
  const finished = (events: EventSourceMessage[]) =>
    events.some((e) => e.event === 'session' && parse<SessionView>(e).chatHistory.some((t) => t.text.includes('Six times seven'))) &&
    events.some((e) => e.event === 'run' && parse<ExecutionState>(e).status === 'completed');
  const reading = readEvents(`${server.url}/v1/sessions/${sessionId}/events`, {
    timeoutMs: 45_000,
    onEvent: (e) => e.event === 'session' && opened(),
    until: (r) => finished(r.events),
  });
  await ready;
  const { runId } = await send(sessionId, goal);
  const sse = await reading;
  assert.match(sse.contentType ?? '', /^text\/event-stream/);

  const events = sse.events;
  assert.equal(events[0]?.event, 'session');
  assert.deepEqual(parse<SessionView>(events[0]!).runs, []);
  const sessionEvents = events.filter((e) => e.event === 'session').map((e) => parse<SessionView>(e));
  const runEvents = events.filter((e) => e.event === 'run').map((e) => parse<ExecutionState>(e));
  const increasing = (xs: number[]) => xs.every((x, i) => i === 0 || x > xs[i - 1]!);
  assert.ok(increasing(sessionEvents.map((s) => s.version)), 'session versions only grow');
  assert.ok(increasing(runEvents.map((s) => s.version)), 'run versions only grow');
  assert.ok(runEvents.length > 0 && runEvents.every((s) => s.runId === runId), JSON.stringify(runEvents.map((s) => s.runId)));

  // The session names the run before the run's own events arrive.
  const firstListing = events.findIndex((e) => e.event === 'session' && parse<SessionView>(e).runs.some((r) => r.runId === runId));
  const firstRun = events.findIndex((e) => e.event === 'run');
  const answered = events.findIndex((e) => e.event === 'session' && parse<SessionView>(e).chatHistory.some((t) => t.text.includes('Six times seven')));
  // (A fast run may have answered by the first view that lists it: the stream need not catch it in between.)
  assert.ok(firstListing >= 0 && firstListing < firstRun && firstListing <= answered, `order: listing ${firstListing}, first run event ${firstRun}, answer ${answered}`);
  const final = runEvents.at(-1)!;
  assert.equal(final.status, 'completed');
  assert.equal(final.finalAnswer, 'Six times seven is 42.');
  assert.equal(runEvents.filter((s) => s.status === 'completed').length, 1, 'the final state is sent once');
  // The run's steps, as they happened: the tool step seen finished with its result.
  const toolDone = runEvents.find((s) => s.steps.some((st) => st.tool === 'calculator' && st.status === 'completed'));
  assert.ok(toolDone, 'a run event shows the calculator step completed');
  assert.ok(
    toolDone.observations.some((o) => o.kind === 'tool' && o.content === '{"value":42}'),
    JSON.stringify(toolDone.observations),
  );
  noMisses(goal);
});

test("a session's event stream queries the session and its runs only when their histories grew; a reply and the end still show", async () => {
  const { sessionId } = await createSession();
  const goal = `paint the shed (${sessionId})`;
  stub.script(goal, {
    execution_plan: [{ steps: [askStep('Which colour for the shed?'), respondStep] }],
    replan_decision: [cont],
    final_answer: [{ answer: 'The shed is blue.' }],
  });
  const { runId } = await send(sessionId, goal);
  await waitForView(sessionId, 'the run waiting', (s) => s.runs.some((r) => r.runId === runId && r.status === 'waiting_user'));

  // The API's Runs and Sessions on a client that counts each query it makes, by its name.
  const queried = new Map<string, number>();
  const counting = new Client({
    connection: env.client.connection,
    namespace: env.config.TEMPORAL_NAMESPACE,
    interceptors: { workflow: [{ query: (input, next) => (queried.set(input.queryType, (queried.get(input.queryType) ?? 0) + 1), next(input)) }] },
  });
  const sessions = new Sessions(counting, memory.memory, env.config);
  let polls = 0;
  const app = createApp({
    runs: new Runs(counting, env.config),
    sessions: {
      create: sessions.create.bind(sessions),
      list: sessions.list.bind(sessions),
      send: sessions.send.bind(sessions),
      clear: sessions.clear.bind(sessions),
      end: sessions.end.bind(sessions),
      get: (id, seen) => (polls++, sessions.get(id, seen)),
    },
    memory: memory.memory,
    config: env.config,
    isHealthy: async () => true,
    logger: pino({ level: 'silent' }),
    events: { pollMs: 50, heartbeatMs: 100 },
  });
  const watcher = await listen(app);
  try {
    let sawRun = false;
    let streamDone = false;
    const stream = readEvents(`${watcher.url}/v1/sessions/${sessionId}/events`, {
      timeoutMs: 90_000,
      onEvent: (e) => (sawRun ||= e.event === 'run'),
      // Both: the answer in the session, and the run's end (sent by the same poll, maybe in a later chunk).
      until: (r) =>
        r.events.some((e) => e.event === 'session' && (JSON.parse(e.data) as SessionView).chatHistory.some((t) => t.text === 'The shed is blue.')) &&
        r.events.some((e) => e.event === 'run' && (JSON.parse(e.data) as ExecutionState).status === 'completed'),
    }).finally(() => (streamDone = true));
    stream.catch(() => undefined); // awaited below; if an assertion fails first, the watcher's close cuts it
    // Watched a while first (however long eight polls take): polls of a session and run that do not move query nothing.
    await waitFor('eight polls of the waiting session', async () => {
      if (streamDone) await stream; // failed: its own error says why
      assert.ok(!streamDone, 'the stream ended before the reply');
      return sawRun && polls >= 8;
    });
    // (The session may still have been finishing the turn's bookkeeping when the stream opened.)
    assert.equal(queried.get('getState'), 1, `a waiting run is queried once, however often polled (${polls} polls)`);
    assert.ok((queried.get('getSession') ?? 0) <= 2, `${queried.get('getSession')} session queries in ${polls} polls`);
    await send(sessionId, 'blue');
    const sse = await stream;
    const runStates = sse.events.filter((e) => e.event === 'run').map((e) => (JSON.parse(e.data) as ExecutionState).status);
    assert.equal(runStates[0], 'waiting_user');
    assert.equal(runStates.at(-1), 'completed');
    assert.ok((queried.get('getSession') ?? 0) >= 2 && (queried.get('getSession') ?? 0) < polls, `${queried.get('getSession')} session queries in ${polls} polls`);
  } finally {
    await watcher.close();
  }
  noMisses(goal);
});

test('over REST a session may run its messages as task trees (POST /v1/sessions {engine: "tree"}), and a message may choose its engine (plan, react)', async () => {
  const bad = await call<{ error: { code: string } }>('POST', '/v1/sessions', { userId: USER, engine: 'graph' });
  assert.equal(bad.status, 400);
  const created = await call<{ sessionId: string }>('POST', '/v1/sessions', { userId: USER, engine: 'tree' });
  assert.equal(created.status, 201);
  const { sessionId } = created.body;
  const goal = 'sort out the garden';
  stub.script(goal, {
    task_tree: [{ name: 'Garden', goal, subtasks: [{ name: 'Mow', goal: 'Mow the lawn' }] }],
    react_action: [{ thought: 'done', action: 'finish', result: 'lawn mowed' }],
    final_answer: [{ answer: 'The lawn is mowed.' }],
  });
  const tree = await send(sessionId, goal);
  assert.equal(tree.kind, 'new_run');
  const done = await waitForRun(tree.runId ?? '', 'completed');
  assert.equal(done.engine, 'tree');
  assert.equal(done.tree?.subtasks[0]?.result, 'lawn mowed');
  await waitForView(sessionId, 'the answer', (v) => v.chatHistory.some((t) => t.text === 'The lawn is mowed.'));

  scriptAddition('and add 2 and 3 as a plan', '2+3', 'Five.');
  const res = await call<MessageOutcome>('POST', `/v1/sessions/${sessionId}/messages`, { text: 'and add 2 and 3 as a plan', engine: 'plan' });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  const plan = await waitForRun(res.body.runId ?? '', 'completed');
  assert.equal(plan.engine, undefined);
  assert.equal(plan.finalAnswer, 'Five.');

  // Seed 003's ReAct first, chosen per message: the loop answers directly, no tree proposed and no answer call.
  const direct = 'what is the capital of France';
  stub.script(direct, { react_action: [{ thought: 'I know this', action: 'finish', result: 'Paris.' }] });
  const asked = await call<MessageOutcome>('POST', `/v1/sessions/${sessionId}/messages`, { text: direct, engine: 'react' });
  assert.equal(asked.status, 200, JSON.stringify(asked.body));
  const answered = await waitForRun(asked.body.runId ?? '', 'completed');
  assert.equal(answered.engine, 'tree');
  assert.equal(answered.entry, 'react');
  assert.equal(answered.finalAnswer, 'Paris.');
  await waitForView(sessionId, 'the direct answer', (v) => v.chatHistory.some((t) => t.text === 'Paris.'));
  assert.equal(stub.requestsFor(direct, 'task_tree').length + stub.requestsFor(direct, 'final_answer').length, 0);
  noMisses(direct);
});

test("a person's edit of a session's TaskState through the threads API is held to the TaskState rules too, and the audit says what was dropped", async () => {
  const { sessionId, threadId } = await createSession();
  await waitFor('the session thread', async () => (await call('GET', `/v1/threads/${threadId}`)).status === 200);
  const taskState = {
    CurrentGoal: 'save for a bike',
    ActiveFlow: '',
    OpenLoops: [],
    ImportantFacts: ['The user is saving for a bike', 'balance is 420 EUR'],
    LastDecision: '',
    UpdatedAt: new Date().toISOString(),
  };
  const added = await call<{ stateId: string }>('POST', `/v1/threads/${threadId}/operations`, {
    operation: { op: 'add', chunks: [{ type: 'workflow', content: { kind: 'json', data: { kind: 'task_state', taskState } }, retention: 'CRITICAL' }] },
  });
  assert.equal(added.status, 201, JSON.stringify(added.body));
  const thread = await call<{ chunks: { type: string; content: { kind: string; data?: { kind?: string; taskState?: { ImportantFacts: string[] } } } }[] }>('GET', `/v1/threads/${threadId}`);
  const stored = thread.body.chunks.find((c) => c.content.data?.kind === 'task_state');
  assert.deepEqual(stored?.content.data?.taskState?.ImportantFacts, ['The user is saving for a bike']);
  const audit = await call<{ operations: { details: { observerNotes?: string[] } | null }[] }>('GET', `/v1/threads/${threadId}/audit`);
  const notes = audit.body.operations.flatMap((op) => op.details?.observerNotes ?? []);
  assert.ok(
    notes.some((n) => /task-state-rules: dropped by the TaskState rules: ImportantFacts: "balance is 420 EUR"/.test(n)),
    JSON.stringify(notes),
  );
  // The session's view shows the TaskState as the rules left it.
  assert.deepEqual((await view(sessionId)).taskState.ImportantFacts, ['The user is saving for a bike']);
});
