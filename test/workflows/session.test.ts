/**
 * AgentSessionWorkflow against the real Temporal server, with the real `openai`
 * client talking HTTP to a stub model server: routing of every kind of message,
 * replies to the right run, confirmations, retry, /clear, compression into
 * TaskState, continue-as-new under load, and capability changes.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { WorkflowUpdateStage, type WorkflowExecutionInfo, type WorkflowHandleWithFirstExecutionRunId } from '@temporalio/client';
import { RUN_ID_TAKEN, startSessionRun } from '../../src/activities/run-starts';
import { LOCAL_CALL_MAX_MS } from '../../src/engine/local-calls';
import type { ExecutionState } from '../../src/planning/execution-state';
import { emptyTaskState, HELP_TEXT } from '../../src/sessions/session-model';
import { newSessionRun } from '../../src/sessions/session-state';
import type { OpenMemory } from '../../src/store/open-memory';
import { openMemory } from '../../src/store/open-memory';
import { Sessions } from '../../src/temporal/sessions';
import { getStateQuery, SESSION_ID_ATTR } from '../../src/workflows/definitions';
import { CAPABILITIES_CHANGED, NOTHING_TO_RETRY, type agentSessionWorkflow } from '../../src/workflows/session';
import { sendMessageUpdate, SESSION_WORKFLOW_TYPE, type MessageOutcome, type SessionInput, type SessionView } from '../../src/workflows/session-definitions';
import { answer, askStep, cont, respondStep, toolStep } from '../helpers/scenarios';
import { StubModelServer, type StubRequest } from '../helpers/stub-model-server';
import { activitiesOf, measuredCallMs, startTestEnv, stubProvider, testConfig, waitFor, type TestEnv } from '../helpers/temporal-env';

const stub = new StubModelServer();
let env: TestEnv;
let mem: OpenMemory;

before(async () => {
  await stub.start();
  env = await startTestEnv({ provider: stubProvider(stub.url), config: testConfig({ MAX_STEPS: '6' }) });
  mem = await openMemory(env.config);
});
after(async () => {
  await mem?.close();
  await env?.stop();
  await stub.stop();
});

type Session = WorkflowHandleWithFirstExecutionRunId<typeof agentSessionWorkflow> & { sessionId: string; threadId: string };

async function startSession(extra: Partial<SessionInput> = {}): Promise<Session> {
  const sessionId = `session-tester-${randomBytes(4).toString('hex')}`;
  const threadId = `thread_${sessionId}`;
  const input: SessionInput = { sessionId, userId: 'tester', threadId, limits: { maxSteps: 6, maxDepth: 1 }, ...extra };
  const handle = await env.client.workflow.start<typeof agentSessionWorkflow>(SESSION_WORKFLOW_TYPE, {
    taskQueue: env.config.TASK_QUEUE,
    workflowId: sessionId,
    args: [input],
  });
  return Object.assign(handle, { sessionId, threadId });
}

const send = (s: Session, text: string): Promise<MessageOutcome> => s.executeUpdate(sendMessageUpdate, { args: [{ text }] });
/** The session as the API shows it: the workflow's runs, the conversation from its thread. */
const viewOf = (s: Session): Promise<SessionView> => new Sessions(env.client, mem.memory, env.config).get(s.sessionId);
const runState = (runId: string): Promise<ExecutionState> => env.client.workflow.getHandle(runId).query(getStateQuery);
const runStatus = async (s: Session, runId: string) => (await viewOf(s)).runs.find((r) => r.runId === runId)?.status;
const waitRunStatus = (s: Session, runId: string, status: string, timeoutMs = 30_000) =>
  waitFor(`${runId} to be ${status} in the session`, async () => (await runStatus(s, runId)) === status, timeoutMs);
const prompt = (r: StubRequest | undefined) => r?.messages.map((m) => m.content).join('\n') ?? '';
/** The session's view once `count` answers have joined its chatHistory. */
const answeredView = (s: Session, count: number) =>
  waitFor(
    `all ${count} runs to be answered`,
    async () => {
      const v = await viewOf(s);
      return v.chatHistory.filter((t) => t.role === 'assistant').length === count ? v : null;
    },
    60_000,
  );
/** Every execution of the session's continue-as-new chain, closed ones included. */
async function executionsOf(s: Session): Promise<WorkflowExecutionInfo[]> {
  const executions: WorkflowExecutionInfo[] = [];
  for await (const e of env.client.workflow.list({ query: `WorkflowId = '${s.sessionId}'` })) executions.push(e);
  return executions;
}
/** A run that answers at once. */
const answers = (goal: string, text: string) => stub.script(goal, { execution_plan: [{ steps: [respondStep] }], final_answer: [answer(text)] });

test('every kind of message is routed: commands, nothing to retry, a new run that reports its answer back', async () => {
  const s = await startSession();
  assert.deepEqual(await send(s, '/help'), { kind: 'command', reply: HELP_TEXT });
  const unknown = await send(s, '/frobnicate now');
  assert.equal(unknown.kind, 'command');
  assert.match(unknown.reply ?? '', /Unknown command "\/frobnicate"/);
  assert.deepEqual(await send(s, 'try again'), { kind: 'command', reply: NOTHING_TO_RETRY });

  answers('What is 2+2?', 'It is 4.');
  const started = await send(s, 'What is 2+2?');
  assert.equal(started.kind, 'new_run');
  assert.equal(started.runId, `${s.sessionId}.r4`);
  await waitRunStatus(s, started.runId ?? '', 'completed');

  const view = await viewOf(s);
  assert.deepEqual(
    view.chatHistory.map((t) => [t.role, t.text]),
    [
      ['user', 'try again'],
      ['user', 'What is 2+2?'],
      ['assistant', 'It is 4.'],
    ],
  );
  assert.equal(view.runs.find((r) => r.runId === started.runId)?.finalAnswer, 'It is 4.');
  assert.equal(view.turns, 4);
  // The run's planner saw the conversation it belongs to.
  assert.match(prompt(stub.requestsFor('What is 2+2?', 'execution_plan')[0]), /Conversation so far[^]*User: What is 2\+2\?/);
  // The run is findable by the session's search attribute (the session starts it from its own call, not as a child).
  const run = await env.client.workflow.getHandle(started.runId ?? '').describe();
  assert.equal(run.typedSearchAttributes.get(SESSION_ID_ATTR), s.sessionId);

  const state = await send(s, '/state');
  assert.equal(state.kind, 'command');
  assert.match(state.reply ?? '', new RegExp(`${started.runId} \\[completed\\] What is 2\\+2\\?`));
  assert.match(state.reply ?? '', /Assistant: It is 4\./);

  // The turns are mirrored into the session's memory thread, the user's and the answers.
  const thread = await mem.memory.view(s.threadId);
  assert.deepEqual(
    thread.chunks.filter((c) => c.type === 'user' || c.type === 'response').map((c) => [c.type, c.content.kind === 'text' ? c.content.text : '']),
    [
      ['user', 'try again'],
      ['user', 'What is 2+2?'],
      ['response', 'It is 4.'],
    ],
  );
  // The plan began with its respond step, so it came with its answer. The session's first run does not know how quick
  // the model is: it plans as a regular activity, and a local call closes the run — if the plan call took at most
  // LOCAL_CALL_MAX_MS (as its worker measured it); a loaded machine can make it slower, and the close a regular call.
  const [firstPlanMs] = await measuredCallMs(env.client, started.runId ?? '', 'planRun');
  assert.equal(typeof firstPlanMs, 'number');
  const quick = (ms: number | undefined) => (ms ?? Infinity) <= LOCAL_CALL_MAX_MS;
  assert.deepEqual(await activitiesOf(env.client, started.runId ?? '', undefined, { tagLocal: true }), ['planRun', quick(firstPlanMs) ? 'local:closeRun' : 'closeRun'], `plan call: ${firstPlanMs} ms`);
  // The closing call added the answer to the session's thread before it reported: the session wrote the two messages' turns only.
  assert.deepEqual((await activitiesOf(env.client, s.sessionId)).filter((a) => a === 'recordTurns').length, 2);

  // The next run knows how quick the model was: if the first plan call was quick, one local call plans, answers and
  // closes the run (CloseOnAnswer); else it plans as a regular activity, and its close is local if its own plan call was quick.
  answers('And 3+3?', 'It is 6.');
  const second = await send(s, 'And 3+3?');
  await waitRunStatus(s, second.runId ?? '', 'completed');
  const [secondPlanMs] = quick(firstPlanMs) ? [] : await measuredCallMs(env.client, second.runId ?? '', 'planRun');
  assert.deepEqual(
    await activitiesOf(env.client, second.runId ?? '', undefined, { tagLocal: true }),
    quick(firstPlanMs) ? ['local:planRun'] : ['planRun', quick(secondPlanMs) ? 'local:closeRun' : 'closeRun'],
    `plan calls: ${firstPlanMs} ms, then ${secondPlanMs ?? '(local)'} ms`,
  );
  // Its input names its features: no patch marker, no search-attribute write but its status.
  const events = (await env.client.workflow.getHandle(second.runId ?? '').fetchHistory()).events ?? [];
  assert.equal(events.filter((e) => e.markerRecordedEventAttributes?.markerName === 'core_patch').length, 0);
  assert.deepEqual(
    events.flatMap((e) => Object.keys(e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields ?? {})),
    ['ThreadlineStatus'],
  );
  assert.equal((await viewOf(s)).runs.find((r) => r.runId === second.runId)?.finalAnswer, 'It is 6.');
  const after = await mem.memory.view(s.threadId);
  assert.deepEqual(
    after.chunks.filter((c) => c.type === 'response').map((c) => (c.content.kind === 'text' ? c.content.text : '')),
    ['It is 4.', 'It is 6.'],
  );
  // The run's own thread ends with its answer, as a closing call writes it.
  const runThread = await mem.memory.view(`thread_${second.runId ?? ''}`);
  const last = runThread.chunks.at(-1);
  assert.equal(last?.type, 'output');
  assert.equal(last?.content.kind === 'text' ? last.content.text : '', 'It is 6.');
  assert.deepEqual((await activitiesOf(env.client, s.sessionId)).filter((a) => a === 'recordTurns').length, 3);
  await s.terminate();
});

test('with two runs waiting, replies reach the right one; "ok" to a yes/no question becomes "yes"', async () => {
  const s = await startSession();
  stub.script('book a table', { execution_plan: [{ steps: [askStep('For how many people?'), respondStep] }], replan_decision: [cont], final_answer: [answer('Booked for four.')] });
  stub.script('send the report', { execution_plan: [{ steps: [askStep('Should I send it to the whole team?'), respondStep] }], replan_decision: [cont], final_answer: [answer('Sent.')] });

  // While a run waits, every message is its reply: both requests go in before either run asks.
  stub.delayMs = 700;
  const table = await send(s, 'book a table');
  const report = await send(s, 'send the report');
  assert.deepEqual([table.kind, report.kind], ['new_run', 'new_run']);
  await waitRunStatus(s, table.runId ?? '', 'waiting_user');
  // A yes/no question gets its own status.
  await waitRunStatus(s, report.runId ?? '', 'waiting_user_confirmation');
  stub.delayMs = 0;

  // Addressed by run id, the reply reaches that run whichever asked last.
  assert.deepEqual(await send(s, `@${table.runId} four of us`), { kind: 'reply', runId: table.runId });
  await waitRunStatus(s, table.runId ?? '', 'completed');
  const tableState = await runState(table.runId ?? '');
  assert.deepEqual(
    tableState.observations.filter((o) => o.kind === 'user_reply').map((o) => o.content),
    ['four of us'],
  );
  assert.equal(await runStatus(s, report.runId ?? ''), 'waiting_user_confirmation');

  // The one still waiting takes the next message; a short confirmation is normalized.
  assert.deepEqual(await send(s, 'ok'), { kind: 'reply', runId: report.runId });
  await waitRunStatus(s, report.runId ?? '', 'completed');
  const reportState = await runState(report.runId ?? '');
  assert.deepEqual(
    reportState.observations.filter((o) => o.kind === 'user_reply').map((o) => o.content),
    ['yes'],
  );

  const view = await viewOf(s);
  const byRun = (runId: string | undefined) => view.chatHistory.filter((t) => t.runId === runId).map((t) => [t.role, t.text]);
  assert.deepEqual(byRun(table.runId), [
    ['user', 'book a table'],
    ['assistant', 'For how many people?'],
    ['user', `@${table.runId} four of us`],
    ['assistant', 'Booked for four.'],
  ]);
  assert.deepEqual(byRun(report.runId), [
    ['user', 'send the report'],
    ['assistant', 'Should I send it to the whole team?'],
    ['user', 'ok'],
    ['assistant', 'Sent.'],
  ]);
  await s.terminate();
});

test('a new request sent while a run waits starts its own run (the model judges it); the waiting run still takes its reply', async () => {
  const s = await startSession();
  stub.script('book a table for friday', {
    execution_plan: [{ steps: [askStep('For how many people?'), respondStep] }],
    replan_decision: [cont],
    final_answer: [answer('Booked for four on Friday.')],
  });
  const table = await send(s, 'book a table for friday');
  await waitRunStatus(s, table.runId ?? '', 'waiting_user');

  // Not an answer to "how many?": the message_route call says so, and the request runs on its own.
  stub.script('what is the time in Lisbon?', {
    message_route: [{ route: 'new_request' }],
    execution_plan: [{ steps: [respondStep] }],
    final_answer: [answer('It is noon in Lisbon.')],
  });
  const other = await send(s, 'what is the time in Lisbon?');
  assert.equal(other.kind, 'new_run');
  assert.notEqual(other.runId, table.runId);
  await waitRunStatus(s, other.runId ?? '', 'completed');
  const judged = stub.requestsFor('what is the time in Lisbon?', 'message_route');
  assert.equal(judged.length, 1);
  assert.match(prompt(judged[0]), new RegExp(`runId ${table.runId} — task: book a table for friday\\n {3}question: For how many people\\?`));
  assert.equal(await runStatus(s, table.runId ?? ''), 'waiting_user', 'the waiting run did not take it');

  // The answer to the question is judged a reply (the stub's default), and reaches the run that asked.
  assert.deepEqual(await send(s, 'four of us'), { kind: 'reply', runId: table.runId });
  await waitRunStatus(s, table.runId ?? '', 'completed');
  assert.deepEqual(
    (await runState(table.runId ?? '')).observations.filter((o) => o.kind === 'user_reply').map((o) => o.content),
    ['four of us'],
  );
  assert.equal(stub.requestsFor('four of us', 'message_route').length, 1);
  await s.terminate();
});

test('a session starts tree runs when it or a message asks: the tree sees the conversation, asks through the session, and its answer joins it', async () => {
  const sessions = new Sessions(env.client, mem.memory, env.config);
  const { sessionId } = await sessions.create({ userId: 'tree-talker', engine: 'tree' });
  const handle = env.client.workflow.getHandle(sessionId);
  const s = Object.assign(handle, { sessionId, threadId: `thread_${sessionId}` }) as unknown as Session;
  const goal = 'plan a picnic';
  stub.script(goal, {
    task_tree: [
      {
        name: 'Picnic',
        goal,
        subtasks: [
          { name: 'Place', goal: 'Pick the park' },
          { name: 'Food', goal: 'Choose the food' },
        ],
      },
    ],
    react_action: [
      { thought: 'which park?', action: 'ask_user', question: 'Which park do you like?' },
      { thought: 'ok', action: 'finish', result: 'Hyde Park' },
      { thought: 'food', action: 'finish', result: 'sandwiches' },
    ],
    final_answer: [answer('Picnic in Hyde Park with sandwiches.')],
  });
  const started = await sessions.send(sessionId, goal);
  assert.equal(started.kind, 'new_run');
  const runId = started.runId ?? '';
  await waitRunStatus(s, runId, 'waiting_user');
  assert.equal((await runState(runId)).engine, 'tree');
  assert.match(prompt(stub.requestsFor(goal, 'react_action')[0]), /Conversation so far[^]*User: plan a picnic/);
  assert.deepEqual(await sessions.send(sessionId, 'Hyde Park'), { kind: 'reply', runId });
  await waitRunStatus(s, runId, 'completed');
  const view = await viewOf(s);
  assert.deepEqual(view.chatHistory.map((t) => [t.role, t.text]).slice(-2), [
    ['user', 'Hyde Park'],
    ['assistant', 'Picnic in Hyde Park with sandwiches.'],
  ]);

  // A message may choose the planner in a tree session, and a plan session's message may ask for a tree.
  answers('just say hi', 'Hi!');
  const plain = await sessions.send(sessionId, 'just say hi', { engine: 'plan' });
  await waitRunStatus(s, plain.runId ?? '', 'completed');
  assert.equal((await runState(plain.runId ?? '')).engine, undefined);
  await handle.terminate();
});

test("a sub-plan's question reaches the person in the session, and the reply reaches the sub-plan", async () => {
  const s = await startSession();
  const goal = 'organise the team lunch';
  const inner = 'pick the restaurant';
  stub.script(goal, {
    execution_plan: [{ steps: [{ type: 'subplan', description: 'choose where', goal: inner }, respondStep] }],
    replan_decision: [cont],
    final_answer: [answer('Lunch is at Thai House.')],
  });
  stub.script(inner, { execution_plan: [{ steps: [askStep('Which cuisine does the team like?'), respondStep] }], replan_decision: [cont], final_answer: [answer('Thai House it is.')] });

  const started = await send(s, goal);
  assert.equal(started.kind, 'new_run');
  const runId = started.runId ?? '';
  await waitRunStatus(s, runId, 'waiting_user');
  // The question is the run's, in the conversation, though the sub-plan asked it.
  const waiting = await runState(runId);
  const shown = waiting.steps.find((st) => st.id === waiting.currentStepId);
  assert.deepEqual([shown?.type, shown?.question, shown?.childRunId], ['ask_user', 'Which cuisine does the team like?', `${runId}.s1`]);
  assert.equal((await runState(`${runId}.s1`)).status, 'waiting_user');
  assert.deepEqual((await viewOf(s)).chatHistory.map((t) => [t.role, t.text]).slice(-2), [
    ['user', goal],
    ['assistant', 'Which cuisine does the team like?'],
  ]);

  // The person answers in the session: the reply goes to the run, and down to the sub-plan that asked.
  assert.deepEqual(await send(s, 'thai food'), { kind: 'reply', runId });
  await waitRunStatus(s, runId, 'completed');
  const child = await runState(`${runId}.s1`);
  assert.deepEqual(
    child.observations.filter((o) => o.kind === 'user_reply').map((o) => o.content),
    ['thai food'],
  );
  assert.equal(child.finalAnswer, 'Thai House it is.');
  const done = await runState(runId);
  assert.equal(done.finalAnswer, 'Lunch is at Thai House.');
  assert.deepEqual(
    done.observations.map((o) => [o.kind, o.content]),
    [
      ['user_reply', 'thai food'],
      ['subplan', 'Thai House it is.'],
    ],
  );
  assert.deepEqual((await viewOf(s)).chatHistory.map((t) => [t.role, t.text]).slice(-2), [
    ['user', 'thai food'],
    ['assistant', 'Lunch is at Thai House.'],
  ]);
  await s.terminate();
});

test('"try again" after a failed run starts its goal again as a new run', async () => {
  const s = await startSession();
  // Three invalid plans: the run fails; the retry gets a good one.
  stub.script('flaky request', { execution_plan: ['nope', 'nope', 'nope', { steps: [respondStep] }], final_answer: [answer('Worked this time.')] });
  const first = await send(s, 'flaky request');
  await waitRunStatus(s, first.runId ?? '', 'failed');
  assert.match((await viewOf(s)).chatHistory.at(-1)?.text ?? '', /That request failed: .*invalid.*"try again"/);

  const retry = await send(s, 'try again');
  assert.equal(retry.kind, 'retry');
  assert.notEqual(retry.runId, first.runId);
  await waitRunStatus(s, retry.runId ?? '', 'completed');
  const view = await viewOf(s);
  assert.deepEqual(
    view.runs.map((r) => r.runId),
    [retry.runId],
    'the failed run is reset, the retry replaces it',
  );
  assert.equal(view.runs[0]?.goal, 'flaky request');
  assert.equal(view.chatHistory.at(-1)?.text, 'Worked this time.');
  // Nothing failed any more: a second "try again" has nothing to retry.
  assert.deepEqual(await send(s, 'try again'), { kind: 'command', reply: NOTHING_TO_RETRY });
  await s.terminate();
});

test('/clear empties chatHistory, TaskState and runs, cancels the waiting run, and the audit shows it', async () => {
  const s = await startSession();
  stub.script('plan a trip', { execution_plan: [{ steps: [askStep('Where to?'), respondStep] }] });
  const trip = await send(s, 'plan a trip');
  await waitRunStatus(s, trip.runId ?? '', 'waiting_user');

  const cleared = await send(s, '/clear');
  assert.equal(cleared.kind, 'command');
  assert.match(cleared.reply ?? '', /Cleared the conversation.*1 unfinished run/);
  const view = await viewOf(s);
  assert.deepEqual([view.chatHistory, view.runs, view.taskState.ImportantFacts, view.taskState.CurrentGoal], [[], [], [], '']);
  await waitFor('the run to be cancelled', async () => (await env.client.workflow.getHandle(trip.runId ?? '').describe()).status.name === 'COMPLETED');
  assert.equal(((await env.client.workflow.getHandle(trip.runId ?? '').result()) as ExecutionState).status, 'cancelled');

  const thread = await mem.memory.view(s.threadId);
  assert.deepEqual(
    thread.chunks.filter((c) => c.type === 'user' || c.type === 'response'),
    [],
  );
  const audit = await mem.memory.audit(s.threadId);
  assert.ok(
    audit.some((r) => r.reason === '/clear' && r.kind === 'delete'),
    `no /clear in the audit: ${audit.map((r) => `${r.kind}:${r.reason}`).join(', ')}`,
  );
  // After /clear a "yes" is a new request, not a reply to the cancelled run.
  answers('yes', 'Yes to what?');
  assert.equal((await send(s, 'yes')).kind, 'new_run');
  await s.terminate();
});

test('a message that takes the session thread past its hard limit is compacted at once; the CRITICAL chunk stays', async () => {
  const threadId = `thread_session-limits-${randomBytes(4).toString('hex')}`;
  const limits = { soft: 300, hard: 600 };
  const created = await mem.memory.createThread({
    threadId,
    userId: 'tester',
    limits,
    chunks: [{ type: 'agent', content: { kind: 'json', data: { role: 'conversation memory of this session' } }, retention: 'CRITICAL' }],
    meta: { origin: 'system', reason: 'test', trigger: 'test' },
  });
  const s = await startSession({ threadId });
  const pasted = Array.from({ length: 60 }, (_, i) => `Item ${i + 1} of my packing list: socks, charger, passport copy, umbrella.`).join('\n');
  answers(pasted.split('\n')[0] ?? '', 'Noted your list.'); // the stub knows a run by its goal's first line
  const started = await send(s, pasted);
  await waitRunStatus(s, started.runId ?? '', 'completed');

  const thread = await mem.memory.view(threadId);
  assert.ok(thread.state.tokens <= limits.hard, `${thread.state.tokens} tokens ≤ the hard limit ${limits.hard}`);
  assert.deepEqual(thread.chunks[0], created.chunks[0], 'the CRITICAL chunk is untouched');
  const turn = thread.chunks.find((c) => c.type === 'user');
  assert.match(turn?.content.kind === 'text' ? turn.content.text : '', /^Item 1 of my packing list[^]*tokens cut by built-in compaction[^]*Item 60 of my packing list/);
  // The session's history is its thread (shortened alike); the whole message is still retrievable by its id.
  const first = (await viewOf(s)).chatHistory[0];
  assert.match(first?.text ?? '', /tokens cut by built-in compaction/);
  const whole = await mem.memory.findMessage(first?.messageId ?? '', { threadIds: [threadId], userId: 'tester' });
  assert.equal(whole?.content.kind === 'text' ? whole.content.text : '', pasted);
  assert.ok((await mem.memory.audit(threadId)).some((r) => r.kind === 'replace' && r.origin === 'system' && /hard limit/.test(r.reason)));
  await s.terminate();
});

test('compression: a fact stated 50 turns earlier survives in TaskState and reaches a later planner prompt, while chatHistory stays short; live state and step-level items are dropped and audited; compressed turns stay retrievable by the id the prompt names', async () => {
  const s = await startSession({ settings: { maxTurns: 20, window: 12, keepAfterCompression: 6 } });
  // The summary model carries earlier facts forward (they are in the TaskState it is shown) and adds new ones.
  const summarize = (req: StubRequest) => {
    const user = req.messages.find((m) => m.role === 'user')?.content ?? '';
    return {
      CurrentGoal: 'chat with the assistant',
      ActiveFlow: '',
      // The model breaks seed 000's rules too: the code drops these, whatever the prompt asked.
      OpenLoops: ['call get_exchange_configs'],
      ImportantFacts: [...(/account number is 12345/.test(user) ? ['The account number is 12345'] : []), 'My balance is 500 USDT'],
      LastDecision: '',
    };
  };
  stub.script('', { task_state_summary: Array.from({ length: 100 }, () => summarize) });

  answers('remember that my account number is 12345', 'Noted.');
  assert.equal((await send(s, 'remember that my account number is 12345')).kind, 'new_run');
  const factId = (await mem.memory.view(s.threadId)).chunks.find((c) => c.type === 'user' && c.content.kind === 'text' && /12345/.test(c.content.text))?.messageId ?? '';
  assert.match(factId, /^msg_/);
  const last = { runId: '' };
  for (let i = 1; i < 50; i++) {
    answers(`small talk ${i}`, `reply ${i}`);
    last.runId = (await send(s, `small talk ${i}`)).runId ?? '';
  }
  await waitRunStatus(s, last.runId, 'completed', 60_000);
  const view = await waitFor('every run to finish', async () => {
    const v = await viewOf(s);
    return v.runs.every((r) => r.status === 'completed') && v.chatHistory.at(-1)?.text === 'reply 49' ? v : null;
  });
  assert.deepEqual(view.taskState.ImportantFacts, ['The account number is 12345']);
  assert.deepEqual(view.taskState.OpenLoops, []);
  assert.ok(view.taskState.UpdatedAt !== '');
  // What the rules dropped is in the thread's audit, with the TaskState write.
  const writes = (await mem.memory.audit(s.threadId)).filter((r) => r.reason === 'older turns compressed into the task state');
  assert.ok(writes.length >= 5);
  assert.deepEqual((writes[0]?.details as { notes?: string[] } | null)?.notes, [
    'dropped by the TaskState rules: OpenLoops: "call get_exchange_configs" (a step-level pending item of a plan)',
    'dropped by the TaskState rules: ImportantFacts: "My balance is 500 USDT" (live state that changes outside the chat)',
  ]);
  assert.ok(view.chatHistory.length <= 12 + 1, `chatHistory has ${view.chatHistory.length} turns`);
  assert.ok(!view.chatHistory.some((t) => /12345/.test(t.text)), 'the fact left chatHistory');
  assert.ok(stub.requestsFor('', 'task_state_summary').length >= 5);
  // The summary prompt states seed 000's rules.
  assert.match(
    prompt(stub.requestsFor('', 'task_state_summary')[0]),
    /Never put in the TaskState[^]*live balances[^]*step-level pending items[^]*whether tools, models, exchanges or configuration exist/,
  );

  // The thread holds the TaskState chunk and only the recent turns.
  const thread = await mem.memory.view(s.threadId);
  const turnChunks = thread.chunks.filter((c) => c.type === 'user' || c.type === 'response');
  assert.ok(turnChunks.length <= 13, `${turnChunks.length} turn chunks left in the thread`);
  const taskChunk = thread.chunks.find((c) => c.type === 'workflow');
  assert.equal(taskChunk?.retention, 'CRITICAL');
  assert.match(JSON.stringify(taskChunk?.content), /account number is 12345/);

  // A later run's planner prompt carries the fact in its Task state, names the compressed turn by its id, and
  // shows each recent turn with its id; retrieve_message fetches the compressed turn from the session thread.
  stub.script('what is my account number?', {
    execution_plan: [{ steps: [toolStep('retrieve_message', { messageId: factId }), respondStep] }],
    replan_decision: [cont],
    final_answer: [answer('It is 12345.')],
  });
  const question = await send(s, 'what is my account number?');
  await waitRunStatus(s, question.runId ?? '', 'completed');
  const planPrompt = prompt(stub.requestsFor('what is my account number?', 'execution_plan')[0]);
  assert.match(planPrompt, /Task state[^]*ImportantFacts:[^]*The account number is 12345/);
  // (The prompt names the newest 30 compressed turns; the fact's turn, older, is fetched all the same.)
  assert.match(planPrompt, /Earlier turns, folded into the task state[^\n]*\n\[msg_[0-9a-z]+\] (User: small talk|Assistant: reply) \d+\n/);
  assert.match(planPrompt, /Conversation so far \(oldest first\):\n\[msg_[0-9a-z]+\] (User|Assistant): /);
  const retrieved = (await runState(question.runId ?? '')).observations.find((o) => o.kind === 'tool');
  assert.deepEqual(JSON.parse(retrieved?.content ?? '{}').content, 'remember that my account number is 12345');
  await s.terminate();
});

test('a slow summary model does not hold the answer: the session compresses after the sender has it', async () => {
  const s = await startSession({ settings: { window: 3, keepAfterCompression: 1 } });
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  const fact = { CurrentGoal: '', ActiveFlow: '', OpenLoops: [], ImportantFacts: ['summarized while the sender went on'], LastDecision: '' };
  stub.script('', { task_state_summary: [async () => (await held, fact)] });
  const summaries = () => stub.requestsFor('', 'task_state_summary').length;
  const before = summaries();
  // Each "try again" with nothing to retry is a user turn; the fourth passes the window of 3.
  for (let i = 0; i < 3; i++) await send(s, 'try again');
  assert.equal(summaries(), before);
  const fourth = send(s, 'try again');
  let answeredVersion = -1;
  try {
    await waitFor('the summary request', async () => summaries() === before + 1);
    const outcome = await Promise.race([fourth, sleep(15_000).then(() => 'still waiting for the summary')]);
    assert.deepEqual(outcome, { kind: 'command', reply: NOTHING_TO_RETRY });
    // Answered and shown, not yet compressed.
    const during = await viewOf(s);
    assert.equal(during.chatHistory.length, 4);
    assert.equal(during.turns, 4);
    answeredVersion = during.version;
  } finally {
    release();
  }
  const after = await waitFor('the compressed view', async () => {
    const v = await viewOf(s);
    return v.taskState.ImportantFacts.length > 0 ? v : null;
  });
  assert.deepEqual(after.taskState.ImportantFacts, fact.ImportantFacts);
  assert.equal(after.chatHistory.length, 1);
  assert.ok(after.version > answeredVersion, 'the compressed view has a version of its own');
  await s.terminate();
});

test('continue-as-new under a burst of 60 messages: none lost, order kept, the run id changed', async () => {
  const s = await startSession({ settings: { maxTurns: 500, window: 1000, tokenThreshold: 1_000_000, continueAsNewAfterEvents: 120, handOverGraceEvents: 100_000 } });
  const firstRunId = s.firstExecutionRunId;
  const texts = Array.from({ length: 60 }, (_, i) => `burst message ${i}`);
  for (const [i, text] of texts.entries()) answers(text, `burst answer ${i}`);
  // Six waves of ten: within a wave each message is accepted before the next is sent (so the order is
  // defined) and their handling overlaps. A session hands over only when its queue is empty and no message
  // is in flight: once a wave's runs have reported, it does so — and the next wave arrives during that hand-over.
  // (The grace is large so that no message is turned away: these updates go to Temporal directly, without
  // the retry of Sessions.send; the next test covers traffic that never pauses.)
  const outcomes: MessageOutcome[] = [];
  for (let wave = 0; wave < 6; wave++) {
    const pending = [];
    for (const text of texts.slice(wave * 10, wave * 10 + 10)) {
      pending.push(await s.startUpdate(sendMessageUpdate, { args: [{ text }], waitForStage: WorkflowUpdateStage.ACCEPTED }));
    }
    const waveOutcomes = await Promise.all(pending.map((u) => u.result()));
    outcomes.push(...waveOutcomes);
    // Answered and mirrored into memory: the session is idle now (unless a report is late).
    const last = `burst answer ${wave * 10 + 9}`;
    await waitFor(`wave ${wave} to be answered`, async () => (await mem.memory.view(s.threadId)).chunks.some((c) => c.type === 'response' && c.content.kind === 'text' && c.content.text === last));
  }
  assert.deepEqual(
    outcomes.map((o) => [o.kind, o.runId]),
    texts.map((_, i) => ['new_run', `${s.sessionId}.r${i + 1}`]),
  );
  // More messages while the runs' reports stream in (and hand-overs happen).
  const late = await Promise.all(['late one', 'late two'].map(async (t) => (answers(t, `${t} answered`), send(s, t))));
  assert.deepEqual(
    late.map((o) => o.kind),
    ['new_run', 'new_run'],
  );

  const view = await answeredView(s, 62);
  assert.equal(view.turns, 62);
  const userTurns = view.chatHistory.filter((t) => t.role === 'user').map((t) => t.text);
  assert.deepEqual(userTurns.slice(0, 60), texts);
  // The two late ones were sent at the same moment: either order, each once.
  assert.deepEqual(userTurns.slice(60).sort(), ['late one', 'late two']);
  // Every run of the chain: the first ones ended by continuing as new (several times), the last one still runs.
  const chain = await waitFor('the session to continue as new', async () => {
    const executions = await executionsOf(s);
    return executions.length >= 3 ? executions : null;
  });
  assert.ok(chain.some((e) => e.runId === firstRunId && e.status.name === 'CONTINUED_AS_NEW'));
  assert.equal(chain.filter((e) => e.status.name === 'RUNNING').length, 1);
  await env.client.workflow.getHandle(s.sessionId).terminate();
});

test('continue-as-new under traffic that never pauses: the session still hands over in time, no message lost', async () => {
  const handOverAfter = 80;
  const grace = 40;
  const s = await startSession({
    settings: { maxTurns: 500, window: 1000, tokenThreshold: 1_000_000, continueAsNewAfterEvents: handOverAfter, handOverGraceEvents: grace },
  });
  const sessions = new Sessions(env.client, mem.memory, env.config);
  // Three people-like senders, each sending its next message the moment the last is answered: with up to
  // three messages always queued or in flight, the session never finds a quiet moment to hand over in.
  const streams = [0, 1, 2].map((k) => Array.from({ length: 15 }, (_, i) => `stream ${k} message ${i}`));
  for (const text of streams.flat()) answers(text, `${text}: answered`);
  const outcomes = await Promise.all(
    streams.map(async (texts) => {
      const out: MessageOutcome[] = [];
      for (const text of texts) out.push(await sessions.send(s.sessionId, text));
      return out;
    }),
  );
  assert.ok(outcomes.flat().every((o) => o.kind === 'new_run'));

  const view = await answeredView(s, 45);
  const userTurns = view.chatHistory.filter((t) => t.role === 'user').map((t) => t.text);
  // Each message exactly once, and each sender's messages in the order sent.
  assert.equal(userTurns.length, 45);
  for (const texts of streams)
    assert.deepEqual(
      userTurns.filter((t) => texts.includes(t)),
      texts,
    );

  // Hand-overs happened while the traffic lasted, each soon after it fell due. A message costs ≈ 25 events
  // (its update, memory writes, its run's start, report and completion), so the 45 would make ≈ 1,100 in
  // one execution; past the threshold and the grace, an execution gains at most what was in flight (the
  // step under way and three senders' accepted messages, ≈ 100–130 events: 200–215 seen).
  const executions = await executionsOf(s);
  const handedOver = executions.filter((e) => e.status.name === 'CONTINUED_AS_NEW');
  assert.ok(handedOver.length >= 2, `expected at least 2 hand-overs, saw ${handedOver.length}`);
  for (const e of handedOver) assert.ok((e.historyLength ?? 0) <= 3 * (handOverAfter + grace), `an execution grew to ${e.historyLength} events`);
  await env.client.workflow.getHandle(s.sessionId).terminate();
});

test('run reports queued at a hand-over are handled first by the next run', async () => {
  // As a hand-over leaves them: a run the session knows as running, and its report not yet handled.
  const runId = 'session-carried-run';
  const carried = { chatHistory: [], taskState: emptyTaskState(), runs: [newSessionRun(runId, 'carried goal', new Date())], turns: 1, version: 3 };
  const report = { runId, status: 'completed' as const, question: null, finalAnswer: 'the carried answer', lastError: null };
  const s = await startSession({ carried, pendingReports: [report] });
  answers('next request', 'next answered');
  assert.equal((await send(s, 'next request')).kind, 'new_run');
  const view = await answeredView(s, 2);
  assert.deepEqual(
    view.chatHistory.map((t) => t.text),
    ['the carried answer', 'next request', 'next answered'],
  );
  assert.equal(view.runs.find((r) => r.runId === runId)?.status, 'completed');
  await s.terminate();
});

test('a change of tools cancels runs that wait from before it, with a note in the conversation', async () => {
  stub.script('configure the exchange', { execution_plan: [{ steps: [askStep('Which exchange?'), respondStep] }] });
  // The run is started as a session's would be, then handed to a session that last saw other tools.
  const first = await startSession();
  const waiting = await send(first, 'configure the exchange');
  await waitRunStatus(first, waiting.runId ?? '', 'waiting_user');
  const carried = await viewOf(first);
  await first.terminate();

  const s = await startSession({
    carried: { chatHistory: carried.chatHistory, taskState: carried.taskState, runs: carried.runs, turns: carried.turns, version: carried.version },
    capabilities: 'fingerprint-of-older-tools',
  });
  await waitRunStatus(s, waiting.runId ?? '', 'cancelled');
  const view = await viewOf(s);
  assert.equal(view.chatHistory.at(-1)?.text, `${CAPABILITIES_CHANGED} (was: "configure the exchange")`);
  assert.equal(((await env.client.workflow.getHandle(waiting.runId ?? '').result()) as ExecutionState).status, 'cancelled');
  // The person's next message is a new request, not a reply to the stale plan.
  answers('binance', 'Configured.');
  assert.equal((await send(s, 'binance')).kind, 'new_run');
  await s.terminate();
});

test('a run start made again (a message handled again after a replay) finds its run: running, or ended with the report its session missed; an id that is not its own is refused', async () => {
  const s = await startSession();
  // What an activity of the worker has: its client, on the worker's own connection (eager start needs it).
  const activity = new MockActivityEnvironment({ taskQueue: env.config.TASK_QUEUE }, { client: env.worker.client });
  const startFor = (sessionId: string, runId: string, goal: string): Promise<Awaited<ReturnType<typeof startSessionRun>>> =>
    activity.run(startSessionRun, { runId, summary: goal, input: { userId: 'tester', goal, sessionId, sessionThreadId: s.threadId, limits: { maxSteps: 6, maxDepth: 1 } } });

  const asking = `${s.sessionId}.r90`;
  stub.script('start twice, asking', { execution_plan: [{ steps: [askStep('Which one?'), respondStep] }] });
  assert.deepEqual(await startFor(s.sessionId, asking, 'start twice, asking'), {});
  await waitFor('the run to wait', async () => (await env.client.workflow.getHandle(asking).query(getStateQuery)).status === 'waiting_user');
  assert.deepEqual(await startFor(s.sessionId, asking, 'start twice, asking'), {}, 'a running run is found, not started again');

  const answered = `${s.sessionId}.r91`;
  answers('start twice, answered', 'Started once.');
  assert.deepEqual(await startFor(s.sessionId, answered, 'start twice, answered'), {});
  await env.client.workflow.getHandle(answered).result();
  const again = await startFor(s.sessionId, answered, 'start twice, answered');
  assert.deepEqual([again.ended?.runId, again.ended?.status, again.ended?.finalAnswer], [answered, 'completed', 'Started once.']);

  const other = await startSession();
  await assert.rejects(startFor(other.sessionId, answered, 'start twice, answered'), (err: Error) => err instanceof ApplicationFailure && err.type === RUN_ID_TAKEN);
  await Promise.all([s, other].map((h) => h.terminate()));
  await env.client.workflow.getHandle(asking).terminate();
});
