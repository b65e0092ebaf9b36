/**
 * react_mem's passes off the answer path (seed 002), on the real server with the real `openai`
 * client to the stub model: the answer never waits for extraction; extraction writes a summary,
 * facts and an episode and discards the run's working memory; a burst of a conversation's
 * invocations is one pass and loses none; `/end` and the idle timeout promote the conversation;
 * the user's TaskState carries over to their next session.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import type { ExecutionState } from '../../src/planning/execution-state';
import { plainFacts } from '../../src/calls/memory-passes';
import { runThreadId } from '../../src/memory/run-chunks';
import { readConversation } from '../../src/sessions/session-chunks';
import { openLongTerm } from '../../src/store/longterm/open-longterm';
import { openMemory } from '../../src/store/open-memory';
import { Runs } from '../../src/temporal/runs';
import { SessionClosedError, Sessions } from '../../src/temporal/sessions';
import { memoryJobSignal, memoryProgressQuery, USER_MEMORY_WORKFLOW_TYPE, userMemoryWorkflowId } from '../../src/workflows/memory-definitions';
import { SESSION_WORKFLOW_TYPE, sendMessageUpdate, type SessionInput } from '../../src/workflows/session-definitions';
import pino from 'pino';
import { loadConfig } from '../../src/config';
import { startApi } from '../../src/api/server';
import { answer, cont, respondStep, toolStep } from '../helpers/scenarios';
import { StubModelServer, lastMessage, type StubRequest } from '../helpers/stub-model-server';
import { startTestEnv, stubProvider, testConfig, waitFor, type TestEnv } from '../helpers/temporal-env';

const stub = new StubModelServer();
let env: TestEnv;
let threads: Awaited<ReturnType<typeof openMemory>>;
let longterm: Awaited<ReturnType<typeof openLongTerm>>;

before(async () => {
  await stub.start();
  const config = testConfig({ MEMORY_EXTRACTION: 'on', MEMORY_EXTRACTION_DEBOUNCE_MS: '1500', MEMORY_EXTRACTION_MAX_DELAY_MS: '10000' });
  env = await startTestEnv({ provider: stubProvider(stub.url), config });
  threads = await openMemory(config);
  longterm = await openLongTerm(config);
});
after(async () => {
  await env?.stop();
  await threads?.close();
  await longterm?.close();
  await stub.stop();
});

const fact = (object: string) => ({ subject: 'user', predicate: 'diet', object, text: `The user is ${object}.` });
const progressOf = (userId: string) => env.client.workflow.getHandle(userMemoryWorkflowId(userId)).query(memoryProgressQuery);

async function startSession(userId: string, settings: SessionInput['settings'] = {}) {
  const sessionId = `session-${userId}-${randomBytes(4).toString('hex')}`;
  const threadId = `thread_${sessionId}`;
  const input: SessionInput = { sessionId, userId, threadId, limits: { maxSteps: 6, maxDepth: 1 }, settings };
  const handle = await env.client.workflow.start(SESSION_WORKFLOW_TYPE, { taskQueue: env.config.TASK_QUEUE, workflowId: sessionId, args: [input] });
  const send = (text: string) => handle.executeUpdate(sendMessageUpdate, { args: [{ text }] });
  return { handle, sessionId, threadId, send };
}

test('the answer comes first: extraction held back does not hold it; then summary, facts, episode, and the working memory is discarded', async () => {
  const userId = 'mp-ana';
  const goal = 'book a vegetarian table for two';
  let release: () => void = () => undefined;
  const held = new Promise<void>((r) => (release = r));
  const extraction = {
    summary: 'The user asked for a vegetarian table for two; the agent booked one.',
    facts: [fact('vegetarian')],
    episode: { goal: 'book a table', steps: ['counted the guests'], outcome: 'booked', lessons: ['ask about diet first'] },
  };
  stub.script(goal, {
    execution_plan: [{ steps: [toolStep('calculator', { expression: '1+1' }, 'count the guests'), respondStep] }],
    replan_decision: [cont],
    final_answer: [answer('Booked a table for two.')],
    memory_extraction: [async () => (await held, extraction)],
  });
  const { runId } = await new Runs(env.client, env.config).start({ userId, goal });
  const state = (await env.client.workflow.getHandle(runId).result()) as ExecutionState;
  assert.equal(state.status, 'completed');
  assert.equal(state.finalAnswer, 'Booked a table for two.');
  // The run is over with its answer; its extraction is asked for and still held.
  await waitFor('the extraction request', async () => stub.requestsFor(goal, 'memory_extraction').length === 1);
  assert.match(lastMessage(stub.requestsFor(goal, 'memory_extraction')[0]), /calculator[\s\S]*Booked a table for two/);
  assert.deepEqual(await longterm.longterm.listSummaries(userId, runId), []);
  release();

  const summaries = await waitFor('the summary', async () => {
    const s = await longterm.longterm.listSummaries(userId, runId);
    return s.length > 0 ? s : null;
  });
  assert.equal(summaries[0]?.text, extraction.summary);
  assert.equal(summaries[0]?.provenance.runId, runId);
  const facts = await longterm.longterm.listFacts(userId, {});
  assert.deepEqual(
    facts.map((f) => f.text),
    ['The user is vegetarian.'],
  );
  assert.equal(facts[0]?.provenance.runId, runId);
  const episodes = await longterm.longterm.listEpisodes(userId, {});
  assert.deepEqual(
    episodes.map((e) => e.lessons),
    [['ask about diet first']],
  );
  // Working memory (the tool step's records) is gone from the head, replaced by the summary.
  const { chunks } = await waitFor('the working memory discarded', async () => {
    const view = await threads.memory.view(runThreadId(runId));
    return view.chunks.some((c) => c.type === 'compacted') ? view : null;
  });
  assert.equal(chunks.filter((c) => c.type === 'action' || c.type === 'action_response').length, 0);
  assert.ok(chunks.some((c) => c.type === 'delegation') && chunks.some((c) => c.type === 'output'), 'goal and answer stay');
  const progress = await progressOf(userId);
  assert.equal(progress.extracted, 1);
  assert.equal(progress.failed, 0);
  assert.equal(stub.misses.length, 0);
});

test('a burst of a conversation is one extraction with every invocation; /end promotes it; the TaskState goes on to the next session', async () => {
  const userId = 'mp-bea';
  const goals = ['find a vegan bakery', 'and a vegan pizzeria', 'and a vegan ice cream shop'];
  // The three runs answer together, so their ends form one burst.
  let go: () => void = () => undefined;
  const together = new Promise<void>((r) => (go = r));
  const extraction = { summary: 'The user looked for vegan places; the agent found three.', facts: [fact('vegan')], episode: null };
  for (const goal of goals) {
    stub.script(goal, { execution_plan: [{ steps: [respondStep] }], final_answer: [async () => (await together, answer(`Found: ${goal}`))], memory_extraction: [extraction] });
  }
  stub.script('', {
    task_state_summary: Array.from({ length: 10 }, () => ({ CurrentGoal: 'vegan places', ActiveFlow: '', OpenLoops: [], ImportantFacts: ['The user is vegan'], LastDecision: 'found three' })),
  });
  const s = await startSession(userId, { window: 2, keepAfterCompression: 1 });
  for (const goal of goals) assert.equal((await s.send(goal)).kind, 'new_run');
  go();
  const summaries = await waitFor('the burst extracted', async () => {
    const got = await longterm.longterm.listSummaries(userId, s.sessionId);
    return got.length > 0 ? got : null;
  });
  const requests = goals.flatMap((g) => stub.requestsFor(g, 'memory_extraction'));
  assert.equal(requests.length, 1, 'one pass for the burst');
  for (const goal of goals) assert.match(lastMessage(requests[0]), new RegExp(goal), `the pass covers "${goal}"`);
  assert.equal(summaries.length, 1);
  assert.equal(summaries[0]?.provenance.sessionId, s.sessionId);
  assert.ok((summaries[0]?.provenance.messageIds.length ?? 0) >= 1, 'the summary names the messages it came from');
  await waitFor('the turns compressed into a TaskState', async () => stub.requestsFor('', 'task_state_summary').length > 0);
  await waitFor('the progress', async () => (await progressOf(userId)).extracted === 3);
  // The debounce is one timer per quiet stretch: the burst's later jobs moved its end, none cancelled a timer.
  const memoryEvents = (await env.client.workflow.getHandle(userMemoryWorkflowId(userId)).fetchHistory()).events ?? [];
  const firstPass = memoryEvents.findIndex((e) => e.activityTaskScheduledEventAttributes);
  assert.ok(firstPass > 0, 'the memory workflow ran its pass');
  assert.equal(memoryEvents.slice(0, firstPass).filter((e) => e.timerCanceledEventAttributes).length, 0, 'no debounce timer was cancelled');

  const promotion = {
    facts: [{ subject: 'user', predicate: 'likes', object: 'ice cream', text: 'The user likes ice cream.' }],
    episode: { goal: 'find vegan places', steps: ['bakery', 'pizzeria', 'ice cream'], outcome: 'found three', lessons: [] },
  };
  stub.script(`conversation ${s.sessionId}`, { memory_promotion: [promotion] });
  const ended = await s.send('/end');
  assert.match(ended.reply ?? '', /Ended the conversation/);
  await s.handle.result();
  await assert.rejects(new Sessions(env.client, threads.memory, env.config).send(s.sessionId, 'hello?'), SessionClosedError);
  const promoted = await waitFor('the promotion', async () => (await longterm.longterm.listFacts(userId, { q: 'ice cream' })).find((f) => f.text === 'The user likes ice cream.'));
  assert.equal(promoted.provenance.sessionId, s.sessionId);
  // What promotion reads: the conversation's summaries, its TaskState and the turns compression left.
  const promotionPrompt = lastMessage(stub.requestsFor(`conversation ${s.sessionId}`, 'memory_promotion')[0]);
  assert.match(promotionPrompt, /\(summary of an earlier part\) The user looked for vegan places/);
  assert.match(promotionPrompt, /\(noted\) The user is vegan/);
  const conversations = await longterm.longterm.listEpisodes(userId, {});
  assert.deepEqual(
    conversations.map((e) => [e.scope, e.goal]),
    [['conversation', 'find vegan places']],
  );

  // The next session of this user starts with the TaskState the last one left (seed 002's agent_task_state_<userId>).
  const next = await startSession(userId);
  const state = await waitFor('the carried TaskState', async () => readConversation((await threads.memory.view(next.threadId).catch(() => ({ chunks: [] }))).chunks, 10).taskState);
  assert.deepEqual(state.ImportantFacts, ['The user is vegan']);
  await next.handle.terminate();
  // Another user's new session starts with none.
  const other = await startSession('mp-cid');
  await waitFor('the other session opened', async () => (await threads.memory.view(other.threadId).catch(() => null)) !== null);
  assert.equal(readConversation((await threads.memory.view(other.threadId)).chunks, 10).taskState, null);
  await other.handle.terminate();
  assert.equal(stub.misses.length, 0);
});

test('an idle conversation ends by itself and is promoted; ending it again (DELETE) changes nothing', async () => {
  const userId = 'mp-dan';
  const goal = 'my favourite tea is sencha';
  stub.script(goal, { execution_plan: [{ steps: [respondStep] }], final_answer: [answer('Noted: sencha.')], memory_extraction: [{ summary: 'The user likes sencha.', facts: [], episode: null }] });
  // Idle from its first workflow task on: long enough for the first message to come on a loaded machine.
  const s = await startSession(userId, { idleTimeoutMs: 10_000 });
  stub.script(`conversation ${s.sessionId}`, {
    memory_promotion: [{ facts: [{ subject: 'user', predicate: 'favourite tea', object: 'sencha', text: "The user's favourite tea is sencha." }], episode: null }],
  });
  assert.equal((await s.send(goal)).kind, 'new_run');
  await s.handle.result();
  const promoted = await waitFor('the promotion', async () => (await longterm.longterm.listFacts(userId, {})).find((f) => f.object === 'sencha'));
  assert.equal(promoted.provenance.sessionId, s.sessionId);
  const again = await new Sessions(env.client, threads.memory, env.config).end(s.sessionId);
  assert.deepEqual(again, { sessionId: s.sessionId, status: 'closed', reply: null });
  assert.equal(stub.misses.length, 0);
});

test('an import with a model configured is extracted in the background: the response names the workflow, its progress counts the conversations', async () => {
  const userId = 'mp-eva';
  // The API of `npm start` with a model server configured: OPENAI_BASE_URL.
  const api = await startApi(loadConfig({ ...process.env, ...Object.fromEntries(Object.entries(env.config).filter(([, v]) => typeof v === 'string')), PORT: '0', OPENAI_BASE_URL: stub.url }), {
    logger: pino({ level: 'silent' }),
  });
  try {
    stub.script('imported conversation imp-garden', {
      memory_extraction: [{ summary: 'Eva talked about her garden.', facts: [{ subject: 'user', predicate: 'grows', object: 'tomatoes', text: 'The user grows tomatoes.' }], episode: null }],
    });
    stub.script('imported conversation imp-cat', {
      memory_extraction: [{ summary: 'Eva has a cat.', facts: [{ subject: 'user', predicate: 'has cat', object: 'Miso', text: "The user's cat is Miso." }], episode: null }],
    });
    const res = await fetch(`${api.url}/v1/users/${userId}/memory/import`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        conversations: [
          {
            sessionId: 'imp-garden',
            messages: [
              { id: 'g-1', role: 'user', text: 'I grow tomatoes on my balcony.' },
              { id: 'g-2', role: 'assistant', text: 'Lovely!' },
            ],
          },
          { sessionId: 'imp-cat', messages: [{ id: 'c-1', role: 'user', text: 'My cat is called Miso.' }] },
        ],
      }),
    });
    assert.equal(res.status, 201);
    const body = (await res.json()) as { imported: number; sessionIds: string[]; extraction?: { workflowId: string; uiUrl: string } };
    assert.equal(body.imported, 3);
    assert.equal(body.extraction?.workflowId, userMemoryWorkflowId(userId));
    assert.match(body.extraction?.uiUrl ?? '', /\/workflows\/memory-mp-eva/);
    const progress = await waitFor('both conversations extracted', async () => {
      const p = await progressOf(userId).catch(() => null);
      return p && p.imports.done === 2 ? p : null;
    });
    assert.deepEqual(progress.imports, { done: 2, total: 2 });
    assert.equal(progress.failed, 0);
    const tomatoes = (await longterm.longterm.listFacts(userId, {})).find((f) => f.object === 'tomatoes');
    assert.deepEqual(tomatoes?.provenance.messageIds, ['g-1', 'g-2'], 'the given message ids are the provenance');
    assert.deepEqual(
      (await longterm.longterm.listSummaries(userId, 'imp-cat')).map((s) => s.text),
      ['Eva has a cat.'],
    );
    assert.match(lastMessage(stub.requestsFor('imported conversation imp-garden', 'memory_extraction')[0]), /I grow tomatoes on my balcony/);
    assert.equal(stub.misses.length, 0);
  } finally {
    await api.close();
  }
});

test("a tree run's question and the person's reply reach its memory thread, so extraction makes a fact of what they said", async () => {
  const userId = 'mp-tree';
  const goal = 'plan a birthday dinner';
  stub.script(goal, {
    task_tree: [
      {
        name: 'Dinner',
        goal,
        subtasks: [
          { name: 'Guests', goal: 'Who comes' },
          { name: 'Table', goal: 'Book a table' },
        ],
      },
    ],
    react_action: [
      { thought: 'I need the guest', action: 'ask_user', question: 'Who is the dinner for?' },
      { thought: 'the guest is known', action: 'finish', result: 'dinner for Ana' },
      { thought: 'booked', action: 'finish', result: 'table for two at 8' },
    ],
    final_answer: [answer('A table for two at 8, for Ana.')],
    // The extraction model's facts are what the transcript says: what the person said must be in it.
    memory_extraction: [(req: StubRequest) => ({ summary: 'A birthday dinner was planned.', facts: plainFacts(lastMessage(req)), episode: null })],
  });
  const { runId } = await new Runs(env.client, env.config).start({ userId, goal, engine: 'tree' });
  await waitFor('the question', async () => ((await new Runs(env.client, env.config).get(runId)).status === 'waiting_user' ? true : null));
  await new Runs(env.client, env.config).reply(runId, 'My sister is Ana, she turns 30.');
  const state = (await env.client.workflow.getHandle(runId).result()) as ExecutionState;
  assert.equal(state.status, 'completed', state.lastError ?? '');
  const facts = await waitFor('the fact', async () => {
    const f = await longterm.longterm.listFacts(userId, {});
    return f.length > 0 ? f : null;
  });
  assert.deepEqual(
    facts.map((f) => f.text),
    ["The user's sister is Ana."],
  );
  const transcript = lastMessage(stub.requestsFor(goal, 'memory_extraction')[0]);
  assert.match(transcript, /Who is the dinner for\?[\s\S]*My sister is Ana/, 'the question, then the reply');
  assert.match(transcript, /task 1-1 finished: dinner for Ana/, "a task's result");
});

test('EPHEMERAL chunks of a conversation leave when it ends (seed 001); what is kept stays, and the drop is audited', async () => {
  const s = await startSession('mp-eve');
  await waitFor('the session thread', async () => (await threads.memory.view(s.threadId).catch(() => null)) !== null);
  const meta = { origin: 'user' as const, reason: 'a live snapshot for the test', trigger: 'test' };
  await threads.memory.apply(s.threadId, { op: 'add', chunks: [{ type: 'environment', content: { kind: 'text', text: 'balance right now: 12 EUR' }, retention: 'EPHEMERAL' }] }, meta);
  await threads.memory.apply(s.threadId, { op: 'add', chunks: [{ type: 'environment', content: { kind: 'text', text: 'the user prefers euros' }, retention: 'CRITICAL' }] }, meta);
  const ended = await s.send('/end');
  assert.match(ended.reply ?? '', /Ended the conversation/);
  await s.handle.result();
  const { chunks } = await threads.memory.view(s.threadId);
  const texts = chunks.map((c) => (c.content.kind === 'text' ? c.content.text : ''));
  assert.ok(!texts.includes('balance right now: 12 EUR'), 'the EPHEMERAL chunk is gone');
  assert.ok(texts.includes('the user prefers euros'), 'the rest stays');
  const audit = await threads.memory.audit(s.threadId, { kind: 'delete' });
  assert.ok(
    audit.some((op) => op.origin === 'system' && /conversation ended: \/end/.test(op.reason)),
    'the drop is in the audit, said why',
  );
});

test("a busy user's memory workflow continues as new at its settings' history length", async () => {
  const userId = 'mp-busy';
  const workflowId = userMemoryWorkflowId(userId);
  const settings = { debounceMs: 10, maxDelayMs: 50, idleMs: 60_000, handOverAfterEvents: 30 };
  const handle = await env.client.workflow.signalWithStart(USER_MEMORY_WORKFLOW_TYPE, {
    taskQueue: env.config.TASK_QUEUE,
    workflowId,
    args: [{ userId, settings }],
    signal: memoryJobSignal,
    signalArgs: [{ kind: 'import', key: 'job-0', sessionIds: [], at: new Date().toISOString() }],
  });
  const firstRunId = handle.signaledRunId;
  // Jobs one at a time, each its own batch (an import of no conversation: no model call).
  for (let i = 1; i <= 6; i++) {
    await env.client.workflow.getHandle(workflowId).signal(memoryJobSignal, { kind: 'import', key: `job-${i}`, sessionIds: [], at: new Date().toISOString() });
    await waitFor(`job ${i} done`, async () => (await progressOf(userId)).pending === 0);
  }
  await waitFor('a continue-as-new', async () => (await env.client.workflow.getHandle(workflowId).describe()).runId !== firstRunId);
  const first = await env.client.workflow.getHandle(workflowId, firstRunId).describe();
  assert.equal(first.status.name, 'CONTINUED_AS_NEW');
  assert.ok(first.historyLength <= 30 + 15, `the first run handed over near 30 events (${first.historyLength})`);
  const current = env.client.workflow.getHandle(workflowId);
  assert.equal((await current.describe()).status.name, 'RUNNING');
  await current.terminate('test done');
});
