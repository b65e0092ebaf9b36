/**
 * Tool calls that wait for a person's approval (issue 28 §3) as a user drives them: over REST,
 * against the real Temporal server and worker, the stub model server behind the real `openai` client.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { ExecutionState } from '../../src/planning/execution-state';
import { openMemory } from '../../src/store/open-memory';
import { Sessions } from '../../src/temporal/sessions';
import { requestJson } from '../helpers/http';
import { startRunsApi, type RunsApi } from '../helpers/runs-api';
import { answer, cont, respondStep, toolStep } from '../helpers/scenarios';
import { StubModelServer } from '../helpers/stub-model-server';
import { testConfig, waitFor } from '../helpers/temporal-env';

const stub = new StubModelServer();
let api: RunsApi | undefined;
let base = '';
const call = <T = Record<string, unknown>>(method: string, path: string, body?: unknown) => requestJson<T>(base, method, path, body);

before(async () => {
  // The operator holds notes_write for approval; runs may add tools.
  api = await startRunsApi(stub, { config: testConfig({ TOOL_APPROVAL: 'notes_write' }) });
  base = api.url;
});
after(async () => {
  await api?.stop();
});

async function start(goal: string, extra: Record<string, unknown> = {}): Promise<string> {
  const res = await call<{ runId: string }>('POST', '/v1/runs', { userId: 'approver', goal, ...extra });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body.runId;
}
const stateOf = async (runId: string) => (await call<ExecutionState>('GET', `/v1/runs/${runId}`)).body;
const waiting = (runId: string) => waitFor('the approval wait', async () => ((await stateOf(runId)).status === 'waiting_approval' ? stateOf(runId) : null));
const ended = (runId: string) => api?.env.client.workflow.getHandle(runId).result() as Promise<ExecutionState>;

test('approve: a held call waits with pendingApproval, a wrong step is 409, approved it runs and the run answers', async () => {
  const goal = 'add two and three, with approval';
  stub.script(goal, { execution_plan: [{ steps: [toolStep('calculator', { expression: '2+3' }), respondStep] }], replan_decision: [cont], final_answer: [answer('5')] });
  const runId = await start(goal, { approval: ['calculator'] });
  const parked = await waiting(runId);
  assert.deepEqual(parked.pendingApproval, { stepId: 's1', tool: 'calculator', args: { expression: '2+3' }, reason: 'TOOL_APPROVAL calculator' });
  assert.equal(stub.requestsFor(goal, 'replan_decision').length, 0, 'the tool has not run');
  const wrong = await call<{ error: { code: string } }>('POST', `/v1/runs/${runId}/approval`, { stepId: 's2', decision: 'approve' });
  assert.equal(wrong.status, 409);
  assert.equal(wrong.body.error.code, 'not_waiting');
  const ok = await call('POST', `/v1/runs/${runId}/approval`, { stepId: 's1', decision: 'approve' });
  assert.equal(ok.status, 202, JSON.stringify(ok.body));
  const done = await ended(runId);
  assert.equal(done.status, 'completed');
  assert.equal(done.finalAnswer, '5');
  assert.equal(done.pendingApproval, null);
  assert.ok(done.observations.some((o) => o.stepId === 's1' && o.kind === 'tool' && o.content.includes('5')));
  assert.equal((await call('POST', `/v1/runs/${runId}/approval`, { stepId: 's1', decision: 'approve' })).status, 409, 'an ended run waits for nothing');
});

test('reject with feedback: the call never runs, its observation is `rejected` with the feedback, and the replan sees it', async () => {
  const goal = 'note my colour, with approval';
  stub.script(goal, {
    execution_plan: [{ steps: [toolStep('notes_write', { key: 'colour', value: 'red' }), respondStep] }],
    replan_decision: [{ decision: 'finish', answer: 'I did not write the note.' }],
  });
  const runId = await start(goal);
  const parked = await waiting(runId);
  assert.equal(parked.pendingApproval?.tool, 'notes_write', 'TOOL_APPROVAL holds it for every run');
  assert.equal((await call('POST', `/v1/runs/${runId}/approval`, { stepId: 's1', decision: 'reject', feedback: 'not red, ask me first' })).status, 202);
  const done = await ended(runId);
  assert.equal(done.status, 'completed');
  assert.equal(done.steps[0]?.status, 'skipped');
  const rejected = done.observations.find((o) => o.kind === 'rejected');
  assert.match(rejected?.content ?? '', /rejected the call notes_write\(\{"key":"colour","value":"red"\}\): not red, ask me first/);
  assert.match(JSON.stringify(stub.requestsFor(goal, 'replan_decision')[0]?.messages), /not red, ask me first/);
  const note = await call<{ value?: unknown }>('GET', '/v1/runs?userId=approver');
  assert.equal(note.status, 200);
});

test('edit: args that do not fit the tool are 400; edited args run, and both are recorded; cancel while waiting ends the run', async () => {
  const goal = 'compute with edited args';
  stub.script(goal, { execution_plan: [{ steps: [toolStep('calculator', { expression: '2+2' }), respondStep] }], replan_decision: [cont], final_answer: [answer('42')] });
  const runId = await start(goal, { approval: ['calc*'] });
  await waiting(runId);
  const bad = await call<{ error: { code: string; details?: unknown } }>('POST', `/v1/runs/${runId}/approval`, { stepId: 's1', decision: 'edit', args: { expression: 42 } });
  assert.equal(bad.status, 400, JSON.stringify(bad.body));
  assert.equal((await call('POST', `/v1/runs/${runId}/approval`, { stepId: 's1', decision: 'edit' })).status, 400, 'an edit needs args');
  assert.equal((await call('POST', `/v1/runs/${runId}/approval`, { stepId: 's1', decision: 'edit', args: { expression: '40+2' } })).status, 202);
  const done = await ended(runId);
  assert.equal(done.status, 'completed');
  assert.deepEqual(done.steps[0]?.args, { expression: '40+2' });
  assert.ok(done.observations.some((o) => o.kind === 'user_reply' && o.content.includes('{"expression":"2+2"}') && o.content.includes('{"expression":"40+2"}')));
  assert.ok(done.observations.some((o) => o.kind === 'tool' && o.content.includes('42')));

  const other = 'cancel while held';
  stub.script(other, { execution_plan: [{ steps: [toolStep('calculator', { expression: '1+1' }), respondStep] }] });
  const held = await start(other, { approval: ['*'] });
  await waiting(held);
  assert.equal((await call('POST', `/v1/runs/${held}/cancel`)).status, 202);
  assert.equal((await ended(held)).status, 'cancelled');
});

test('a tree run holds its leaf’s call the same way: pendingApproval names the task; approved it runs; a rejected one is the task’s observation', async () => {
  const goal = 'tree with a held call';
  stub.script(goal, {
    task_tree: [
      {
        name: 'Sums',
        goal,
        subtasks: [
          { name: 'Add', goal: 'add 2 and 3' },
          { name: 'Note', goal: 'note it' },
        ],
      },
    ],
    react_action: [
      { thought: 'add', action: 'tool', tool: 'calculator', args: { expression: '2+3' } },
      { thought: 'done', action: 'finish', result: '5' },
      { thought: 'note', action: 'tool', tool: 'notes_write', args: { key: 'sum', value: '5' } },
      { thought: 'not allowed to note', action: 'finish', result: 'not noted' },
    ],
    final_answer: [{ answer: '5, not noted' }],
  });
  const runId = await start(goal, { engine: 'tree', approval: ['calculator'] });
  const parked = await waiting(runId);
  assert.equal(parked.pendingApproval?.taskIndex, '1-1');
  assert.equal(parked.pendingApproval?.tool, 'calculator');
  assert.equal((await call('POST', `/v1/runs/${runId}/approval`, { stepId: parked.pendingApproval?.stepId, decision: 'approve' })).status, 202);
  const second = await waitFor('the second hold', async () => {
    const s = await stateOf(runId);
    return s.status === 'waiting_approval' && s.pendingApproval?.tool === 'notes_write' ? s : null;
  });
  assert.equal(second.pendingApproval?.taskIndex, '1-2');
  assert.equal((await call('POST', `/v1/runs/${runId}/approval`, { stepId: second.pendingApproval?.stepId, decision: 'reject', feedback: 'no notes today' })).status, 202);
  const done = await ended(runId);
  assert.equal(done.status, 'completed', done.lastError ?? '');
  assert.deepEqual(
    done.tree?.subtasks.map((n) => n.result),
    ['5', 'not noted'],
  );
  assert.ok(done.observations.some((o) => o.kind === 'tool' && o.content.includes('5')));
  assert.match(done.observations.find((o) => o.kind === 'rejected')?.content ?? '', /no notes today/);
  assert.match(JSON.stringify(stub.requestsFor(goal, 'react_action')[3]?.messages), /no notes today/, 'the task’s next iteration sees the rejection');
});

test('run history: every version oldest first with what changed it, each version’s state exactly as it was; 404 for one the run never had', async () => {
  const goal = 'history of a held call';
  stub.script(goal, { execution_plan: [{ steps: [toolStep('calculator', { expression: '6*7' }), respondStep] }], replan_decision: [cont], final_answer: [answer('42')] });
  const runId = await start(goal, { approval: ['calculator'] });
  const parked = await waiting(runId);
  const midway = await call<{ versions: { version: number; status: string; event: string; stepId?: string }[] }>('GET', `/v1/runs/${runId}/history`);
  assert.equal(midway.status, 200, JSON.stringify(midway.body));
  assert.equal(midway.body.versions.at(-1)?.version, parked.version, 'a waiting run’s history reaches its current version');
  assert.equal(midway.body.versions.at(-1)?.event, 'approval_requested');
  await call('POST', `/v1/runs/${runId}/approval`, { stepId: 's1', decision: 'approve' });
  const done = await ended(runId);
  const res = await call<{ versions: { version: number; at: string; status: string; event: string; stepId?: string }[] }>('GET', `/v1/runs/${runId}/history`);
  const versions = res.body.versions;
  assert.deepEqual(
    versions.map((v) => v.version),
    Array.from({ length: done.version }, (_, i) => i + 1),
    `every version, oldest first: ${JSON.stringify(versions.map((v) => [v.version, v.event]))}`,
  );
  const events = versions.map((v) => v.event);
  assert.equal(events[0], 'started');
  for (const e of ['planned', 'approval_requested', 'approved', 'answered']) assert.ok(events.includes(e), `${e} in ${events.join(', ')}`);
  assert.equal(versions.at(-1)?.status, 'completed');
  const waitingVersion = versions.find((v) => v.event === 'approval_requested');
  const then = await call<ExecutionState>('GET', `/v1/runs/${runId}/history/${waitingVersion?.version}`);
  assert.equal(then.status, 200);
  assert.equal(then.body.version, waitingVersion?.version);
  assert.equal(then.body.status, 'waiting_approval');
  assert.equal(then.body.pendingApproval?.tool, 'calculator');
  const last = await call<ExecutionState>('GET', `/v1/runs/${runId}/history/${done.version}`);
  assert.deepEqual(last.body, done, 'the last version is the final state');
  assert.equal((await call('GET', `/v1/runs/${runId}/history/${done.version + 1}`)).status, 404);
  assert.equal((await call('GET', `/v1/runs/run-nobody-0000000000/history`)).status, 404);
});

test('forks: from before a step, with edited args, the steps before keep their observations and are not run again; points never reached are 409, unknown ones 404', async () => {
  const goal = 'two sums to fork';
  stub.script(goal, {
    execution_plan: [{ steps: [toolStep('calculator', { expression: '2+3' }), toolStep('calculator', { expression: '10*10' }), respondStep] }],
    // The source's two replans, then the fork's one (after its s2).
    replan_decision: [cont, cont, cont],
    final_answer: [answer('5 and 100'), answer('5 and 42')],
  });
  const source = await ended(await start(goal));
  assert.equal(source.status, 'completed');
  const forked = await call<{ runId: string; forkedFrom: { runId: string; version: number }; status: string; uiUrl: string }>('POST', `/v1/runs/${source.runId}/fork`, {
    stepId: 's2',
    edits: { args: [{ stepId: 's2', args: { expression: '6*7' } }] },
  });
  assert.equal(forked.status, 201, JSON.stringify(forked.body));
  assert.equal(forked.body.forkedFrom.runId, source.runId);
  const fork = await ended(forked.body.runId);
  assert.equal(fork.status, 'completed', fork.lastError ?? '');
  assert.deepEqual(fork.forkedFrom, forked.body.forkedFrom);
  assert.equal(fork.finalAnswer, '5 and 42');
  const s1 = (s: ExecutionState) => s.observations.find((o) => o.stepId === 's1');
  assert.deepEqual(s1(fork), s1(source), 's1 kept its observation, content and time: it did not run again');
  assert.deepEqual(fork.steps[1]?.args, { expression: '6*7' });
  assert.ok(fork.observations.some((o) => o.stepId === 's2' && o.content.includes('42')));
  assert.equal(stub.requestsFor(goal, 'execution_plan').length, 1, 'the fork did not plan again');

  assert.equal((await call('POST', `/v1/runs/${source.runId}/fork`, { version: source.version + 5 })).status, 409);
  assert.equal((await call('POST', `/v1/runs/${source.runId}/fork`, { stepId: 's9' })).status, 404);
  assert.equal((await call('POST', `/v1/runs/${source.runId}/fork`, { version: 1, stepId: 's1' })).status, 400);
  const late = await call<{ error: { code: string } }>('POST', `/v1/runs/${source.runId}/fork`, { version: source.version, edits: { args: [{ stepId: 's1', args: { expression: '1' } }] } });
  assert.equal(late.status, 409, 'a step that ran before the fork point keeps its args');
});

test('forks as the issue names them: a 5-step run at step 3 with an edited observation, and a run that waits for a reply', async () => {
  const goal = 'five steps to fork';
  const sum = (e: string) => toolStep('calculator', { expression: e });
  stub.script(goal, {
    execution_plan: [{ steps: [sum('1+1'), sum('2+2'), sum('3+3'), sum('4+4'), respondStep] }],
    // The source's four replans, then the fork's three (after its s3, s4, and before its answer).
    replan_decision: [cont, cont, cont, cont, cont, cont, cont],
    final_answer: [answer('2, 4, 6, 8'), answer('2, 40, 6, 8')],
  });
  const source = await ended(await start(goal));
  assert.equal(source.status, 'completed');
  const sourceCalls = stub.requestsFor(goal).length;
  const forked = await call<{ runId: string }>('POST', `/v1/runs/${source.runId}/fork`, { stepId: 's3', edits: { observations: [{ stepId: 's2', content: '{"value":40}' }] } });
  assert.equal(forked.status, 201, JSON.stringify(forked.body));
  const fork = await ended(forked.body.runId);
  assert.equal(fork.status, 'completed', fork.lastError ?? '');
  assert.equal(fork.finalAnswer, '2, 40, 6, 8', 'a different answer');
  const obs = (s: ExecutionState, stepId: string) => s.observations.find((o) => o.stepId === stepId);
  assert.deepEqual(obs(fork, 's1'), obs(source, 's1'), 's1 kept its result and time: not run again');
  assert.equal(obs(fork, 's2')?.content, '{"value":40}');
  assert.equal(obs(fork, 's2')?.at, obs(source, 's2')?.at, 'an edited observation keeps its time');
  assert.equal(obs(fork, 's3')?.content, '{"value":6}', 's3 ran again in the fork');
  // The model saw the edit: every call of the fork after the fork point shows 40, none shows 4 as s2's result.
  const forkCalls = stub.requestsFor(goal).slice(sourceCalls);
  assert.ok(forkCalls.length >= 3, `the fork's calls: ${forkCalls.map((r) => r.name).join(', ')}`);
  for (const r of forkCalls) assert.match(r.messages.map((m) => m.content).join('\n'), /s2 tool: \{"value":40\}/, `${r.name} shows the edited observation`);
  assert.equal(stub.requestsFor(goal, 'execution_plan').length, 1, 'the fork did not plan again');

  // A run waiting for a reply forks too: the fork waits for its own reply; the source is untouched.
  const asking = 'fork while it asks';
  stub.script(asking, {
    execution_plan: [{ steps: [sum('5+5'), { type: 'ask_user', description: 'ask', question: 'Which colour?' }, respondStep] }],
    replan_decision: [cont, cont, cont, cont],
    final_answer: [answer('fork: blue'), answer('source: red')],
  });
  const waitingId = await start(asking);
  const asked = await waitFor('the question', async () => ((await stateOf(waitingId)).status === 'waiting_user' ? stateOf(waitingId) : null));
  const branch = await call<{ runId: string; forkedFrom: { version: number } }>('POST', `/v1/runs/${waitingId}/fork`, { version: asked.version });
  assert.equal(branch.status, 201, JSON.stringify(branch.body));
  assert.equal(branch.body.forkedFrom.version, asked.version);
  await waitFor('the fork asking', async () => ((await stateOf(branch.body.runId)).status === 'waiting_user' ? true : null));
  assert.equal((await call('POST', `/v1/runs/${branch.body.runId}/reply`, { text: 'blue' })).status, 202);
  assert.equal((await ended(branch.body.runId)).finalAnswer, 'fork: blue');
  assert.equal((await stateOf(waitingId)).status, 'waiting_user', 'the source still waits');
  assert.equal((await call('POST', `/v1/runs/${waitingId}/reply`, { text: 'red' })).status, 202);
  assert.equal((await ended(waitingId)).finalAnswer, 'source: red');
  assert.equal(obs(await ended(branch.body.runId), 's1')?.at, obs(await ended(waitingId), 's1')?.at, 'the fork did not compute 5+5 again');
});

test('a tree run forks before a task: the tasks before keep their results, that task runs again in the fork', async () => {
  const goal = 'tree to fork';
  stub.script(goal, {
    task_tree: [
      {
        name: 'Two',
        goal,
        subtasks: [
          { name: 'First', goal: 'first' },
          { name: 'Second', goal: 'second' },
        ],
      },
    ],
    react_action: [
      { thought: 'one', action: 'finish', result: 'first done' },
      { thought: 'two', action: 'finish', result: 'second done' },
      { thought: 'two again', action: 'finish', result: 'second redone' },
    ],
    final_answer: [{ answer: 'both' }, { answer: 'both, second redone' }],
  });
  const source = await ended(await start(goal, { engine: 'tree' }));
  assert.equal(source.status, 'completed');
  const forked = await call<{ runId: string }>('POST', `/v1/runs/${source.runId}/fork`, { taskIndex: '1-2' });
  assert.equal(forked.status, 201, JSON.stringify(forked.body));
  const fork = await ended(forked.body.runId);
  assert.equal(fork.status, 'completed', fork.lastError ?? '');
  assert.deepEqual(
    fork.tree?.subtasks.map((n) => n.result),
    ['first done', 'second redone'],
  );
  assert.equal(fork.finalAnswer, 'both, second redone');
  assert.equal(stub.requestsFor(goal, 'task_tree').length, 1, 'the fork kept the tree');
});

test("a conversation's runs hold TOOL_APPROVAL's calls too; approved, the answer lands in the conversation", async () => {
  const env = api?.env;
  assert.ok(env);
  const memory = await openMemory(env.config);
  try {
    const sessions = new Sessions(env.client, memory.memory, env.config);
    const { sessionId } = await sessions.create({ userId: 'approver' });
    const goal = 'note that my bike is blue';
    stub.script(goal, {
      execution_plan: [{ steps: [toolStep('notes_write', { key: 'bike', value: 'blue' }), respondStep] }],
      replan_decision: [cont],
      final_answer: [answer('Noted: your bike is blue.')],
    });
    const outcome = await sessions.send(sessionId, goal);
    assert.equal(outcome.kind, 'new_run');
    const runId = outcome.runId ?? '';
    const parked = await waiting(runId);
    assert.equal(parked.pendingApproval?.tool, 'notes_write');
    assert.equal((await call('POST', `/v1/runs/${runId}/approval`, { stepId: parked.pendingApproval?.stepId, decision: 'approve' })).status, 202);
    assert.equal((await ended(runId)).status, 'completed');
    await waitFor('the answer in the conversation', async () => (await sessions.get(sessionId)).chatHistory.some((t) => t.text === 'Noted: your bike is blue.'));
    await sessions.end(sessionId);
  } finally {
    await memory.close();
  }
});
