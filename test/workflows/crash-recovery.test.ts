/**
 * Crash recovery: the worker process is SIGKILLed in the middle of a run (or of a
 * session's turn) and a new one finishes it. No completed step — model call or
 * tool — runs twice.
 */
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import type { ExecutionState } from '../../src/planning/execution-state';
import { connectClient } from '../../src/temporal/connection';
import { Runs } from '../../src/temporal/runs';
import { Sessions } from '../../src/temporal/sessions';
import { openMemory } from '../../src/store/open-memory';
import { answer, cont, respondStep, toolStep } from '../helpers/scenarios';
import { startCrashWorker } from '../helpers/crash-workers';
import { StubModelServer } from '../helpers/stub-model-server';
import { callsOf, testConfig, waitFor, type CallInHistory } from '../helpers/temporal-env';
import { isDeferred, isNeedsState, isTimed, LOCAL_CALL_MAX_MS } from '../../src/engine/local-calls';

const stub = new StubModelServer();
const config = testConfig();

const startWorker = () => startCrashWorker(config, stub.url);

/**
 * A run's calls, each with where the rule of src/workflows/calls.ts puts it, from the calls before it: locally when
 * the last settled call came back within LOCAL_CALL_MAX_MS (`firstMs`: the starter's, null when unknown), else as a
 * regular activity (`slowBefore`); a local call that hands over (Deferred) goes on as a regular activity (`handOver`),
 * and one whose worker lacked the run's state (NeedsState) is made again locally with the whole state.
 */
function placedByRule(calls: CallInHistory[], firstMs: number | null) {
  let lastMs = firstMs;
  let goesOn: 'local' | 'regular' | undefined;
  return calls.map((call) => {
    const quickBefore = lastMs !== null && lastMs <= LOCAL_CALL_MAX_MS;
    const ms = isTimed(call.result) ? call.result.ms : null;
    const placed = { ...call, ms, ruleSaysLocal: goesOn ? goesOn === 'local' : quickBefore, handOver: goesOn === 'regular', slowBefore: !goesOn && !quickBefore };
    const answer = isTimed(call.result) ? call.result.value : call.result;
    if (call.local && isDeferred(answer)) goesOn = 'regular';
    else if (call.local && isNeedsState(answer)) goesOn = goesOn === 'local' ? 'regular' : 'local';
    else [goesOn, lastMs] = [undefined, ms];
    return placed;
  });
}

const workers: ChildProcess[] = [];
before(async () => {
  await stub.start();
});
after(async () => {
  for (const w of workers) if (w.exitCode === null && w.signalCode === null) w.kill('SIGKILL');
  await stub.stop();
});

test('a run survives SIGKILL of its worker and no completed step runs twice', async () => {
  const goal = 'survive a crash';
  // The wait lasts long enough that the kill lands inside it however slowly the machine notices it started.
  stub.script(goal, {
    execution_plan: [{ steps: [toolStep('tally', { label: 'before' }), toolStep('wait', { seconds: 8 }), toolStep('tally', { label: 'after' }), respondStep] }],
    replan_decision: [cont, cont, cont],
    final_answer: [answer('survived')],
  });
  workers.push(await startWorker());
  const client = await connectClient(config);
  const runs = new Runs(client, config);
  const { runId } = await runs.start({ userId: 'crash-tester', goal });

  // Kill the worker while the `wait` step is in flight: s1 and its replan are done by then.
  await waitFor(
    'the wait step to start',
    async () => {
      const s = await runs.get(runId);
      return s.currentStepId === 's2' && s.steps[1]?.status === 'running';
    },
    60_000,
  );
  await new Promise((r) => setTimeout(r, 500));
  workers[0]!.kill('SIGKILL');
  await new Promise((r) => workers[0]!.once('exit', r));

  workers.push(await startWorker());
  const state = (await client.workflow.getHandle(runId).result()) as ExecutionState;
  await client.connection.close();

  assert.equal(state.status, 'completed');
  assert.equal(state.finalAnswer, 'survived');
  assert.deepEqual(
    state.steps.map((s) => s.status),
    ['completed', 'completed', 'completed', 'completed'],
  );
  // Tools: each completed tally step ran exactly once.
  const tally = readFileSync(path.join(config.dataDir, 'tally.log'), 'utf8').trim().split('\n');
  assert.deepEqual(tally, ['before', 'after']);
  // Model calls: exactly one per completed call — nothing repeated after the crash.
  assert.equal(stub.requestsFor(goal, 'execution_plan').length, 1);
  assert.equal(stub.requestsFor(goal, 'replan_decision').length, 3);
  assert.equal(stub.requestsFor(goal, 'final_answer').length, 1);
  assert.equal(stub.misses.length, 0);
});

test('a tree run survives SIGKILL of its worker mid-leaf: no tool call and no model call runs twice', async () => {
  const goal = 'survive a crash in a tree';
  const act = (tool: string, args: Record<string, unknown>) => ({ thought: `call ${tool}`, action: 'tool', tool, args });
  const finish = (result: string) => ({ thought: 'done', action: 'finish', result });
  stub.script(goal, {
    task_tree: [
      {
        name: 'Crash',
        goal,
        subtasks: [
          { name: 'Before', goal: 'tally before' },
          { name: 'Wait', goal: 'wait a bit' },
          { name: 'After', goal: 'tally after' },
        ],
      },
    ],
    react_action: [act('tally', { label: 'tree-before' }), finish('counted'), act('wait', { seconds: 8 }), finish('waited'), act('tally', { label: 'tree-after' }), finish('counted again')],
    final_answer: [answer('tree survived')],
  });
  workers.push(await startWorker());
  const client = await connectClient(config);
  const runs = new Runs(client, config);
  const { runId } = await runs.start({ userId: 'crash-tester', goal, engine: 'tree' });

  // Kill the worker while task 1-2's `wait` is in flight: its react_action reply is journaled by then.
  await waitFor(
    'task 1-2 to be under way',
    async () => {
      const s = await runs.get(runId);
      return s.tree?.subtasks[1]?.status === 'processing' && s.tree.subtasks[1].iterations === 1;
    },
    60_000,
  );
  await new Promise((r) => setTimeout(r, 1_000));
  // Every worker of this queue (the first test's second one too): the leaf in flight must be cut off.
  const alive = workers.filter((w) => w.exitCode === null && w.signalCode === null); // a killed one has signalCode set
  await Promise.all(alive.map((w) => new Promise((r) => (w.once('exit', r), w.kill('SIGKILL')))));

  workers.push(await startWorker());
  const state = (await client.workflow.getHandle(runId).result()) as ExecutionState;
  await client.connection.close();

  assert.equal(state.status, 'completed');
  assert.equal(state.finalAnswer, 'tree survived');
  assert.deepEqual(
    state.tree?.subtasks.map((t) => `${t.index} ${t.status} ${t.result}`),
    ['1-1 completed counted', '1-2 completed waited', '1-3 completed counted again'],
  );
  const tally = readFileSync(path.join(config.dataDir, 'tally.log'), 'utf8')
    .trim()
    .split('\n')
    .filter((l) => l.startsWith('tree-'));
  assert.deepEqual(tally, ['tree-before', 'tree-after']);
  assert.equal(stub.requestsFor(goal, 'task_tree').length, 1);
  assert.equal(stub.requestsFor(goal, 'react_action').length, 6, 'the in-flight iteration did not ask the model again');
  assert.equal(stub.requestsFor(goal, 'final_answer').length, 1);
  assert.equal(stub.misses.length, 0);
});

test('a worker killed in the middle of a chain of local calls: the next worker replays the chain from the journal and repeats no finished step', async () => {
  const goal = 'survive a crash between local calls';
  let entered = false;
  stub.script(goal, {
    execution_plan: [{ steps: [toolStep('tally', { label: 'local-one' }), toolStep('tally', { label: 'local-two' }), toolStep('wait', { seconds: 1 }), respondStep] }],
    replan_decision: [
      cont,
      // The second step's replan holds its workflow task open (its local calls not yet in history) while the worker dies.
      async () => {
        entered = true;
        await new Promise((r) => setTimeout(r, 3_000));
        return cont;
      },
      cont, // the same replan, asked again by the next worker: the call in flight was never finished
      cont,
    ],
    final_answer: [answer('survived again')],
  });
  const alive = workers.filter((w) => w.exitCode === null && w.signalCode === null);
  await Promise.all(alive.map((w) => new Promise((r) => (w.once('exit', r), w.kill('SIGKILL')))));
  workers.push(await startWorker());
  const client = await connectClient(config);
  const runs = new Runs(client, config);
  // A worker's first model call is slow (connections, caches): warm it, so the run's calls are fast from its first.
  const warmUp = 'warm the worker up';
  stub.script(warmUp, { execution_plan: [{ steps: [respondStep] }], final_answer: [answer('warm')] });
  await client.workflow.getHandle((await runs.start({ userId: 'crash-tester', goal: warmUp })).runId).result();
  const { runId } = await runs.start({ userId: 'crash-tester', goal });
  await waitFor('the second local step to be replanning', async () => entered, 60_000);
  workers.at(-1)!.kill('SIGKILL');
  await new Promise((r) => workers.at(-1)!.once('exit', r));

  workers.push(await startWorker());
  const handle = client.workflow.getHandle(runId);
  const state = (await handle.result()) as ExecutionState;
  const history = await handle.fetchHistory();
  // Its starter gave no call's time: the plan call is a regular activity.
  const calls = placedByRule(await callsOf(client, runId), null);
  await client.connection.close();

  assert.equal(state.status, 'completed', JSON.stringify({ lastError: state.lastError, steps: state.steps.map((x) => [x.id, x.status]) }));
  assert.equal(state.finalAnswer, 'survived again', state.lastError ?? '');
  const tally = readFileSync(path.join(config.dataDir, 'tally.log'), 'utf8')
    .trim()
    .split('\n')
    .filter((l) => l.startsWith('local-'));
  assert.deepEqual(tally, ['local-one', 'local-two'], 'each quick tool ran once, though its result reached history only after the crash');
  assert.equal(stub.requestsFor(goal, 'execution_plan').length, 1);
  assert.equal(stub.requestsFor(goal, 'replan_decision').length, 4, "the first step's replan was journaled, not asked again");
  assert.equal(stub.misses.length, 0);
  // The quick steps ran as local activities (markers), the one in flight at the crash too: the new worker lacks the
  // state its local call would patch, so the call answers NeedsState and is made again locally with the whole state,
  // under the same key (the step journal keeps the tool from running again). Only `wait`'s step (not a quick tool)
  // ran as a regular activity. A loaded machine can make a call take more than LOCAL_CALL_MAX_MS: the call after it is
  // then a regular activity, by the same rule, and a quick step may run as one.
  const events = history.events ?? [];
  const localCalls = events.filter((e) => e.markerRecordedEventAttributes?.markerName === 'core_local_activity').length;
  const regularSteps = events.filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'executeStep').length;
  const types = calls.map((c) => `${c.local ? 'local:' : ''}${c.activity} (${c.ms ?? '-'} ms)`).join(', ');
  for (const [i, call] of calls.entries()) assert.equal(call.local, call.ruleSaysLocal, `call ${i} is placed as the calls before it say: ${types}`);
  // Which step each regular executeStep made, from its input.
  const regularStepIds = events.flatMap((e) => {
    const scheduled = e.activityTaskScheduledEventAttributes;
    const data = scheduled?.activityType?.name === 'executeStep' ? scheduled.input?.payloads?.[0]?.data : undefined;
    return data ? [(JSON.parse(Buffer.from(data).toString()) as { stepId?: string }).stepId] : [];
  });
  const regular = calls.filter((c) => c.activity === 'executeStep' && !c.local);
  assert.equal(regularStepIds.length, regular.length);
  assert.deepEqual(
    regularStepIds.filter((id) => id === 's3'),
    ['s3'],
    `the wait step ran as a regular activity, once: ${types}`,
  );
  for (const [i, call] of regular.entries()) {
    if (regularStepIds[i] !== 's3') assert.ok(call.slowBefore, `quick step ${regularStepIds[i]} ran as a regular activity only after a slow call: ${types}`);
    if (call.handOver) assert.equal(regularStepIds[i], 's3', `only the wait step hands over: ${types}`);
  }
  if (regular.every((c, i) => regularStepIds[i] === 's3')) {
    assert.ok(localCalls >= 3, `expected the quick steps and replans as local calls, got ${types}`);
    assert.equal(regularSteps, 1, `regular steps: ${types}`);
  }
});

test("a worker killed while a session's run works on it: the run, started on that worker at once, is taken over and answers, and the conversation has each turn once", async () => {
  const goal = 'survive a crash in a session turn';
  let entered = false;
  stub.script(goal, {
    execution_plan: [
      // The run's first call holds the workflow task that came back with its eager start while the worker dies.
      async () => {
        entered = true;
        await new Promise((r) => setTimeout(r, 3_000));
        return { steps: [respondStep] };
      },
      { steps: [respondStep] }, // asked again by the next worker: the call in flight was never finished
    ],
    final_answer: [answer('the session survived')],
  });
  const alive = workers.filter((w) => w.exitCode === null && w.signalCode === null);
  await Promise.all(alive.map((w) => new Promise((r) => (w.once('exit', r), w.kill('SIGKILL')))));
  workers.push(await startWorker());
  const client = await connectClient(config);
  const memory = await openMemory(config);
  const sessions = new Sessions(client, memory.memory, config);
  const { sessionId } = await sessions.create({ userId: 'crash-tester' });
  const outcome = await sessions.send(sessionId, goal);
  assert.equal(outcome.kind, 'new_run');
  await waitFor('the run to be planning', async () => entered, 60_000);
  workers.at(-1)!.kill('SIGKILL');
  await new Promise((r) => workers.at(-1)!.once('exit', r));

  workers.push(await startWorker());
  const state = (await client.workflow.getHandle(outcome.runId ?? '').result()) as ExecutionState;
  assert.equal(state.status, 'completed', state.lastError ?? '');
  assert.equal(state.finalAnswer, 'the session survived');
  const view = await waitFor(
    'the session to show the answer',
    async () => {
      const v = await sessions.get(sessionId);
      return v.chatHistory.some((t) => t.role === 'assistant' && t.text === 'the session survived') ? v : null;
    },
    60_000,
  );
  assert.equal(view.runs.find((r) => r.runId === outcome.runId)?.status, 'completed');
  const turns = view.chatHistory.map((t) => `${t.role}: ${t.text}`);
  assert.deepEqual(turns, [`user: ${goal}`, 'assistant: the session survived'], 'each turn once in the thread');
  assert.equal(stub.requestsFor(goal, 'final_answer').length, 1);
  assert.equal(stub.misses.length, 0);
  await client.workflow.getHandle(sessionId).terminate();
  await memory.close();
  await client.connection.close();
});

test('a call held for approval survives SIGKILL of its worker: approved on the next worker, the tool runs exactly once and the run completes', async () => {
  const goal = 'tally once approved, across a crash';
  stub.script(goal, {
    execution_plan: [{ steps: [toolStep('tally', { label: 'held-approved' }), respondStep] }],
    replan_decision: [cont],
    final_answer: [answer('approved and counted')],
  });
  // Only this test's worker runs: the one killed holds the run's sticky workflow state.
  const alive = workers.filter((w) => w.exitCode === null && w.signalCode === null);
  await Promise.all(alive.map((w) => new Promise((r) => (w.once('exit', r), w.kill('SIGKILL')))));
  workers.push(await startWorker());
  const client = await connectClient(config);
  const runs = new Runs(client, config);
  const { runId } = await runs.start({ userId: 'crash-tester', goal, approval: ['tally'] });
  const held = await waitFor(
    'the call to wait for approval',
    async () => {
      const s = await runs.get(runId);
      return s.status === 'waiting_approval' ? s : undefined;
    },
    60_000,
  );
  assert.deepEqual(held.pendingApproval, { stepId: 's1', tool: 'tally', args: { label: 'held-approved' }, reason: 'TOOL_APPROVAL tally' });

  workers.at(-1)!.kill('SIGKILL');
  await new Promise((r) => workers.at(-1)!.once('exit', r));
  workers.push(await startWorker());
  // The wait is durable: the next worker replays the run to it, and the decision is taken there. (Until the
  // server gives up on the dead worker's sticky queue, a query can time out: asked again until one answers.)
  await waitFor('the next worker to show the held call', async () => (await runs.get(runId).catch(() => undefined))?.status === 'waiting_approval', 60_000);
  await runs.approve(runId, { stepId: 's1', decision: 'approve' });
  const state = (await client.workflow.getHandle(runId).result()) as ExecutionState;
  await client.connection.close();

  assert.equal(state.status, 'completed');
  assert.equal(state.finalAnswer, 'approved and counted');
  assert.equal(state.pendingApproval, null);
  assert.deepEqual(
    state.steps.map((s) => s.status),
    ['completed', 'completed'],
  );
  const tally = readFileSync(path.join(config.dataDir, 'tally.log'), 'utf8')
    .trim()
    .split('\n')
    .filter((l) => l.startsWith('held-'));
  assert.deepEqual(tally, ['held-approved'], 'the approved call ran exactly once');
  assert.equal(stub.requestsFor(goal, 'execution_plan').length, 1);
  assert.equal(stub.requestsFor(goal, 'replan_decision').length, 1);
  assert.equal(stub.requestsFor(goal, 'final_answer').length, 1);
});
