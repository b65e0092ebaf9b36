/**
 * Tree runs (seed 003) as a user drives them: over REST, against the real Temporal server and
 * a real worker, with the real `openai` client talking HTTP to the stub model server.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { expandBlueprint } from '../../src/blueprints/blueprint';
import { loadBlueprints } from '../../src/blueprints/load';
import type { ExecutionState } from '../../src/planning/execution-state';
import { renderContent } from '../../src/memory/parser';
import { openMemory } from '../../src/store/open-memory';
import { Runs } from '../../src/temporal/runs';
import { requestJson } from '../helpers/http';
import { startRunsApi, type RunsApi } from '../helpers/runs-api';
import { lastMessage, StubModelServer, type StubRequest } from '../helpers/stub-model-server';
import { startTestEnv, testConfig, waitFor, type TestEnv } from '../helpers/temporal-env';

const stub = new StubModelServer();
let env: TestEnv;
let base = '';
let api: RunsApi | undefined;
const call = <T = Record<string, unknown>>(method: string, path: string, body?: unknown) => requestJson<T>(base, method, path, body);

before(async () => {
  const config = testConfig({ MAX_TREE_DEPTH: '3', MAX_TREE_FANOUT: '4', MAX_ITERATIONS: '6', SPIN_WARN_AT: '2', SPIN_STOP_AT: '3' });
  api = await startRunsApi(stub, { config, app: { blueprints: loadBlueprints() } });
  ({ env, url: base } = api);
});
after(async () => {
  await api?.stop();
});

const finish = (result: string) => ({ thought: `done: ${result}`, action: 'finish', result });
const tool = (expression: string) => ({ thought: `compute ${expression}`, action: 'tool', tool: 'calculator', args: { expression } });
const userPrompt = lastMessage;

async function startTree(goal: string, extra: Record<string, unknown> = {}): Promise<string> {
  const res = await call<{ runId: string; status: string }>('POST', '/v1/runs', { userId: 'tree-tester', goal, engine: 'tree', ...extra });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body.runId;
}
const result = (runId: string) => env.client.workflow.getHandle(runId).result() as Promise<ExecutionState>;
const stateOf = async (runId: string) => (await call<ExecutionState>('GET', `/v1/runs/${runId}`)).body;

test('a tree run executes its leaves in DFS order (a group as child run <run>.t<index>), each iteration sees the progress tree, its parents and earlier results', async () => {
  const goal = 'plan a trip to Lyon';
  stub.script(goal, {
    task_tree: [
      {
        name: 'Trip',
        goal,
        subtasks: [
          {
            name: 'Travel',
            goal: 'Get there',
            subtasks: [
              { name: 'Train', goal: 'Price the train' },
              { name: 'Hotel', goal: 'Book a hotel' },
            ],
          },
          { name: 'Food', goal: 'Where to eat' },
        ],
      },
    ],
    react_action: [tool('2*39'), finish('train is 78 EUR'), finish('hotel booked'), finish('bouchons')],
    final_answer: [{ answer: 'Train 78 EUR, hotel booked, eat at a bouchon.' }],
  });
  const runId = await startTree(goal);
  const done = await result(runId);
  assert.equal(done.status, 'completed');
  assert.equal(done.finalAnswer, 'Train 78 EUR, hotel booked, eat at a bouchon.');
  assert.equal(done.engine, 'tree');
  assert.deepEqual(
    done.steps.map((s) => `${s.task} ${s.type} ${s.childRunId ?? ''}`.trim()),
    [`1-1 subplan ${runId}.t1-1`, '1-2 reason'],
  );
  const child = await stateOf(`${runId}.t1-1`);
  assert.equal(child.parentRunId, runId);
  assert.deepEqual(
    child.steps.map((s) => s.task),
    ['1-1-1', '1-1-1', '1-1-2'],
    'DFS order, leaves only',
  );
  assert.deepEqual(child.observations[0] && [child.observations[0].kind, child.observations[0].content], ['tool', '{"value":78}']);
  assert.equal(done.tree?.subtasks[0]?.subtasks[0]?.result, 'train is 78 EUR');
  assert.equal(done.tree?.subtasks[0]?.childRunId, `${runId}.t1-1`);
  assert.equal(done.tree?.status, 'completed');
  assert.match(done.progress ?? '', / -\[x\] 1-1\. "Travel" \(finished\)\n {2}-\[x\] 1-1-1\. "Train" \(finished: train is 78 EUR\)/);

  const prompts = stub.requestsFor(goal, 'react_action').map(userPrompt);
  assert.equal(prompts.length, 4);
  assert.match(prompts[0] ?? '', /Current task: 1-1-1\. Train — Price the train/);
  assert.match(prompts[0] ?? '', /Parent tasks \(context only\):\n1\. Trip — plan a trip to Lyon\n1-1\. Travel — Get there/);
  assert.match(prompts[0] ?? '', /-\[-\] 1-1-1\. "Train" \(executing\)/);
  assert.match(prompts[1] ?? '', /This task's actions so far:\ns1 tool calculator\(\{"expression":"2\*39"\}\): tool: \{"value":78\}/);
  assert.match(prompts[2] ?? '', /What finished tasks produced:\n1-1-1 \(completed\): train is 78 EUR/);
  assert.match(prompts[3] ?? '', /-\[x\] 1-1-2\. "Hotel" \(finished: hotel booked\)/);
  // The REST state shows the same tree.
  const state = await stateOf(runId);
  assert.equal(state.progress, done.progress);
  // Each iteration's thought, action and result are in the run's working memory (its memory thread),
  // the group's child run included: one thread for the whole tree.
  assert.equal(child.threadId, `thread_${runId}`);
  const { memory, close } = await openMemory(env.config);
  try {
    const texts = (await memory.view(`thread_${runId}`)).chunks.map((c) => (c.content.kind === 'text' ? c.content.text : JSON.stringify(c.content)));
    // A tool call is one step record (seed 004): its thought and action, then its result, status and time.
    assert.ok(
      texts.some((t) => t.includes('"thought":"[task 1-1-1] compute 2*39","tool":"calculator"')),
      texts.join('\n'),
    );
    assert.ok(
      texts.some((t) => /"result":\{"value":78\},"status":"success","at":"[^"]+","seconds":/.test(t)),
      texts.join('\n'),
    );
    assert.ok(texts.includes('[task 1-2] done: bouchons → finish'), texts.join('\n'));
  } finally {
    await close();
  }
});

test('review over REST: the run waits with its plan; stale planId 409; revise with feedback; approve an edited tree; 400 for a tree past the limits', async () => {
  const goal = 'organise the team offsite';
  stub.script(goal, {
    task_tree: [
      {
        name: 'Offsite',
        goal,
        subtasks: [
          { name: 'Venue', goal: 'Find a venue' },
          { name: 'Agenda', goal: 'Draft the agenda' },
        ],
      },
      { name: 'Offsite', goal, subtasks: [{ name: 'Agenda', goal: 'Draft the agenda' }] },
    ],
    react_action: [finish('agenda drafted'), finish('catering ordered')],
    final_answer: [{ answer: 'Agenda drafted, catering ordered.' }],
  });
  const runId = await startTree(goal, { review: true });
  const waiting = await waitFor('the plan to wait for review', async () => {
    const s = await stateOf(runId);
    return s.status === 'waiting_review' ? s : null;
  });
  assert.equal(waiting.planId, `${runId}#tree1`);
  assert.deepEqual(
    waiting.tree?.subtasks.map((t) => `${t.index} ${t.name} ${t.status}`),
    ['1-1 Venue created', '1-2 Agenda created'],
  );
  assert.match(waiting.progress ?? '', /-\[ \] 1-1\. "Venue" \(not started\)/);

  const stale = await call<{ error: { code: string } }>('POST', `/v1/runs/${runId}/review`, { decision: 'approve', planId: `${runId}#tree0` });
  assert.equal(stale.status, 409);
  assert.equal(stale.body.error.code, 'not_waiting');
  const tooWide = { name: 'x', goal: 'x', subtasks: ['a', 'b', 'c', 'd', 'e'].map((n) => ({ name: n, goal: n })) };
  const invalid = await call<{ error: { code: string; details: unknown } }>('POST', `/v1/runs/${runId}/review`, { decision: 'approve', planId: waiting.planId, tree: tooWide });
  assert.equal(invalid.status, 400);
  assert.deepEqual(invalid.body.error.details, { tree: ['task 1 has 5 subtasks; at most 4 are allowed'] });
  const noFeedback = await call('POST', `/v1/runs/${runId}/review`, { decision: 'revise', planId: waiting.planId });
  assert.equal(noFeedback.status, 400);

  const revise = await call('POST', `/v1/runs/${runId}/review`, { decision: 'revise', planId: waiting.planId, feedback: 'we already have a venue' });
  assert.equal(revise.status, 202);
  const revised = await waitFor('the revised plan', async () => {
    const s = await stateOf(runId);
    return s.status === 'waiting_review' && s.planId === `${runId}#tree2` ? s : null;
  });
  assert.deepEqual(
    revised.tree?.subtasks.map((t) => t.name),
    ['Agenda'],
  );
  const revisionPrompt = userPrompt(stub.requestsFor(goal, 'task_tree')[1] as StubRequest);
  assert.match(revisionPrompt, /Their feedback: we already have a venue/);
  assert.match(revisionPrompt, /-\[ \] 1-1\. "Venue"/, 'the model sees the plan it is asked to revise');

  const edited = {
    name: 'Offsite',
    goal,
    subtasks: [
      { name: 'Agenda', goal: 'Draft the agenda' },
      { name: 'Catering', goal: 'Order food' },
    ],
  };
  const approve = await call('POST', `/v1/runs/${runId}/review`, { decision: 'approve', planId: revised.planId, tree: edited });
  assert.equal(approve.status, 202);
  const again = await call('POST', `/v1/runs/${runId}/review`, { decision: 'approve', planId: revised.planId });
  assert.equal(again.status, 409, 'a duplicate decision is refused');
  const done = await result(runId);
  assert.equal(done.status, 'completed');
  assert.deepEqual(
    done.tree?.subtasks.map((t) => `${t.index} ${t.name} ${t.result}`),
    ['1-1 Agenda agenda drafted', '1-2 Catering catering ordered'],
  );
  assert.equal(done.planId, `${runId}#tree3`);
});

test('review over REST reaches subtrees too: a task that plans mid-run waits with its subtree; the person edits and approves it', async () => {
  const goal = 'prepare the product launch';
  stub.script(goal, {
    task_tree: [
      { name: 'Launch', goal, subtasks: [{ name: 'Press', goal: 'Brief the press' }] },
      {
        name: 'Press',
        goal: 'Brief the press',
        subtasks: [
          { name: 'List', goal: 'List the outlets' },
          { name: 'Mail', goal: 'Mail them' },
        ],
      },
    ],
    react_action: [{ thought: 'too big', action: 'plan', goal: 'split the press work' }, finish('outlets listed'), finish('kit ready')],
    final_answer: [{ answer: 'Press briefed.' }],
  });
  const runId = await startTree(goal, { review: true });
  const first = await waitFor('the plan under review', async () => {
    const s = await stateOf(runId);
    return s.status === 'waiting_review' ? s : null;
  });
  assert.equal((await call('POST', `/v1/runs/${runId}/review`, { decision: 'approve', planId: first.planId })).status, 202);
  const sub = await waitFor('the subtree under review', async () => {
    const s = await stateOf(runId);
    return s.status === 'waiting_review' && s.planId === `${runId}#tree2` ? s : null;
  });
  assert.deepEqual(
    sub.tree?.subtasks[0]?.subtasks.map((t) => `${t.index} ${t.name}`),
    ['1-1-1 List', '1-1-2 Mail'],
  );
  // The person keeps the list and swaps the mailing for a press kit.
  const edited = {
    name: 'Press',
    goal: 'Brief the press',
    subtasks: [
      { name: 'List', goal: 'List the outlets' },
      { name: 'Kit', goal: 'Prepare a press kit' },
    ],
  };
  assert.equal((await call('POST', `/v1/runs/${runId}/review`, { decision: 'approve', planId: sub.planId, tree: edited })).status, 202);
  const done = await result(runId);
  assert.equal(done.status, 'completed', done.lastError ?? '');
  assert.deepEqual(
    done.tree?.subtasks[0]?.subtasks.map((t) => `${t.index} ${t.name} ${t.result}`),
    ['1-1-1 List outlets listed', '1-1-2 Kit kit ready'],
  );
});

test('reject ends the run cancelled; review is refused on plan runs and blueprints are unknown', async () => {
  const goal = 'repaint the office';
  stub.script(goal, { task_tree: [{ name: 'Paint', goal, subtasks: [{ name: 'Buy paint', goal: 'buy' }] }] });
  const runId = await startTree(goal, { review: true });
  const waiting = await waitFor('review', async () => {
    const s = await stateOf(runId);
    return s.status === 'waiting_review' ? s : null;
  });
  assert.equal((await call('POST', `/v1/runs/${runId}/review`, { decision: 'reject', planId: waiting.planId, feedback: 'too expensive' })).status, 202);
  const done = await result(runId);
  assert.equal(done.status, 'cancelled');
  assert.equal(done.lastError, 'plan rejected: too expensive');
  assert.equal((await call('POST', '/v1/runs', { userId: 'u', goal: 'x', review: true })).status, 400);
  const blueprint = await call<{ error: { message: string; details: unknown } }>('POST', '/v1/runs', { userId: 'u', goal: 'x', engine: 'tree', blueprint: 'research' });
  assert.equal(blueprint.status, 400);
  assert.match(blueprint.body.error.message, /unknown blueprint "research"/);
  assert.deepEqual(blueprint.body.error.details, { blueprints: ['budget-split', 'time-check'] });
});

test('a leaf that plans gets subtasks under its own index; past MAX_TREE_DEPTH planning is refused; a leaf asks the person and goes on', async () => {
  const goal = 'write the quarterly report';
  stub.script(goal, {
    task_tree: [
      { name: 'Report', goal, subtasks: [{ name: 'Numbers', goal: 'Gather the numbers' }] },
      {
        name: 'Numbers',
        goal: 'Gather the numbers',
        subtasks: [
          { name: 'Sales', goal: 'Sales figures' },
          { name: 'Costs', goal: 'Cost figures' },
        ],
      },
    ],
    react_action: [
      { thought: 'too big', action: 'plan', goal: 'split the numbers by source' },
      { thought: 'split again?', action: 'plan', goal: 'by region' },
      finish('sales up 4%'),
      { thought: 'which cost centre?', action: 'ask_user', question: 'Which cost centre?' },
      finish('costs of ops flat'),
    ],
    final_answer: [{ answer: 'Sales up 4%, ops costs flat.' }],
  });
  const runId = await startTree(goal);
  // 1-1 planned, so it is a group now: its subtasks run in the child run <run>.t1-1, which asks —
  // and the root run shows the question as its own, so whoever follows the root can answer it there.
  const childId = `${runId}.t1-1`;
  const waiting = await waitFor('the question on the root run', async () => {
    const s = await stateOf(runId);
    return s.status === 'waiting_user' ? s : null;
  });
  assert.equal(waiting.steps.at(-1)?.question, 'Which cost centre?');
  assert.equal(waiting.steps.at(-1)?.childRunId, childId);
  const child = await stateOf(childId);
  assert.equal(child.status, 'waiting_user');
  assert.equal(child.steps.at(-1)?.task, '1-1-2');
  assert.equal((await call('POST', `/v1/runs/${runId}/reply`, { text: 'ops' })).status, 202);
  const done = await result(runId);
  assert.equal(done.status, 'completed');
  assert.deepEqual(
    done.tree?.subtasks[0]?.subtasks.map((t) => `${t.index} ${t.status} ${t.result}`),
    ['1-1-1 completed sales up 4%', '1-1-2 completed costs of ops flat'],
  );
  const childDone = await stateOf(childId);
  assert.ok(childDone.observations.some((o) => /planning refused: task 1-1-1 is at level 3 and a tree may have at most 3 levels/.test(o.content)));
  const subtreeCall = userPrompt(stub.requestsFor(goal, 'task_tree')[1] as StubRequest);
  assert.match(subtreeCall, /Task 1-1 \(Numbers\) decided to plan: split the numbers by source/);
  const lastPrompt = userPrompt(stub.requestsFor(goal, 'react_action').at(-1) as StubRequest);
  assert.match(lastPrompt, /user_reply: ops/, 'the reply, given on the root run, reaches the next iteration of the task in the child run');
  assert.equal(
    done.observations
      .filter((o) => o.kind === 'user_reply')
      .map((o) => o.content)
      .join(),
    'ops',
  );
});

test('the offline demo model drives a small tree with the built-in tools', async () => {
  const { DemoProvider } = await import('../../src/llm/demo-provider');
  const demo = await startTestEnv({ provider: new DemoProvider() });
  try {
    const demoRuns = new Runs(demo.client, demo.config);
    const { runId } = await demoRuns.start({ userId: 'demo', goal: 'what is 12*7 and remember that my color is green', engine: 'tree' });
    const done = (await demo.client.workflow.getHandle(runId).result()) as ExecutionState;
    assert.equal(done.status, 'completed', done.lastError ?? '');
    assert.deepEqual(
      done.tree?.subtasks.map((t) => t.status),
      ['completed', 'completed'],
    );
    assert.match(done.finalAnswer ?? '', /^\[offline demo model\] /);
    assert.match(done.finalAnswer ?? '', /12\*7 = 84\./);
    assert.match(done.finalAnswer ?? '', /I saved your color\./);
    // And a shipped blueprint, as `npm start` shows it with no key.
    const budget = loadBlueprints().find((b) => b.name === 'budget-split');
    assert.ok(budget);
    const fromBlueprint = await demoRuns.start({
      userId: 'demo',
      goal: 'split 120 for 4',
      engine: 'tree',
      blueprint: { name: budget.name, tree: expandBlueprint(budget, { total: 120, people: 4, label: 'dinner' }) },
    });
    const split = (await demo.client.workflow.getHandle(fromBlueprint.runId).result()) as ExecutionState;
    assert.equal(split.status, 'completed', split.lastError ?? '');
    assert.match(split.finalAnswer ?? '', /120\/4 = 30\./);
    assert.match(split.finalAnswer ?? '', /I saved your dinner share\./);
  } finally {
    await demo.stop();
  }
});

test('skip over REST: a pending group is marked at once; the leaf in flight (a 60 s wait) is cancelled and the run goes on; 404 and 409 as the contract says', async () => {
  const goal = 'move house';
  stub.script(goal, {
    task_tree: [
      {
        name: 'Move',
        goal,
        subtasks: [
          { name: 'Pack', goal: 'pack slowly' },
          {
            name: 'Paint',
            goal: 'paint',
            subtasks: [
              { name: 'Walls', goal: 'w' },
              { name: 'Doors', goal: 'd' },
            ],
          },
          { name: 'Keys', goal: 'hand over the keys' },
        ],
      },
    ],
    react_action: [{ thought: 'this takes a while', action: 'tool', tool: 'wait', args: { seconds: 60 } }, finish('keys handed over')],
    final_answer: [{ answer: 'Moved, without packing or painting.' }],
  });
  const runId = await startTree(goal);
  await waitFor('the slow leaf to run', async () => (await stateOf(runId)).tree?.subtasks[0]?.status === 'processing');
  assert.equal((await call('POST', `/v1/runs/${runId}/tasks/1-9/skip`, {})).status, 404);
  const pending = await call('POST', `/v1/runs/${runId}/tasks/1-2/skip`, { reason: 'no time to paint' });
  assert.equal(pending.status, 202);
  const marked = await stateOf(runId);
  assert.deepEqual(
    marked.tree?.subtasks[1]?.subtasks.map((n) => n.status),
    ['skipped', 'skipped'],
  );
  assert.equal(marked.tree?.subtasks[0]?.status, 'processing', 'the leaf in flight goes on');
  const twice = await call<{ error: { code: string } }>('POST', `/v1/runs/${runId}/tasks/1-2/skip`, {});
  assert.equal(twice.status, 409);
  assert.equal(twice.body.error.code, 'not_now');

  const started = Date.now();
  assert.equal((await call('POST', `/v1/runs/${runId}/tasks/1-1/skip`, { reason: 'the movers pack' })).status, 202);
  const done = await result(runId);
  assert.ok(Date.now() - started < 30_000, 'the 60 s wait was cancelled, not waited out');
  assert.equal(done.status, 'completed');
  assert.deepEqual(
    done.tree?.subtasks.map((n) => `${n.index} ${n.status}`),
    ['1-1 skipped', '1-2 skipped', '1-3 completed'],
  );
  assert.match(done.progress ?? '', /-\[x\] 1-1\. "Pack" \(skipped: skipped by the user: the movers pack\)/);
  const lastPrompt = userPrompt(stub.requestsFor(goal, 'react_action').at(-1) as StubRequest);
  assert.match(lastPrompt, /1-2\. "Paint" \(skipped: skipped by the user: no time to paint\)/, 'later iterations see what was skipped and why');
  assert.equal((await call('POST', `/v1/runs/${runId}/tasks/1-3/redo`, {})).status, 409, 'nothing can be redone once the run has ended');
});

test('redo over REST: a completed task runs again after the current one, its previous result and the reason in its prompt', async () => {
  const goal = 'get a quote';
  stub.script(goal, {
    task_tree: [
      {
        name: 'Quote',
        goal,
        subtasks: [
          { name: 'Price', goal: 'ask the price' },
          { name: 'Confirm', goal: 'confirm with the person' },
        ],
      },
    ],
    react_action: [finish('80 EUR'), { thought: 'check', action: 'ask_user', question: 'Book it?' }, finish('confirmed'), finish('70 EUR after discount')],
    final_answer: [{ answer: 'Booked at 70 EUR.' }],
  });
  const runId = await startTree(goal);
  await waitFor('the question', async () => (await stateOf(runId)).status === 'waiting_user');
  assert.equal((await call('POST', `/v1/runs/${runId}/tasks/1-2/redo`, {})).status, 409, 'a task under way cannot be redone');
  assert.equal((await call('POST', `/v1/runs/${runId}/tasks/1-1/redo`, { reason: 'ask for a discount' })).status, 202);
  const queued = await stateOf(runId);
  assert.equal(queued.status, 'waiting_user', 'the question still waits');
  assert.equal(queued.tree?.subtasks[0]?.status, 'queueing');
  assert.equal((await call('POST', `/v1/runs/${runId}/reply`, { text: 'yes' })).status, 202);
  const done = await result(runId);
  assert.equal(done.status, 'completed');
  assert.deepEqual(
    done.tree?.subtasks.map((n) => `${n.index} ${n.status} ${n.result}`),
    ['1-1 completed 70 EUR after discount', '1-2 completed confirmed'],
  );
  const redoPrompt = userPrompt(stub.requestsFor(goal, 'react_action').at(-1) as StubRequest);
  assert.match(redoPrompt, /Current task: 1-1\. Price — ask the price/);
  assert.match(redoPrompt, /A person on this task: redo requested: ask for a discount; previous result: 80 EUR/);
});

test('spin: repeated identical calls get a spin_check, a confirmed spin warns the next iteration, a second aborts the task; a failed call gets a reflection whose lesson the next prompt shows', async () => {
  const goal = 'watch the clock';
  const now = { thought: 'check the time', action: 'tool', tool: 'current_time', args: {} };
  stub.script(goal, {
    task_tree: [
      {
        name: 'Clock',
        goal,
        subtasks: [
          // Optional: aborted, it does not fail the plan.
          { name: 'Watch', goal: 'watch the clock', optional: true },
          { name: 'Count', goal: 'count apples' },
        ],
      },
    ],
    react_action: [now, now, now, { thought: 'add', action: 'tool', tool: 'calculator', args: { expression: 'two apples + 3' } }, tool('2+3'), finish('5 apples')],
    spin_check: [
      { spinning: true, reason: 'the same call twice' },
      { spinning: true, reason: 'still the same call' },
    ],
    reflection: [{ assessment: 'the calculator reads numbers, not words.', lesson: 'write numbers as digits' }],
    final_answer: [{ answer: 'Gave up watching; 5 apples.' }],
  });
  const runId = await startTree(goal);
  const done = await result(runId);
  assert.equal(done.status, 'completed', done.lastError ?? '');
  assert.deepEqual(
    done.tree?.subtasks.map((n) => `${n.index} ${n.status} ${n.summary}`),
    ['1-1 aborted stopped: going round in circles (still the same call)', '1-2 completed 5 apples'],
  );
  const prompts = stub.requestsFor(goal, 'react_action').map(userPrompt);
  assert.match(prompts[2] ?? '', /warning: this task repeats the same call without progress \(the same call twice\)/, 'the warning reaches the next iteration');
  assert.match(prompts[4] ?? '', /reflection on the failed action: the calculator reads numbers, not words\. Lesson: write numbers as digits/, 'the lesson reaches the next iteration');
  assert.match(userPrompt(stub.requestsFor(goal, 'reflection')[0] as StubRequest), /calculator\(\{"expression":"two apples \+ 3"\}\): error:/);
  assert.equal(stub.requestsFor(goal, 'spin_check').length, 2);
});

test('blueprints over REST: listed with their parameter schemas; a run starts from one with validated params and runs its tree', async () => {
  const list = await call<{ blueprints: { name: string; description: string; params: { required?: string[] } }[] }>('GET', '/v1/blueprints');
  assert.equal(list.status, 200);
  assert.deepEqual(
    list.body.blueprints.map((b) => [b.name, b.params.required]),
    [
      ['budget-split', ['total', 'people', 'label']],
      ['time-check', ['home', 'away']],
    ],
  );
  const bad = await call<{ error: { message: string } }>('POST', '/v1/runs', {
    userId: 'tree-tester',
    goal: 'split dinner',
    engine: 'tree',
    blueprint: 'budget-split',
    params: { total: 'lots', people: 4 },
  });
  assert.equal(bad.status, 400);
  assert.match(bad.body.error.message, /params do not fit blueprint "budget-split"/);

  const goal = 'split the dinner bill';
  stub.script(goal, { react_action: [tool('120/4'), finish('30 each'), finish('noted')], final_answer: [{ answer: '30 each, noted.' }] });
  const runId = await startTree(goal, { blueprint: 'budget-split', params: { total: 120, people: 4, label: 'dinner' } });
  const done = await result(runId);
  assert.equal(done.status, 'completed', done.lastError ?? '');
  assert.equal(stub.requestsFor(goal, 'task_tree').length, 0, 'the blueprint is the plan: no task_tree call');
  assert.deepEqual(
    done.tree?.subtasks.map((n) => `${n.index} ${n.goal} ${n.status}`),
    ['1-1 Calculate 120/4 completed', '1-2 Remember that my dinner share is 120/4 completed'],
  );
  assert.equal(done.tree?.name, 'Split 120 between 4');

  // Its memory thread (issue 34): opened at the first iteration, with the plan, each step and each task's result, and the answer.
  assert.equal(done.threadId, `thread_${runId}`);
  const { memory, close } = await openMemory(env.config);
  try {
    const { chunks } = await memory.view(done.threadId ?? '');
    const lines = chunks.map((c) => `${c.type} ${renderContent(c.content)}`);
    assert.equal(chunks[0]?.type, 'delegation', 'the goal comes first');
    assert.ok(
      lines.some((l) => l.startsWith('workflow') && /task_tree/.test(l) && /1-1\. "Compute the share"/.test(l)),
      `the plan, in: ${lines.join(' | ')}`,
    );
    assert.ok(
      lines.some((l) => l.startsWith('action ') && /calculator/.test(l)),
      'the tool step',
    );
    assert.ok(
      lines.some((l) => l === 'thinking task 1-1 finished: 30 each'),
      'the first task’s result',
    );
    assert.ok(
      lines.some((l) => l === 'thinking task 1-2 finished: noted'),
      'the last task’s result, written by the answer’s call',
    );
    assert.equal(lines.at(-1), 'output 30 each, noted.');
    assert.equal(lines.filter((l) => l.startsWith('workflow')).length, 1, 'the plan is written once');
  } finally {
    await close();
  }
});

test('a ReAct iteration invokes a blueprint: blueprint_params repaired until they fit the schema, its tree runs as the task’s subtree', async () => {
  const goal = 'plan the dinner costs';
  stub.script(goal, {
    task_tree: [{ name: 'Dinner', goal, subtasks: [{ name: 'Costs', goal: 'split the costs of the dinner' }] }],
    react_action: [{ thought: 'a ready-made plan fits', action: 'blueprint', blueprint: 'budget-split' }, finish('25 each'), finish('noted')],
    blueprint_params: [{ params: { total: 'a hundred', people: 4, label: 'dinner' } }, { params: { total: 100, people: 4, label: 'dinner' } }],
    final_answer: [{ answer: '25 each.' }],
  });
  const runId = await startTree(goal);
  const done = await result(runId);
  assert.equal(done.status, 'completed', done.lastError ?? '');
  assert.deepEqual(
    done.tree?.subtasks[0]?.subtasks.map((n) => `${n.index} ${n.goal} ${n.status}`),
    ['1-1-1 Calculate 100/4 completed', '1-1-2 Remember that my dinner share is 100/4 completed'],
  );
  const calls = stub.requestsFor(goal, 'blueprint_params');
  assert.equal(calls.length, 2, 'the invalid params were sent back once');
  assert.match(lastMessage(calls[1]), /params do not fit the blueprint's schema/);
  assert.match(userPrompt(calls[0] as StubRequest), /Blueprint budget-split: Split a shared cost/);
  assert.match(stub.requestsFor(goal, 'react_action')[0]?.messages[0]?.content ?? '', /Blueprints:\n- budget-split: /, 'the model is offered the blueprints');
});

test("spin by action type (seed 003): one tool called again and again with other arguments is judged by the model; a confirmed spin warns the task's next iteration", async () => {
  const goal = 'guess the magic number';
  const guesses = [1, 2, 3, 4, 5, 6].map((n) => tool(`${n}*7`));
  stub.script(goal, {
    task_tree: [{ name: 'Guess', goal, subtasks: [{ name: 'Try', goal: 'try numbers until one fits', optional: true }] }],
    react_action: guesses,
    spin_check: [{ spinning: true, reason: 'trying numbers one by one with no plan' }],
    final_answer: [{ answer: 'No magic number.' }],
  });
  const runId = await startTree(goal);
  const done = await result(runId);
  assert.equal(done.status, 'completed', done.lastError ?? '');
  const checks = stub.requestsFor(goal, 'spin_check');
  assert.equal(checks.length, 1, 'asked once, after the sixth call');
  assert.match(userPrompt(checks[0] as StubRequest), /6\*7/, 'the check sees the calls');
  assert.ok(
    done.observations.some((o) => /warning: this task repeats the same call without progress \(trying numbers one by one with no plan\)/.test(o.content)),
    'the confirmed spin is a warning the task records',
  );
  // MAX_ITERATIONS is 6 here: the task then gives up.
  assert.match(done.tree?.subtasks[0]?.summary ?? '', /gave up after 6 iterations/);
});

test('a task that cannot be done fails the plan (seed 003) unless the plan marks it optional: the run fails, saying which task and why', async () => {
  const goal = 'open the locked door';
  const nudge = { thought: 'push', action: 'tool', tool: 'current_time', args: {} };
  stub.script(goal, {
    task_tree: [
      {
        name: 'Door',
        goal,
        subtasks: [
          { name: 'Open', goal: 'open the door' },
          { name: 'Enter', goal: 'go in' },
        ],
      },
    ],
    react_action: [nudge, nudge, nudge, nudge, nudge],
    spin_check: [
      { spinning: true, reason: 'pushing a locked door' },
      { spinning: true, reason: 'still pushing' },
    ],
  });
  const runId = await startTree(goal);
  const done = await result(runId);
  assert.equal(done.status, 'failed');
  assert.equal(done.lastError, 'task 1-1 could not be done (stopped: going round in circles (still pushing)), and the plan needs it');
  assert.equal(done.tree?.subtasks[1]?.status, 'created', 'the task after it never started');
  assert.equal(stub.requestsFor(goal, 'final_answer').length, 0);
});

test('ReAct first over REST (engine "react"): a run answers directly with no tree; another plans a tree only when its loop decides to', async () => {
  const direct = 'what is 6 times 7';
  stub.script(direct, { react_action: [tool('6*7'), finish('42')] });
  const runId = await startTree(direct, { engine: 'react' });
  const done = await result(runId);
  assert.equal(done.status, 'completed', done.lastError ?? '');
  assert.equal(done.entry, 'react');
  assert.equal(done.finalAnswer, '42');
  assert.deepEqual(
    done.steps.map((s) => [s.task, s.type]),
    [
      ['1', 'tool'],
      ['1', 'reason'],
    ],
  );
  assert.equal(stub.requestsFor(direct, 'task_tree').length, 0, 'no tree was proposed');
  assert.equal(stub.requestsFor(direct, 'final_answer').length, 0, 'the loop’s result is the answer');

  const big = 'plan my move to Lyon';
  stub.script(big, {
    react_action: [{ thought: 'this needs several steps', action: 'plan', goal: 'split the move' }, finish('van booked'), finish('boxes bought')],
    task_tree: [
      {
        name: 'Move',
        goal: 'split the move',
        subtasks: [
          { name: 'Van', goal: 'book a van' },
          { name: 'Boxes', goal: 'buy boxes' },
        ],
      },
    ],
    final_answer: [{ answer: 'Van booked and boxes bought.' }],
  });
  const planned = await result(await startTree(big, { engine: 'react' }));
  assert.equal(planned.status, 'completed', planned.lastError ?? '');
  assert.deepEqual(
    planned.tree?.subtasks.map((n) => `${n.index} ${n.status} ${n.result}`),
    ['1-1 completed van booked', '1-2 completed boxes bought'],
  );
  assert.equal(planned.finalAnswer, 'Van booked and boxes bought.');
  assert.match(userPrompt(stub.requestsFor(big, 'task_tree')[0] as StubRequest), /Task 1 \(plan my move to Lyon\) decided to plan: split the move/);

  const refused = await call<{ error: { message: string } }>('POST', '/v1/runs', { userId: 'tree-tester', goal: 'x', engine: 'react', blueprint: 'research-topic' });
  assert.equal(refused.status, 400);
  const notTree = await call<{ error: { message: string } }>('POST', '/v1/runs', { userId: 'tree-tester', goal: 'x', reflection: 'periodic' });
  assert.equal(notTree.status, 400);
});

test('loop guards over REST: periodic reflection takes stock before the limit; a task stopped at its limit is summarised, and the summary is its result', async () => {
  const goal = 'keep checking things';
  const time = (timezone: string) => ({ thought: `time in ${timezone}`, action: 'tool', tool: 'current_time', args: { timezone } });
  stub.script(goal, {
    task_tree: [
      {
        name: 'Checks',
        goal,
        subtasks: [
          { name: 'Check', goal: 'check things', optional: true },
          { name: 'Report', goal: 'report' },
        ],
      },
    ],
    // Six different calls, tools alternating: no spin, and the task reaches its limit (MAX_ITERATIONS 6).
    react_action: [tool('1+1'), time('UTC'), tool('2+2'), time('Europe/Paris'), tool('3+3'), time('Asia/Tokyo'), finish('reported')],
    reflection: [{ assessment: 'five checks, nothing new', lesson: 'stop checking' }],
    task_summary: [{ summary: 'checked the sums 2, 4 and 6 and three clocks' }],
    final_answer: [{ answer: 'Checked; reported.' }],
  });
  const done = await result(await startTree(goal, { reflection: 'periodic' }));
  assert.equal(done.status, 'completed', done.lastError ?? '');
  const check = done.tree?.subtasks[0];
  assert.equal(check?.status, 'aborted');
  assert.equal(check?.result, 'checked the sums 2, 4 and 6 and three clocks');
  assert.match(check?.summary ?? '', /^gave up after 6 iterations: checked the sums/);
  // One iteration before the limit the task took stock (critical), and the last iteration saw its lesson.
  assert.match(userPrompt(stub.requestsFor(goal, 'reflection')[0] as StubRequest), /One iteration is left/);
  assert.match(userPrompt(stub.requestsFor(goal, 'react_action')[5] as StubRequest), /reflection \(critical\): five checks, nothing new Lesson: stop checking/);
  // The task after it sees what it reached.
  assert.match(userPrompt(stub.requestsFor(goal, 'react_action')[6] as StubRequest), /1-1 \(aborted\): checked the sums 2, 4 and 6/);
});
