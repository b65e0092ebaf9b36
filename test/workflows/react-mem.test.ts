/**
 * react_mem (seed 002) on the real server: a fact the agent stores in one run is in the prompt of
 * the same user's next run (and only that user's), the memory tools work from plan steps, and
 * under MEMORY_MANAGER=react neither the tools nor the recalled memory exist.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { ExecutionState } from '../../src/planning/execution-state';
import { openLongTerm } from '../../src/store/longterm/open-longterm';
import { openMemory } from '../../src/store/open-memory';
import { Runs } from '../../src/temporal/runs';
import { readConversation, taskStateChunk } from '../../src/sessions/session-chunks';
import { Sessions } from '../../src/temporal/sessions';
import { answer, cont, respondStep, toolStep } from '../helpers/scenarios';
import { StubModelServer } from '../helpers/stub-model-server';
import { startTestEnv, stubProvider, testConfig, waitFor, type TestEnv } from '../helpers/temporal-env';

const stub = new StubModelServer();
let mem: TestEnv;
let plain: TestEnv;

before(async () => {
  await stub.start();
  mem = await startTestEnv({ provider: stubProvider(stub.url), config: testConfig({ MEMORY_MANAGER: 'react_mem' }) });
  plain = await startTestEnv({ provider: stubProvider(stub.url), config: testConfig({ MEMORY_MANAGER: 'react' }) });
});
after(async () => {
  await mem?.stop();
  await plain?.stop();
  await stub.stop();
});

const promptOf = (goal: string, name: string, i = 0) =>
  stub
    .requestsFor(goal, name)
    [i]?.messages.map((m) => m.content)
    .join('\n') ?? '';
async function run(env: TestEnv, userId: string, goal: string): Promise<ExecutionState> {
  const { runId } = await new Runs(env.client, env.config).start({ userId, goal });
  return (await env.client.workflow.getHandle(runId).result()) as ExecutionState;
}

test('a fact stored in one run is recalled into the next run of the same user, never of another', async () => {
  const fact = { subject: 'user', predicate: 'lives in', object: 'Lisbon', text: 'The user lives in Lisbon' };
  stub.script('remember that I live in Lisbon', {
    execution_plan: [{ steps: [toolStep('store_fact', fact, 'remember where the user lives'), respondStep] }],
    replan_decision: [cont],
    final_answer: [answer('I will remember that.')],
  });
  const first = await run(mem, 'rm-alice', 'remember that I live in Lisbon');
  assert.equal(first.status, 'completed');
  assert.match(first.observations[0]?.content ?? '', /"outcome":"added"/);

  const goal = 'what is the weather where I live in Lisbon';
  stub.script(goal, {
    execution_plan: [{ steps: [toolStep('retrieve_facts', { query: 'where does the user live' }), respondStep] }],
    replan_decision: [cont],
    final_answer: [answer('Sunny in Lisbon.')],
  });
  const second = await run(mem, 'rm-alice', goal);
  assert.equal(second.status, 'completed');
  const plan = promptOf(goal, 'execution_plan');
  assert.match(plan, /What you know about the user[\s\S]*The user lives in Lisbon/);
  // Once recalled at the start, once more as the result of retrieve_facts.
  assert.equal(promptOf(goal, 'replan_decision').split('The user lives in Lisbon (since').length - 1, 2, 'retrieve_facts finds it too');
  // Both reads are in the user's long-term audit, the agent's, with the run (seed 001: every read audited).
  const longterm = await openLongTerm(mem.config);
  try {
    const reads = await waitFor('the run’s long-term reads in the audit', async () => {
      const entries = await longterm.longterm.auditLog('rm-alice', { kind: 'read', runId: second.runId });
      return entries.some((e) => e.action === 'search') && entries.some((e) => e.action === 'context') ? entries : undefined;
    });
    const recall = reads.find((e) => e.action === 'context');
    assert.equal(recall?.origin, 'agent');
    assert.equal(recall?.reason, 'recall at the start of the run');
    assert.equal(recall?.targetIds.length, 1, 'the recalled fact is named');
    assert.match(reads.find((e) => e.action === 'search')?.reason ?? '', /^retrieve_facts \(step s1\)/);
  } finally {
    await longterm.close();
  }

  // Another user asking the same thing knows nothing of it, by prompt or by tool.
  const other = 'what is the weather where I live in Lisbon?';
  stub.script(other, {
    execution_plan: [{ steps: [toolStep('retrieve_facts', { query: 'where does the user live' }), respondStep] }],
    replan_decision: [cont],
    final_answer: [answer('Where do you live?')],
  });
  const third = await run(mem, 'rm-bob', other);
  assert.doesNotMatch(promptOf(other, 'execution_plan'), /lives in Lisbon/);
  assert.match(third.observations[0]?.content ?? '', /"facts":\[\]/);
});

test('record_episode then recall_episodes: a similar goal finds the earlier task and its lessons', async () => {
  const goal = 'plan a trip to Porto';
  stub.script(goal, {
    execution_plan: [
      {
        steps: [
          toolStep('record_episode', { goal: 'plan a trip to Porto by train', steps: ['compared trains', 'booked'], outcome: 'booked the 9:00 train', lessons: ['book trains a week ahead'] }),
          toolStep('recall_episodes', { query: 'trip to Porto' }),
          respondStep,
        ],
      },
    ],
    replan_decision: [cont, cont],
    final_answer: [answer('done')],
  });
  const state = await run(mem, 'rm-carol', goal);
  assert.equal(state.status, 'completed');
  // (Observations in the state are heads; the whole result is in the run's memory, which the next prompt shows.)
  assert.match(promptOf(goal, 'replan_decision', 1), /recall_episodes[\s\S]*book trains a week ahead/);
});

test('MEMORY_MANAGER=react: no memory tools, nothing recalled', async () => {
  const goal = 'remember that I live in Lisbon (react)';
  stub.script(goal, {
    execution_plan: [{ steps: [toolStep('store_fact', { subject: 'u', predicate: 'p', object: 'o', text: 't' }), respondStep] }],
    replan_decision: [cont],
    final_answer: [answer('ok')],
  });
  const state = await run(plain, 'rm-alice', goal);
  const plan = promptOf(goal, 'execution_plan');
  assert.doesNotMatch(plan, /retrieve_facts|store_fact|What you know about the user/);
  assert.match(state.observations[0]?.content ?? '', /unknown tool "store_fact"/);
});

test('session messages join the user recall memory as they happen: searchable by text, under the same short ids', async () => {
  const threads = await openMemory(mem.config);
  const longterm = await openLongTerm(mem.config);
  try {
    const sessions = new Sessions(mem.client, threads.memory, mem.config);
    const { sessionId } = await sessions.create({ userId: 'rm-dora' });
    const text = 'my sourdough starter is called Clint Yeastwood';
    stub.script(text, { execution_plan: [{ steps: [respondStep] }], final_answer: [answer('What a name for a starter!')] });
    const outcome = await sessions.send(sessionId, text);
    assert.equal(outcome.kind, 'new_run');
    const found = await waitFor('the messages in recall memory', async () => {
      const hits = await longterm.longterm.search('rm-dora', { query: 'what is the sourdough starter called', kinds: ['message'], k: 5 });
      return hits.length >= 2 ? hits : null;
    });
    assert.match(found[0]?.text ?? '', /Clint Yeastwood/);
    assert.equal(found[0]?.source.sessionId, sessionId);
    const byId = await longterm.longterm.getMessage('rm-dora', found[0]?.id ?? '');
    assert.equal(byId?.text, text);
    assert.ok(
      found.some((h) => /What a name for a starter/.test(h.text)),
      'the answer too',
    );
    assert.deepEqual(await longterm.longterm.search('rm-bob', { query: 'sourdough starter', kinds: ['message'] }), []);
  } finally {
    await threads.close();
    await longterm.close();
  }
});

test("a tree run recalls long-term memory for each task as it comes (seed 003's observe phase), not only for the goal", async () => {
  const longterm = await openLongTerm(mem.config);
  const meta = { origin: 'person' as const, reason: 'test setup' };
  try {
    await longterm.longterm.recordFact('rm-tree', { subject: 'user', predicate: 'sister', object: 'Ana', text: "The user's sister Ana is vegetarian" }, { messageIds: [] }, meta);
    await longterm.longterm.recordFact('rm-tree', { subject: 'user', predicate: 'car', object: 'red van', text: 'The user drives a red van' }, { messageIds: [] }, meta);
  } finally {
    await longterm.close();
  }
  const goal = 'organise the weekend';
  stub.script(goal, {
    task_tree: [
      {
        name: 'Weekend',
        goal,
        subtasks: [
          { name: 'Transport', goal: 'Decide how to travel by car' },
          { name: 'Dinner', goal: 'Choose a restaurant my sister likes' },
        ],
      },
    ],
    react_action: [
      { thought: 'the van', action: 'finish', result: 'we take the van' },
      { thought: 'vegetarian', action: 'finish', result: 'a vegetarian place' },
    ],
    final_answer: [answer('Van, then a vegetarian dinner.')],
  });
  const { runId } = await new Runs(mem.client, mem.config).start({ userId: 'rm-tree', goal, engine: 'tree' });
  const state = (await mem.client.workflow.getHandle(runId).result()) as ExecutionState;
  assert.equal(state.status, 'completed', state.lastError ?? '');
  const [first, second] = stub.requestsFor(goal, 'react_action').map((r) => r.messages.at(-1)?.content ?? '');
  const section = (prompt: string | undefined) => /What long-term memory holds for this task:\n([\s\S]*?)(\n\n|$)/.exec(prompt ?? '')?.[1] ?? '';
  // Each task's recall leads with what bears on it.
  assert.match(section(first).split('\n')[0] ?? '', /red van/, 'the transport task recalls the car first');
  assert.match(section(second).split('\n')[0] ?? '', /sister Ana is vegetarian/, 'the dinner task recalls the sister first');
});

test("retrieve_message finds a message of the user's earlier session by its id (recall memory), never another user's", async () => {
  const threads = await openMemory(mem.config);
  const longterm = await openLongTerm(mem.config);
  try {
    const sessions = new Sessions(mem.client, threads.memory, mem.config);
    const earlier = await sessions.create({ userId: 'rm-erin' });
    const said = 'the locker code at the gym is 4711';
    stub.script(said, { execution_plan: [{ steps: [respondStep] }], final_answer: [answer('Noted the locker code.')] });
    await sessions.send(earlier.sessionId, said);
    const [hit] = await waitFor('the message in recall memory', async () => {
      const hits = await longterm.longterm.search('rm-erin', { query: 'locker code gym', kinds: ['message'], k: 1 });
      return hits[0]?.text === said ? hits : null;
    });
    const messageId = hit?.id ?? '';
    assert.match(messageId, /^msg_/);

    // A later session's run (another thread altogether) asks for it by id; another user's run cannot.
    const later = await sessions.create({ userId: 'rm-erin' });
    const goal = 'what did I say the locker code was';
    stub.script(goal, { execution_plan: [{ steps: [toolStep('retrieve_message', { messageId }), respondStep] }], replan_decision: [cont], final_answer: [answer('4711.')] });
    const asked = await sessions.send(later.sessionId, goal);
    const found = (await mem.client.workflow.getHandle(asked.runId ?? '').result()) as ExecutionState;
    assert.match(found.observations[0]?.content ?? '', /"content":"the locker code at the gym is 4711"/);
    assert.match(found.observations[0]?.content ?? '', /"role":"user"/);

    const stranger = 'fetch that message please';
    stub.script(stranger, { execution_plan: [{ steps: [toolStep('retrieve_message', { messageId }), respondStep] }], replan_decision: [cont], final_answer: [answer('Not found.')] });
    const theirs = await run(mem, 'rm-frank', stranger);
    assert.equal(theirs.observations[0]?.kind, 'error');
    assert.match(theirs.observations[0]?.content ?? '', /no message "msg_/);
  } finally {
    await threads.close();
    await longterm.close();
  }
});

test("MEMORY_MANAGER=react keeps the TaskState per user too (seed 000: keyed by userID): a user's next session starts with what their last one left", async () => {
  const threads = await openMemory(plain.config);
  try {
    const sessions = new Sessions(plain.client, threads.memory, plain.config);
    const first = await sessions.create({ userId: 'rp-gus' });
    const taskState = {
      CurrentGoal: 'plan the move',
      ActiveFlow: 'moving',
      OpenLoops: ['book the van'],
      ImportantFacts: ['The user moves to Porto in May'],
      LastDecision: 'movers on the 3rd',
      UpdatedAt: new Date().toISOString(),
    };
    await threads.memory.apply(
      first.threadId,
      { op: 'add', chunks: [taskStateChunk(first.sessionId, taskState)] },
      { origin: 'user', reason: 'test: the TaskState compression would write', trigger: 'test' },
    );
    await sessions.end(first.sessionId);
    const next = await sessions.create({ userId: 'rp-gus' });
    const carried = await waitFor('the carried TaskState', async () => readConversation((await threads.memory.view(next.threadId)).chunks, 10).taskState);
    assert.deepEqual(carried.ImportantFacts, ['The user moves to Porto in May']);
    const stranger = await sessions.create({ userId: 'rp-hal' });
    await waitFor('the stranger session opened', async () => (await threads.memory.view(stranger.threadId).catch(() => null)) !== null);
    assert.equal(readConversation((await threads.memory.view(stranger.threadId)).chunks, 10).taskState, null);
  } finally {
    await threads.close();
  }
});
