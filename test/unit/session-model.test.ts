/** The session layer's pure model: routing, confirmations, history window, reports, TaskState rendering and chunks. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DemoProvider } from '../../src/llm/demo-provider';
import { buildMessages, replyJsonSchema } from '../../src/calls/registry';
import { initialState } from '../../src/planning/execution-state';
import { planCompression, readConversation, readTaskState, taskStateChunk, turnChunk } from '../../src/sessions/session-chunks';
import {
  confirmation,
  emptyTaskState,
  estimateTokens,
  isConfirmationQuestion,
  isRetryPhrase,
  needsCompression,
  needsJudgement,
  routeMessage,
  waitingNewestFirst,
  type SessionRun,
  type TaskState,
  type Turn,
} from '../../src/sessions/session-model';
import {
  appendTurns,
  applyReport,
  endingTurnKey,
  markReplied,
  reportTurn,
  shownTurns,
  newSessionRun,
  pruneRuns,
  renderSessionContext,
  renderSessionState,
  renderTaskState,
} from '../../src/sessions/session-state';
import { demoTaskState, taskStateSummaryContext, taskStateSummaryMessages } from '../../src/calls/task-state-summary';
import { CLARIFY } from '../../src/calls/demo-intents';
import { demoMessageRoute, messageRouteMessages } from '../../src/calls/message-route';
import type { Chunk, ChunkInput } from '../../src/memory/model';

const T0 = new Date('2025-01-01T00:00:00.000Z');
const run = (runId: string, status: SessionRun['status'], extra: Partial<SessionRun> = {}): SessionRun => ({ ...newSessionRun(runId, `goal of ${runId}`, T0), status, ...extra });
const turn = (role: Turn['role'], text: string): Turn => ({ role, text, at: T0.toISOString() });

test('routing: commands first, whatever else is waiting', () => {
  const runs = [run('r1', 'waiting_user', { askedAt: 'a' })];
  assert.deepEqual(routeMessage(runs, '/clear'), { kind: 'command', command: '/clear', text: '/clear' });
  assert.deepEqual(routeMessage(runs, '  /STATE please'), { kind: 'command', command: '/state', text: '/STATE please' });
  assert.deepEqual(routeMessage([], '/nope'), { kind: 'command', command: 'unknown', text: '/nope' });
});

test('routing while runs wait: a message is judged unless it is a reply by rule; a judgement makes it a new request or picks the run', () => {
  const runs = [
    run('r1', 'waiting_user', { askedAt: '2025-01-01T00:00:01Z', question: 'Which city?' }),
    run('r2', 'waiting_user', { askedAt: '2025-01-01T00:00:02Z', question: 'How many?' }),
    run('r3', 'running'),
  ];
  assert.equal(needsJudgement(runs, 'what is 12*7'), true);
  assert.equal(needsJudgement([run('r3', 'running')], 'what is 12*7'), false, 'nothing waits: a new run by rule');
  assert.equal(needsJudgement(runs, '/state'), false);
  assert.equal(needsJudgement(runs, '@r1 Lisbon'), false, 'addressed to a waiting run');
  assert.equal(needsJudgement(runs, '@r9 Lisbon'), true, 'an address naming no waiting run is just text');
  const confirm = [run('r1', 'waiting_user_confirmation', { question: 'Shall I send it?' })];
  assert.equal(needsJudgement(confirm, 'ok'), false, 'a yes/no answer to a yes/no question');
  assert.equal(needsJudgement(confirm, 'what time is it'), true);
  assert.deepEqual(
    waitingNewestFirst(runs).map((r) => r.runId),
    ['r2', 'r1'],
  );

  assert.deepEqual(routeMessage(runs, 'what is 12*7', { route: 'new_request' }), { kind: 'new_run', goal: 'what is 12*7' });
  assert.deepEqual(routeMessage(runs, 'Lisbon', { route: 'reply', runId: 'r1' }), { kind: 'reply', runId: 'r1', text: 'Lisbon' });
  assert.deepEqual(routeMessage(runs, 'Lisbon', { route: 'reply', runId: 'nope' }), { kind: 'reply', runId: 'r2', text: 'Lisbon' }, 'an unknown run: the newest question');
  // A judgement cannot overrule the rules: an addressed message stays that run's reply, a command a command.
  assert.deepEqual(routeMessage(runs, '@r1 Lisbon', { route: 'new_request' }), { kind: 'reply', runId: 'r1', text: 'Lisbon' });
  assert.equal(routeMessage(runs, '/help', { route: 'new_request' }).kind, 'command');
  assert.deepEqual(routeMessage(confirm, 'ok', { route: 'new_request' }), { kind: 'reply', runId: 'r1', text: 'yes' });
});

test('message_route: the prompt names the message and every waiting question; the demo model tells a request it can do from an answer', () => {
  const waiting = [
    { runId: 'r2', goal: 'book a table', question: 'For how many people?' },
    { runId: 'r1', goal: 'plan a trip', question: 'Which city?' },
  ];
  const prompt = messageRouteMessages({ call: 'message_route', text: 'what is 12*7', waiting })
    .map((m) => m.content)
    .join('\n');
  assert.match(prompt, /^Goal: what is 12\*7$/m);
  assert.match(prompt, /runId r2 — task: book a table\n {3}question: For how many people\?/);
  assert.match(prompt, /runId r1 — task: plan a trip/);
  assert.deepEqual(demoMessageRoute({ call: 'message_route', text: 'what is 12*7', waiting }), { route: 'new_request' });
  assert.deepEqual(demoMessageRoute({ call: 'message_route', text: 'four of us', waiting }), { route: 'reply', runId: 'r2' });
  // Its own "what would you like me to do?" is answered by a request.
  assert.deepEqual(demoMessageRoute({ call: 'message_route', text: 'what is 12*7', waiting: [{ runId: 'r3', goal: 'hm', question: CLARIFY }] }), { route: 'reply', runId: 'r3' });
});

test('routing: a waiting run takes the message; the most recently asked one when several wait, or the one addressed', () => {
  const runs = [run('r1', 'waiting_user', { askedAt: '2025-01-01T00:00:01Z' }), run('r2', 'waiting_user', { askedAt: '2025-01-01T00:00:02Z' }), run('r3', 'running')];
  assert.deepEqual(routeMessage(runs, 'the blue one'), { kind: 'reply', runId: 'r2', text: 'the blue one' });
  assert.deepEqual(routeMessage(runs, '@r1 the red one'), { kind: 'reply', runId: 'r1', text: 'the red one' });
  // An address naming no waiting run is just text for the latest question.
  assert.deepEqual(routeMessage(runs, '@r3 hello'), { kind: 'reply', runId: 'r2', text: '@r3 hello' });
  // "continue" while something waits is a reply, not a retry (seed 000's resume rule).
  assert.equal(routeMessage([...runs, run('r0', 'failed')], 'continue').kind, 'reply');
});

test('routing: short confirmations are normalized only for yes/no questions', () => {
  const confirm = [run('r1', 'waiting_user_confirmation', { askedAt: 'a' })];
  assert.deepEqual(routeMessage(confirm, 'OK!'), { kind: 'reply', runId: 'r1', text: 'yes' });
  assert.deepEqual(routeMessage(confirm, '继续'), { kind: 'reply', runId: 'r1', text: 'yes' });
  assert.deepEqual(routeMessage(confirm, 'nope'), { kind: 'reply', runId: 'r1', text: 'no' });
  assert.deepEqual(routeMessage(confirm, 'yes, but only the first'), { kind: 'reply', runId: 'r1', text: 'yes, but only the first' });
  const open = [run('r1', 'waiting_user', { askedAt: 'a' })];
  assert.deepEqual(routeMessage(open, 'ok'), { kind: 'reply', runId: 'r1', text: 'ok' });
  assert.equal(confirmation('好的'), 'yes');
  assert.equal(confirmation('取消'), 'no');
  assert.equal(confirmation('maybe'), null);
});

test('routing: retry phrases retry the latest failed or cancelled run when nothing waits; else a new run', () => {
  const runs = [run('r1', 'failed'), run('r2', 'completed'), run('r3', 'cancelled'), run('r4', 'running')];
  assert.deepEqual(routeMessage(runs, 'try again'), { kind: 'retry', runId: 'r3', goal: 'goal of r3' });
  assert.deepEqual(routeMessage(runs, '再试'), { kind: 'retry', runId: 'r3', goal: 'goal of r3' });
  assert.deepEqual(routeMessage([run('r2', 'completed')], 'retry'), { kind: 'nothing_to_retry' });
  assert.deepEqual(routeMessage(runs, 'what is 2+2?'), { kind: 'new_run', goal: 'what is 2+2?' });
  assert.ok(isRetryPhrase('Try again.'));
  assert.ok(!isRetryPhrase('try again with 3 instead'));
});

test('yes/no questions are recognized in English and Chinese', () => {
  for (const q of ['Should I send it?', 'Proceed with the order? (yes/no)', 'Do you want the red one?', '要继续吗？', '是否确认']) assert.ok(isConfirmationQuestion(q), q);
  for (const q of ['Which exchange?', 'How many people?', 'Should I use A or B']) assert.ok(!isConfirmationQuestion(q), q);
});

test('history: the window keeps the most recent turns; compression triggers on count or tokens', () => {
  const history = Array.from({ length: 8 }, (_, i) => turn(i % 2 ? 'assistant' : 'user', `t${i}`));
  const sizes = history.map((t) => estimateTokens(t.text));
  assert.equal(needsCompression(sizes, { window: 8, tokenThreshold: 1000 }), false);
  assert.equal(needsCompression(sizes, { window: 7, tokenThreshold: 1000 }), true);
  assert.equal(needsCompression([estimateTokens('x'.repeat(4004))], { window: 8, tokenThreshold: 1000 }), true);
  assert.deepEqual(
    appendTurns(history, [turn('user', 'new')], 4).map((t) => t.text),
    ['t5', 't6', 't7', 'new'],
  );
});

test('reports: a yes/no question becomes waiting_user_confirmation; answers and failures become turns; unknown runs change nothing', () => {
  const runs = [run('r1', 'planning'), run('r2', 'running')];
  const asked = applyReport(runs, { runId: 'r1', status: 'waiting_user', question: 'Shall I book it?', finalAnswer: null, lastError: null }, T0);
  assert.equal(asked.runs[0]?.status, 'waiting_user_confirmation');
  assert.equal(asked.runs[0]?.askedAt, T0.toISOString());
  assert.deepEqual([asked.turn?.role, asked.turn?.text, asked.turn?.runId], ['assistant', 'Shall I book it?', 'r1']);
  const open = applyReport(runs, { runId: 'r1', status: 'waiting_user', question: 'Which day?', finalAnswer: null, lastError: null }, T0);
  assert.equal(open.runs[0]?.status, 'waiting_user');
  assert.equal(markReplied(open.runs, 'r1')[0]?.status, 'running');

  const done = applyReport(runs, { runId: 'r2', status: 'completed', question: null, finalAnswer: 'Done.', lastError: null }, T0);
  assert.deepEqual([done.runs[1]?.status, done.runs[1]?.finalAnswer, done.turn?.text], ['completed', 'Done.', 'Done.']);
  const failed = applyReport(runs, { runId: 'r2', status: 'failed', question: null, finalAnswer: null, lastError: 'model down' }, T0);
  assert.match(failed.turn?.text ?? '', /failed: model down.*try again/);
  const cancelled = applyReport(runs, { runId: 'r2', status: 'cancelled', question: null, finalAnswer: null, lastError: null }, T0);
  assert.deepEqual([cancelled.runs[1]?.status, cancelled.turn], ['cancelled', null]);
  assert.deepEqual(applyReport(runs, { runId: 'gone', status: 'completed', question: null, finalAnswer: 'x', lastError: null }, T0), { runs, turn: null });
  // An ending sent again (its call retried after a crash) adds no second answer.
  assert.deepEqual(applyReport(done.runs, { runId: 'r2', status: 'completed', question: null, finalAnswer: 'Done.', lastError: null }, T0), { runs: done.runs, turn: null });
});

test('the turn of a run ending has one key whoever adds it (the closing call or the session); questions have none', () => {
  const ending = { runId: 'r2', status: 'completed' as const, question: null, finalAnswer: 'Done.', lastError: null };
  assert.deepEqual(reportTurn(ending, T0.toISOString()), { role: 'assistant', text: 'Done.', at: T0.toISOString(), runId: 'r2' });
  assert.equal(endingTurnKey(ending), 'ending:r2:completed');
  assert.equal(endingTurnKey({ ...ending, status: 'failed', finalAnswer: null, lastError: 'x' }), 'ending:r2:failed');
  assert.equal(endingTurnKey({ ...ending, status: 'waiting_user', question: 'Which day?' }), undefined);
  assert.equal(reportTurn({ ...ending, status: 'cancelled' }, T0.toISOString()), null);
});

test("a view shows a run's answer only with its ending: not while the session still lists the run as working", () => {
  const turns = [turn('user', 'q1'), { ...turn('assistant', 'a1'), runId: 'r1' }, turn('user', 'q2'), { ...turn('assistant', 'which day?'), runId: 'r2' }, { ...turn('assistant', 'a3'), runId: 'r3' }];
  const runs = [run('r1', 'running'), run('r2', 'waiting_user'), run('r3', 'completed')];
  assert.deepEqual(
    shownTurns(turns, runs).map((t) => t.text),
    ['q1', 'q2', 'which day?', 'a3'],
  );
  assert.deepEqual(
    shownTurns(turns, [run('r1', 'completed'), ...runs.slice(1)]).map((t) => t.text),
    ['q1', 'a1', 'q2', 'which day?', 'a3'],
  );
  // A run the session no longer lists (pruned, cleared) hides nothing.
  assert.equal(shownTurns(turns, []).length, 5);
  // A run working again after the person's reply keeps the question it asked; only what it said after the reply waits.
  const resumed = [
    { ...turn('user', 'book it'), runId: 'r4' },
    { ...turn('assistant', 'which day?'), runId: 'r4' },
    { ...turn('user', 'monday'), runId: 'r4' },
    { ...turn('assistant', 'booked'), runId: 'r4' },
  ];
  assert.deepEqual(
    shownTurns(resumed, [run('r4', 'running')]).map((t) => t.text),
    ['book it', 'which day?', 'monday'],
  );
});

test('pruneRuns forgets old finished runs and keeps every open one', () => {
  const runs = [run('f1', 'completed'), run('o1', 'waiting_user'), run('f2', 'failed'), run('f3', 'cancelled'), run('o2', 'running')];
  assert.deepEqual(
    pruneRuns(runs, 1).map((r) => r.runId),
    ['o1', 'f3', 'o2'],
  );
});

const task: TaskState = {
  CurrentGoal: 'plan a trip',
  ActiveFlow: 'booking',
  OpenLoops: ['pick a hotel'],
  ImportantFacts: ['my account number is 12345'],
  LastDecision: 'Rome',
  UpdatedAt: T0.toISOString(),
};

test('TaskState and recent turns render into the planner prompt after the goal line', () => {
  assert.equal(renderTaskState(emptyTaskState()), null);
  assert.equal(renderSessionContext({ taskState: emptyTaskState(), recentTurns: [] }), null);
  const state = initialState({ runId: 'run-1', userId: 'u', goal: 'book the hotel', model: 'm', sessionThreadId: 'thread_s' }, T0);
  assert.equal(state.sessionThreadId, 'thread_s');
  const session = {
    taskState: task,
    recentTurns: [{ ...turn('user', 'book the\nhotel'), messageId: 'msg_aaaaaaaaaa' }, turn('assistant', 'Which one?')],
    earlier: [{ messageId: 'msg_bbbbbbbbbb', role: 'user' as const, preview: 'my passport number is X1' }],
  };
  const messages = buildMessages({ call: 'execution_plan', state, tools: [], maxSteps: 5, maxDepth: 1, session });
  const user = messages.at(-1)?.content ?? '';
  // Each turn carries its short id, and turns compressed away are still named by theirs: retrieve_message takes them.
  assert.match(
    user,
    /^Goal: book the hotel\n\nEarlier turns, folded into the task state \(retrieve_message fetches one's full text by its id\):\n\[msg_bbbbbbbbbb\] User: my passport number is X1\n\nConversation so far \(oldest first\):\n\[msg_aaaaaaaaaa\] User: book the hotel\nAssistant: Which one\?\n\nTask state/,
  );
  assert.match(user, /Task state[^\n]*\nCurrentGoal: plan a trip\nActiveFlow: booking\nOpenLoops:\n  - pick a hotel\nImportantFacts:\n  - my account number is 12345\nLastDecision: Rome/);
  // Runs outside sessions keep their prompts and their state's shape.
  const plain = initialState({ runId: 'run-2', userId: 'u', goal: 'g', model: 'm' }, T0);
  assert.equal('sessionThreadId' in plain, false);
  assert.doesNotMatch(buildMessages({ call: 'execution_plan', state: plain, tools: [], maxSteps: 5, maxDepth: 1 }).at(-1)?.content ?? '', /Conversation so far|Task state/);
});

test('/state shows turns, task state and runs', () => {
  const text = renderSessionState({ chatHistory: [turn('user', 'hi')], taskState: task, runs: [run('r1', 'waiting_user', { question: 'Which day?' })], turns: 7 });
  assert.match(text, /Messages so far: 7/);
  assert.match(text, /User: hi/);
  assert.match(text, /ImportantFacts:\n  - my account number is 12345/);
  assert.match(text, /r1 \[waiting_user\] goal of r1 — asks: Which day\?/);
  assert.match(renderSessionState({ chatHistory: [], taskState: emptyTaskState(), runs: [], turns: 0 }), /Recent turns \(0\):\n\(empty\)[^]*Task state:\n\(empty\)[^]*Runs \(0\):\n\(none\)/);
});

/** A stored chunk from an input, as the reducer would make it. */
const stored = (input: ChunkInput, id: string): Chunk => ({
  id,
  type: input.type,
  content: input.content,
  priority: input.priority ?? 50,
  retention: input.retention ?? 'BATCH_COMPRESSIBLE',
  agentModifiable: input.agentModifiable ?? true,
  parentChunkId: null,
  provenance: input.provenance ?? {},
  messageId: input.messageId ?? null,
  tokens: 1,
  createdAt: T0.toISOString(),
});

test('session chunks: turns as user/response chunks, TaskState as one CRITICAL system-only workflow chunk, read back', () => {
  const ts = taskStateChunk('s1', task);
  assert.deepEqual([ts.type, ts.retention, ts.agentModifiable], ['workflow', 'CRITICAL', false]);
  const chunks = [
    stored({ type: 'agent', content: { kind: 'json', data: { session: 's1' } } }, 'c0'),
    stored(turnChunk('s1', turn('user', 'one'), 'msg_1'), 'c1'),
    stored(ts, 'c2'),
    stored(turnChunk('s1', { ...turn('assistant', 'two'), runId: 'r1' }, 'msg_2'), 'c3'),
    stored(turnChunk('s1', turn('user', 'three'), 'msg_3'), 'c4'),
  ];
  assert.equal(chunks[3]?.type, 'response');
  assert.deepEqual(chunks[3]?.provenance, { sessionId: 's1', runId: 'r1' });
  assert.deepEqual(readTaskState(chunks[2]!), task);
  assert.equal(readTaskState(chunks[1]!), null);
  assert.deepEqual(readConversation(chunks, 2), {
    taskState: task,
    recentTurns: [
      { role: 'assistant', text: 'two', at: T0.toISOString(), messageId: 'msg_2', runId: 'r1' },
      { role: 'user', text: 'three', at: T0.toISOString(), messageId: 'msg_3' },
    ],
    earlier: [],
  });
  // Compression folds all but the last `keep` turns and the TaskState chunk into one new TaskState chunk naming those turns.
  const plan = planCompression('s1', chunks, 1);
  assert.deepEqual(plan?.previous, task);
  assert.deepEqual(
    plan?.older.map((t) => t.text),
    ['one', 'two'],
  );
  assert.deepEqual(plan?.replaced, ['c2', 'c1', 'c3']);
  assert.deepEqual(
    plan?.kept.map((t) => t.text),
    ['three'],
  );
  const next = { ...task, ImportantFacts: ['folded'] };
  const after = [chunks[0]!, stored(plan!.chunk(next), 'c5'), chunks[4]!];
  assert.deepEqual(readConversation(after, 5), {
    taskState: next,
    recentTurns: [{ role: 'user', text: 'three', at: T0.toISOString(), messageId: 'msg_3' }],
    earlier: [
      { messageId: 'msg_1', role: 'user', preview: 'one' },
      { messageId: 'msg_2', role: 'assistant', preview: 'two' },
    ],
  });
  assert.equal(planCompression('s1', after, 1), null, 'nothing more to fold');
  const again = planCompression('s1', [...after, stored(turnChunk('s1', turn('assistant', 'four'), 'msg_4'), 'c6')], 1);
  assert.deepEqual(again?.replaced, ['c5', 'c4'], 'the previous TaskState chunk is replaced, and the turns it named are named again');
  assert.deepEqual(
    readConversation([stored(again!.chunk(next), 'c7')], 5).earlier.map((t) => t.messageId),
    ['msg_1', 'msg_2', 'msg_3'],
  );
});

test('task_state_summary: the prompt states seed 000 rules; the reply schema and the offline demo keep durable facts', async () => {
  const context = taskStateSummaryContext({ ...emptyTaskState(), ImportantFacts: ['my name is Ada'] }, [
    turn('user', 'remember that my dog is Rex'),
    turn('assistant', 'Noted.'),
    turn('user', 'my balance is 100 today? no, book Rome'),
  ]);
  const [system, user] = taskStateSummaryMessages(context);
  assert.match(system?.content ?? '', /live balances, current positions, current market prices/);
  assert.match(system?.content ?? '', /step-level pending items/);
  assert.match(system?.content ?? '', /whether tools, models, exchanges or configuration exist/);
  assert.match(user?.content ?? '', /"my name is Ada"[^]*User: remember that my dog is Rex/);
  assert.deepEqual(Object.keys(replyJsonSchema('task_state_summary').properties as object).sort(), ['ActiveFlow', 'CurrentGoal', 'ImportantFacts', 'LastDecision', 'OpenLoops']);

  const demo = demoTaskState(context);
  // The balance is live state, not a durable fact.
  assert.deepEqual(demo.ImportantFacts, ['my name is Ada', 'remember that my dog is Rex']);
  assert.equal(demo.CurrentGoal, 'my balance is 100 today? no, book Rome');
  assert.equal(demo.LastDecision, 'Noted.');
  const reply = await new DemoProvider().complete({ name: 'task_state_summary', schema: replyJsonSchema('task_state_summary'), messages: taskStateSummaryMessages(context), context });
  assert.deepEqual(JSON.parse(reply), demo);
});
