/**
 * A conversation's messages answer its runs' tool calls held for approval (issue 28 §3): "yes"
 * approves, "no, …" rejects with the rest as feedback, an edit in words becomes new args through the
 * `approval_edit` call (args that do not fit the tool leave the call waiting, and the person is told
 * why). Against the real Temporal server and worker, the stub model server behind the real `openai` client.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { ExecutionState } from '../../src/planning/execution-state';
import { openMemory, type OpenMemory } from '../../src/store/open-memory';
import { Sessions } from '../../src/temporal/sessions';
import { requestJson } from '../helpers/http';
import { startRunsApi, type RunsApi } from '../helpers/runs-api';
import { answer, cont, respondStep, toolStep } from '../helpers/scenarios';
import { StubModelServer } from '../helpers/stub-model-server';
import { testConfig, waitFor } from '../helpers/temporal-env';

const stub = new StubModelServer();
let api: RunsApi | undefined;
let memory: OpenMemory | undefined;
let sessions: Sessions;
const call = <T = Record<string, unknown>>(method: string, path: string, body?: unknown) => requestJson<T>(api?.url ?? '', method, path, body);

before(async () => {
  // The operator holds notes_write for approval, in every run and every conversation.
  api = await startRunsApi(stub, { config: testConfig({ TOOL_APPROVAL: 'notes_write' }) });
  memory = await openMemory(api.env.config);
  sessions = new Sessions(api.env.client, memory.memory, api.env.config);
});
after(async () => {
  await memory?.close();
  await api?.stop();
});

const stateOf = async (runId: string) => (await call<ExecutionState>('GET', `/v1/runs/${runId}`)).body;
const ended = (runId: string) => api?.env.client.workflow.getHandle(runId).result() as Promise<ExecutionState>;
/** Waits until the session lists the run as waiting for approval (its report arrived), and returns the run's state. */
async function heldInSession(sessionId: string, runId: string): Promise<ExecutionState> {
  await waitFor('the session to list the held call', async () => (await sessions.get(sessionId)).runs.find((r) => r.runId === runId && r.status === 'waiting_approval'));
  const state = await stateOf(runId);
  assert.equal(state.status, 'waiting_approval');
  return state;
}
const noteStep = (key: string, value: string) => toolStep('notes_write', { key, value });

test('"yes" approves the held call: it runs once, the run answers, and the conversation shows the question and the answer', async () => {
  const { sessionId } = await sessions.create({ userId: 'session-approver' });
  const goal = 'note that my bike is blue, in a conversation';
  stub.script(goal, { execution_plan: [{ steps: [noteStep('bike', 'blue'), respondStep] }], replan_decision: [cont], final_answer: [answer('Noted: your bike is blue.')] });
  const started = await sessions.send(sessionId, goal);
  const runId = started.runId ?? '';
  const held = await heldInSession(sessionId, runId);
  const listed = (await sessions.get(sessionId)).runs.find((r) => r.runId === runId);
  assert.deepEqual(listed?.approval, held.pendingApproval);
  assert.match(listed?.question ?? '', /^May I call notes_write\(\{"key":"bike","value":"blue"\}\)\?/);

  const outcome = await sessions.send(sessionId, 'yes');
  assert.equal(outcome.kind, 'reply');
  assert.equal(outcome.runId, runId);
  assert.match(outcome.reply ?? '', /^Approved: notes_write/);
  const done = await ended(runId);
  assert.equal(done.status, 'completed');
  assert.equal(done.finalAnswer, 'Noted: your bike is blue.');
  assert.equal(done.observations.filter((o) => o.stepId === 's1' && o.kind === 'tool').length, 1, 'the tool ran once');
  const view = await waitFor('the answer in the conversation', async () => {
    const v = await sessions.get(sessionId);
    return v.chatHistory.some((t) => t.text === 'Noted: your bike is blue.') ? v : undefined;
  });
  assert.ok(view.chatHistory.some((t) => t.role === 'assistant' && t.text.startsWith('May I call notes_write')));
  assert.equal(view.runs.find((r) => r.runId === runId)?.status, 'completed');
  assert.equal(stub.requestsFor('yes', 'message_route').length, 0, 'a confirmation needs no routing call');
  await sessions.end(sessionId);
});

test('"no, use the other file" rejects the call with that feedback: it never runs, and the replan sees why', async () => {
  const { sessionId } = await sessions.create({ userId: 'session-approver' });
  const goal = 'save the draft to file a, in a conversation';
  stub.script(goal, {
    execution_plan: [{ steps: [noteStep('file-a', 'draft'), respondStep] }],
    replan_decision: [{ decision: 'finish', answer: 'I left file a alone; tell me which file to use.' }],
  });
  const runId = (await sessions.send(sessionId, goal)).runId ?? '';
  await heldInSession(sessionId, runId);
  const outcome = await sessions.send(sessionId, 'no, use the other file');
  assert.equal(outcome.kind, 'reply');
  assert.equal(outcome.runId, runId);
  assert.match(outcome.reply ?? '', /^Rejected notes_write.*use the other file/);
  const done = await ended(runId);
  assert.equal(done.status, 'completed');
  assert.equal(done.steps[0]?.status, 'skipped');
  assert.ok(!done.observations.some((o) => o.kind === 'tool'), 'the call never ran');
  const rejected = done.observations.find((o) => o.kind === 'rejected');
  assert.match(rejected?.content ?? '', /rejected the call notes_write\(\{"key":"file-a","value":"draft"\}\): use the other file/);
  assert.match(JSON.stringify(stub.requestsFor(goal, 'replan_decision')[0]?.messages), /use the other file/);
  await sessions.end(sessionId);
});

test('an edit in words: args that do not fit leave the call waiting and say why; then the model’s args run instead', async () => {
  const { sessionId } = await sessions.create({ userId: 'session-approver' });
  const goal = 'note that my car is red, in a conversation';
  stub.script(goal, { execution_plan: [{ steps: [noteStep('car', 'red'), respondStep] }], replan_decision: [cont], final_answer: [answer('Noted: your car is blue.')] });
  const runId = (await sessions.send(sessionId, goal)).runId ?? '';
  await heldInSession(sessionId, runId);

  // Three replies that do not fit notes_write (each sent back once): the call keeps waiting.
  const vague = 'make it a number';
  stub.script(vague, { approval_edit: [{ args: { key: 'car', value: 7 } }, { args: { key: 'car' } }, { args: { value: 'x' } }] });
  const refused = await sessions.send(sessionId, vague);
  assert.equal(refused.kind, 'reply');
  assert.match(refused.reply ?? '', /could not make arguments for notes_write.*still waits/);
  assert.equal(stub.requestsFor(vague, 'approval_edit').length, 3);
  assert.match(JSON.stringify(stub.requestsFor(vague, 'approval_edit')[1]?.messages), /do not fit notes_write/);
  assert.equal((await stateOf(runId)).status, 'waiting_approval');
  assert.equal((await sessions.get(sessionId)).runs.find((r) => r.runId === runId)?.status, 'waiting_approval');

  const edit = 'make it blue instead';
  stub.script(edit, { approval_edit: [{ args: { key: 'car', value: 'blue' } }] });
  const outcome = await sessions.send(sessionId, edit);
  assert.equal(outcome.kind, 'reply');
  assert.match(outcome.reply ?? '', /^Edited: notes_write\(\{"key":"car","value":"blue"\}\)/);
  const request = stub.requestsFor(edit, 'approval_edit')[0];
  assert.equal((request?.body.response_format as { json_schema?: { name?: string } })?.json_schema?.name, 'approval_edit');
  assert.match(JSON.stringify(request?.messages), /notes_write.*\{\\"key\\":\\"car\\",\\"value\\":\\"red\\"\}/);
  const done = await ended(runId);
  assert.equal(done.status, 'completed');
  assert.deepEqual(done.steps[0]?.args, { key: 'car', value: 'blue' });
  assert.ok(done.observations.some((o) => o.kind === 'user_reply' && o.content.includes('{"key":"car","value":"red"}') && o.content.includes('{"key":"car","value":"blue"}')));
  const note = await call<{ results?: unknown }>('GET', `/v1/runs/${runId}`);
  assert.equal(note.status, 200);
  // The refusal is in the conversation too.
  assert.ok((await sessions.get(sessionId)).chatHistory.some((t) => t.role === 'assistant' && t.text.includes('could not make arguments')));
  await sessions.end(sessionId);
});

test('a tree leaf waits for approval while its sibling is skipped: the sibling never runs; "ok" then runs the held call and the run completes', async () => {
  const { sessionId } = await sessions.create({ userId: 'session-approver', engine: 'tree' });
  const goal = 'note the sum and then greet, in a tree conversation';
  stub.script(goal, {
    task_tree: [
      {
        name: 'Sum and greet',
        goal,
        subtasks: [
          { name: 'Note', goal: 'note the sum 5' },
          { name: 'Greet', goal: 'say hello' },
        ],
      },
    ],
    react_action: [
      { thought: 'note it', action: 'tool', tool: 'notes_write', args: { key: 'sum', value: '5' } },
      { thought: 'noted', action: 'finish', result: 'noted the sum' },
    ],
    final_answer: [answer('Noted the sum; greeting skipped.')],
  });
  const runId = (await sessions.send(sessionId, goal)).runId ?? '';
  const held = await heldInSession(sessionId, runId);
  assert.equal(held.pendingApproval?.taskIndex, '1-1');
  assert.equal(held.pendingApproval?.tool, 'notes_write');

  const skip = await call('POST', `/v1/runs/${runId}/tasks/1-2/skip`, { reason: 'no greeting needed' });
  assert.equal(skip.status, 202, JSON.stringify(skip.body));
  const afterSkip = await waitFor('the sibling skipped', async () => {
    const s = await stateOf(runId);
    return s.tree?.subtasks[1]?.status === 'skipped' ? s : undefined;
  });
  assert.equal(afterSkip.status, 'waiting_approval', 'the held call still waits');
  assert.deepEqual(afterSkip.pendingApproval, held.pendingApproval);
  assert.equal((await sessions.get(sessionId)).runs.find((r) => r.runId === runId)?.status, 'waiting_approval');

  const outcome = await sessions.send(sessionId, 'ok');
  assert.equal(outcome.kind, 'reply');
  assert.match(outcome.reply ?? '', /^Approved/);
  const done = await ended(runId);
  assert.equal(done.status, 'completed');
  assert.equal(done.finalAnswer, 'Noted the sum; greeting skipped.');
  assert.deepEqual(
    done.tree?.subtasks.map((t) => t.status),
    ['completed', 'skipped'],
  );
  assert.equal(done.tree?.subtasks[0]?.result, 'noted the sum');
  assert.equal(done.observations.filter((o) => o.kind === 'tool' && o.content.includes('ok')).length, 1, 'the held call ran once');
  assert.equal(stub.requestsFor(goal, 'react_action').length, 2, 'the skipped sibling never asked the model');
  assert.ok(!stub.requestsFor(goal, 'react_action').some((r) => JSON.stringify(r.messages).includes('Current task: 1-2')));
  assert.deepEqual(
    stub.misses.map((m) => `${m.goal}: ${m.name}`),
    [],
  );
  await sessions.end(sessionId);
});

test("a sub-plan's held call shows on its parent and in the conversation; answered at the parent or by a message, it is decided where it waits", async () => {
  const goal = 'delegate the bike note';
  const childGoal = 'write the bike note';
  const subplan = { type: 'subplan', description: 'delegate', goal: childGoal };
  stub.script(goal, {
    execution_plan: [{ steps: [subplan, respondStep] }, { steps: [subplan, respondStep] }],
    replan_decision: [cont, cont],
    final_answer: [answer('parent done'), answer('parent done again')],
  });
  stub.script(childGoal, {
    execution_plan: [{ steps: [noteStep('bike', 'red'), respondStep] }, { steps: [noteStep('bike', 'green'), respondStep] }],
    replan_decision: [cont, cont],
    final_answer: [answer('noted red'), answer('noted green')],
  });

  // Over REST: the parent shows the child's call; the decision sent to the parent reaches the child.
  const started = await call<{ runId: string }>('POST', '/v1/runs', { userId: 'sub-approver', goal });
  const runId = started.body.runId;
  const shown = await waitFor('the held call on the parent', async () => {
    const s = await stateOf(runId);
    return s.status === 'waiting_approval' && s.pendingApproval?.runId ? s : undefined;
  });
  const childId = shown.pendingApproval?.runId ?? '';
  assert.equal(childId, `${runId}.s1`);
  assert.equal((await stateOf(childId)).status, 'waiting_approval');
  assert.deepEqual(shown.pendingApproval, { ...(await stateOf(childId)).pendingApproval, runId: childId });
  assert.equal((await call('POST', `/v1/runs/${runId}/approval`, { stepId: shown.pendingApproval?.stepId, decision: 'approve' })).status, 202);
  const done = await ended(runId);
  assert.equal(done.status, 'completed', done.lastError ?? '');
  assert.equal(done.pendingApproval ?? null, null);
  const child = await ended(childId);
  assert.equal(child.observations.filter((o) => o.kind === 'tool').length, 1, 'the held call ran once, in the child');

  // In a conversation: the session lists its run as waiting for the sub-plan's call, and "yes" decides it.
  const { sessionId } = await sessions.create({ userId: 'sub-approver' });
  const inSession = (await sessions.send(sessionId, goal)).runId ?? '';
  await waitFor('the session to list the sub-plan’s held call', async () =>
    (await sessions.get(sessionId)).runs.find((r) => r.runId === inSession && r.status === 'waiting_approval' && r.approval?.runId === `${inSession}.s1`),
  );
  const outcome = await sessions.send(sessionId, 'yes');
  assert.equal(outcome.kind, 'reply');
  assert.match(outcome.reply ?? '', /^Approved: notes_write/);
  const answered = await ended(inSession);
  assert.equal(answered.status, 'completed', answered.lastError ?? '');
  assert.equal(answered.finalAnswer, 'parent done again');
  await sessions.end(sessionId);
});
