/** Seed 003's tree engine, pure (src/engine/tree-engine.ts): which commands for which events, without Temporal. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TreeEngine, type TreeCommand, type TreeEngineInput } from '../../src/engine/tree-engine';
import type { ExecutionState } from '../../src/planning/execution-state';
import { buildTree } from '../../src/planning/task-tree';
import type { ReactActionReply } from '../../src/calls/react-action';
import type { TaskTreeReply } from '../../src/calls/task-tree';

const T0 = new Date('2026-01-01T00:00:00Z');
const TREE: TaskTreeReply = {
  name: 'Trip',
  goal: 'Plan a trip',
  subtasks: [
    {
      name: 'Travel',
      goal: 'Get there',
      subtasks: [
        { name: 'Train', goal: 'Book a train' },
        { name: 'Hotel', goal: 'Book a hotel' },
      ],
    },
    { name: 'Food', goal: 'Where to eat' },
  ],
};

function engine(over: Partial<TreeEngineInput> = {}): TreeEngine {
  return new TreeEngine(
    {
      runId: 'run-t',
      userId: 'alice',
      goal: 'Plan a trip',
      reportTo: null,
      review: false,
      limits: { maxSteps: 25, maxDepth: 2 },
      treeLimits: { maxDepth: 3, maxFanout: 5, maxIterations: 3 },
      ...over,
    },
    T0,
  );
}
/** A child run scoped to `index` of TREE (as the parent hands it over). */
function scoped(index: string): TreeEngine {
  return engine({ runId: `run-t.t${index}`, parentRunId: 'run-t', scope: { index, tree: buildTree(TREE), rootRunId: 'run-t' } });
}
const kinds = (cs: TreeCommand[]) => cs.map((c) => (c.kind === 'call' ? `call:${c.activity}` : c.kind === 'status' ? `status:${c.status}` : c.kind));
const proposed = (tree: TaskTreeReply = TREE) => ({ kind: 'result' as const, activity: 'proposeTree' as const, value: { tree, model: 'm', threadId: 'thread_run-t' } });
const acted = (reply: ReactActionReply, observation: { kind: 'tool' | 'error'; content: string } | null = null) => ({
  kind: 'result' as const,
  activity: 'reactStep' as const,
  value: { reply, observation },
});
const finish = (result: string) => acted({ thought: 'done', action: 'finish', result });
/** The task index of the iteration a batch asks for. */
const iterationOf = (cs: TreeCommand[]) => {
  const last = cs.at(-1);
  return last?.kind === 'call' && last.activity === 'reactStep' ? last.input.taskIndex : null;
};

test('a run executes its own leaves in DFS order and hands each group to a child run, then answers', () => {
  const e = engine();
  assert.deepEqual(kinds(e.start(T0)), ['call:proposeTree']);
  const first = e.handle(proposed(), T0);
  assert.deepEqual(kinds(first), ['status:running', 'start_child']);
  const start = first.at(-1);
  assert.ok(start?.kind === 'start_child');
  assert.equal(start.workflowId, 'run-t.t1-1');
  assert.equal(start.input.goal, 'Plan a trip', 'a child keeps the person’s goal; its task is its scope');
  assert.equal(start.input.scope?.index, '1-1');
  assert.equal(start.input.scope?.tree.subtasks.length, 2, 'the child gets the whole tree, for the root’s progress in its prompts');
  assert.equal(e.state.tree?.subtasks[0]?.childRunId, 'run-t.t1-1');
  assert.equal(e.state.planId, 'run-t#tree1');

  // The child ran the group: its subtree comes back and replaces ours.
  const child = scoped('1-1');
  child.start(T0);
  child.handle(acted({ thought: 'look it up', action: 'tool', tool: 'calculator', args: { expression: '1+1' } }, { kind: 'tool', content: '{"value":2}' }), T0);
  child.handle(finish('train booked'), T0);
  assert.deepEqual(kinds(child.handle(finish('hotel booked'), T0)), ['status:completed', 'end']);
  assert.equal(child.state.finalAnswer, '1-1-1: train booked\n1-1-2: hotel booked');

  const next = e.handle({ kind: 'child_ended', value: child.state }, T0);
  assert.equal(iterationOf(next), '1-2');
  assert.equal(e.state.tree?.subtasks[0]?.status, 'completed');
  assert.equal(e.state.tree?.subtasks[0]?.subtasks[1]?.result, 'hotel booked');
  assert.deepEqual(kinds(e.handle(finish('bouchons'), T0)), ['call:treeAnswer']);
  assert.deepEqual(kinds(e.handle({ kind: 'result', activity: 'treeAnswer', value: { answer: 'all set' } }, T0)), ['status:completed', 'close', 'end']);
  assert.deepEqual(
    e.state.steps.map((s) => [s.task, s.type, s.status]),
    [
      ['1-1', 'subplan', 'completed'],
      ['1-2', 'reason', 'completed'],
    ],
  );
  assert.match(e.state.progress ?? '', /^-\[x\] 1\. "Trip" \(finished\)\n -\[x\] 1-1\. "Travel" \(finished\)\n {2}-\[x\] 1-1-1\. "Train" \(finished: train booked\)/);
});

test('a child run that fails leaves its unfinished tasks aborted with the reason, and the parent goes on', () => {
  const e = engine();
  e.start(T0);
  e.handle(proposed(), T0);
  const child = scoped('1-1');
  child.start(T0);
  child.handle({ kind: 'failed', error: 'model down' }, T0);
  assert.equal(iterationOf(e.handle({ kind: 'child_ended', value: child.state }, T0)), '1-2');
  const group = e.state.tree?.subtasks[0];
  assert.equal(group?.status, 'aborted');
  assert.deepEqual(
    group?.subtasks.map((n) => n.status),
    ['aborted', 'aborted'],
  );
  assert.match(e.state.observations.at(-1)?.content ?? '', /task 1-1 \(run run-t\.t1-1\) ended failed: model down/);
});

test('review: the run waits with its plan; a stale planId is refused; revise asks the model again; an edited tree is re-indexed', () => {
  const e = engine({ review: true });
  e.start(T0);
  assert.deepEqual(kinds(e.handle(proposed(), T0)), ['status:waiting_review', 'await_person']);
  assert.match(e.reviewProblem({ decision: 'approve', planId: 'run-t#tree0' }) ?? '', /not the plan under review/);
  assert.equal(e.reviewProblem({ decision: 'approve', planId: 'run-t#tree1' }), null);
  const tooWide: TaskTreeReply = { name: 'x', goal: 'x', subtasks: Array.from({ length: 6 }, (_, i) => ({ name: `t${i}`, goal: 'g' })) };
  assert.match(e.reviewProblem({ decision: 'approve', planId: 'run-t#tree1', tree: tooWide }) ?? '', /at most 5/);

  const revise = e.handle({ kind: 'review', decision: 'revise', planId: 'run-t#tree1', feedback: 'skip the hotel' }, T0);
  assert.deepEqual(kinds(revise), ['status:planning', 'call:proposeTree']);
  const call = revise.at(-1);
  assert.ok(call?.kind === 'call' && call.activity === 'proposeTree' && call.input.feedback === 'skip the hotel');
  e.handle(proposed(), T0);
  assert.equal(e.state.planId, 'run-t#tree2');
  assert.equal(e.state.status, 'waiting_review');

  const edited: TaskTreeReply = { name: 'Trip', goal: 'Plan a trip', subtasks: [{ name: 'Food', goal: 'Where to eat' }] };
  const approved = e.handle({ kind: 'review', decision: 'approve', planId: 'run-t#tree2', tree: edited }, T0);
  assert.deepEqual(kinds(approved), ['status:running', 'call:reactStep']);
  assert.equal(iterationOf(approved), '1-1');
  assert.equal(e.state.tree?.subtasks[0]?.name, 'Food');
  assert.equal(e.state.planId, 'run-t#tree3');
  assert.equal(e.reviewProblem({ decision: 'approve', planId: 'run-t#tree3' }), 'run is running, not waiting for a review');
});

test('reject ends the run cancelled with the reason', () => {
  const e = engine({ review: true });
  e.start(T0);
  e.handle(proposed(), T0);
  assert.deepEqual(kinds(e.handle({ kind: 'review', decision: 'reject', planId: 'run-t#tree1', feedback: 'not now' }, T0)), ['status:cancelled', 'close', 'end']);
  assert.equal(e.state.lastError, 'plan rejected: not now');
});

test('planning as an action: subtasks go under the leaf, which becomes a group run as a child; at the depth limit the action is refused', () => {
  const e = engine();
  e.start(T0);
  e.handle(
    proposed({
      name: 'r',
      goal: 'g',
      subtasks: [
        { name: 'Big', goal: 'big job' },
        { name: 'After', goal: 'later' },
      ],
    }),
    T0,
  );
  const plan = e.handle(acted({ thought: 'too big', action: 'plan', goal: 'split big job' }), T0);
  const call = plan.at(-1);
  assert.ok(call?.kind === 'call' && call.activity === 'proposeTree');
  assert.deepEqual(call.input.plan, { taskIndex: '1-1', goal: 'split big job' });
  const next = e.handle(
    proposed({
      name: 'big',
      goal: 'big job',
      subtasks: [
        { name: 'Part 1', goal: 'p1' },
        { name: 'Part 2', goal: 'p2' },
      ],
    }),
    T0,
  );
  assert.deepEqual(
    e.state.tree?.subtasks[0]?.subtasks.map((n) => n.index),
    ['1-1-1', '1-1-2'],
  );
  const start = next.at(-1);
  assert.ok(start?.kind === 'start_child' && start.workflowId === 'run-t.t1-1', 'the planned subtasks run before the task ends');

  // In the child, 1-1-1 is at level 3 of at most 3: it may not plan again.
  const child = engine({ runId: 'run-t.t1-1', scope: { index: '1-1', tree: e.state.tree ?? buildTree(TREE), rootRunId: 'run-t' } });
  assert.equal(iterationOf(child.start(T0)), '1-1-1');
  const refused = child.handle(acted({ thought: 'split more', action: 'plan', goal: 'again' }), T0);
  assert.equal(iterationOf(refused), '1-1-1');
  assert.match(child.state.observations.at(-1)?.content ?? '', /planning refused: task 1-1-1 is at level 3/);
  assert.equal(iterationOf(child.handle(finish('p1 done'), T0)), '1-1-2');
  assert.deepEqual(kinds(child.handle(finish('p2 done'), T0)), ['status:completed', 'end']);
  assert.equal(iterationOf(e.handle({ kind: 'child_ended', value: child.state }, T0)), '1-2');
  assert.equal(e.state.tree?.subtasks[0]?.status, 'completed');
});

test('ask_user waits for a reply in the middle of a leaf; the leaf goes on after it', () => {
  const e = engine();
  e.start(T0);
  e.handle(proposed({ name: 'r', goal: 'g', subtasks: [{ name: 'Ask', goal: 'ask' }] }), T0);
  assert.deepEqual(kinds(e.handle(acted({ thought: 'need a date', action: 'ask_user', question: 'Which day?' }), T0)), ['status:waiting_user', 'await_person']);
  assert.equal(e.canTakeReply(), true);
  assert.equal(e.state.steps.at(-1)?.question, 'Which day?');
  const after = e.handle({ kind: 'reply', text: 'Friday' }, T0);
  assert.deepEqual(kinds(after), ['status:running', 'call:reactStep']);
  assert.equal(iterationOf(after), '1-1');
  assert.equal(e.state.observations.at(-1)?.content, 'Friday');
});

test('a finish without a result has its thought as the task result', () => {
  const e = engine();
  e.start(T0);
  e.handle(proposed({ name: 'r', goal: 'g', subtasks: [{ name: 'Only', goal: 'only' }] }), T0);
  e.handle(acted({ thought: 'The date is Friday.', action: 'finish' }), T0);
  const task = e.state.tree?.subtasks[0];
  assert.equal(task?.status, 'completed');
  assert.equal(task?.result, 'The date is Friday.');
});

test('a leaf past MAX_ITERATIONS is aborted with the reason and the run moves on', () => {
  const e = engine();
  e.start(T0);
  e.handle(
    proposed({
      name: 'r',
      goal: 'g',
      subtasks: [
        { name: 'Loop', goal: 'forever' },
        { name: 'Next', goal: 'n' },
      ],
    }),
    T0,
  );
  const call = (n: number) => acted({ thought: 'again', action: 'tool', tool: 'calculator', args: { expression: String(n) } }, { kind: 'tool', content: `{"value":${n}}` });
  e.handle(call(1), T0);
  e.handle(call(2), T0);
  const moved = e.handle(call(3), T0);
  assert.equal(iterationOf(moved), '1-2');
  assert.equal(e.state.tree?.subtasks[0]?.status, 'aborted');
  assert.equal(e.state.tree?.subtasks[0]?.summary, 'gave up after 3 iterations');
});

test('skip: of the leaf in flight abandons its iteration (a new wait); of a pending task it only marks it, and the wait goes on', () => {
  const e = engine();
  e.start(T0);
  e.handle(
    proposed({
      name: 'r',
      goal: 'g',
      subtasks: [
        { name: 'Slow', goal: 's' },
        { name: 'Later', goal: 'l' },
        { name: 'Last', goal: 'z' },
      ],
    }),
    T0,
  );
  assert.deepEqual(e.steerProblem('skip', '1-9'), { kind: 'unknown', message: 'run run-t has no task 1-9' });
  assert.equal(e.steerProblem('skip', '1')?.kind, 'notNow');
  assert.equal(e.steerProblem('redo', '1-1')?.kind, 'notNow', 'a task under way cannot be redone');

  const aside = e.handle({ kind: 'skip', index: '1-2', reason: 'not needed' }, T0);
  assert.deepEqual(kinds(aside), [], 'the iteration of 1-1 stays in flight');
  assert.equal(e.state.tree?.subtasks[1]?.status, 'skipped');
  assert.equal(e.state.tree?.subtasks[1]?.summary, 'skipped by the user: not needed');
  assert.equal(e.steerProblem('skip', '1-2')?.kind, 'notNow', 'skipped already');

  const moved = e.handle({ kind: 'skip', index: '1-1', reason: 'too slow' }, T0);
  assert.equal(iterationOf(moved), '1-3', 'the skipped leaf’s iteration is abandoned; 1-2 is skipped too');
  assert.deepEqual(
    e.state.steps.map((s) => [s.task, s.status]),
    [['1-1', 'skipped']],
  );
  assert.equal(e.state.observations.at(-1)?.content, 'task 1-1 skipped by the user: too slow');
  assert.match(e.state.progress ?? '', /-\[x\] 1-1\. "Slow" \(skipped: skipped by the user: too slow\)/);
});

test('skip while the leaf waits for a reply ends the wait; a group delegated to a child run is the child’s to skip inside', () => {
  const e = engine();
  e.start(T0);
  e.handle(proposed(), T0); // 1-1 is a group: handed to run-t.t1-1
  assert.deepEqual(e.steerProblem('skip', '1-1-2'), { kind: 'delegated', message: 'task 1-1-2 is executed by run run-t.t1-1', childRunId: 'run-t.t1-1' });
  const skipped = e.handle({ kind: 'skip', index: '1-1' }, T0);
  assert.equal(iterationOf(skipped), '1-2', 'the child run is abandoned (the workflow cancels it)');
  assert.deepEqual(
    e.state.tree?.subtasks[0]?.subtasks.map((n) => n.status),
    ['skipped', 'skipped'],
  );

  const f = engine();
  f.start(T0);
  f.handle(
    proposed({
      name: 'r',
      goal: 'g',
      subtasks: [
        { name: 'Ask', goal: 'a' },
        { name: 'Next', goal: 'n' },
      ],
    }),
    T0,
  );
  f.handle(acted({ thought: 'q', action: 'ask_user', question: 'Which?' }), T0);
  assert.equal(f.state.status, 'waiting_user');
  const next = f.handle({ kind: 'skip', index: '1-1', reason: 'never mind' }, T0);
  assert.deepEqual(kinds(next), ['status:running', 'call:reactStep']);
  assert.equal(iterationOf(next), '1-2');
  assert.equal(f.canTakeReply(), false);
});

test('redo re-queues a finished task with the reason and its previous result noted; during the final answer it makes work again', () => {
  const e = engine();
  e.start(T0);
  e.handle(
    proposed({
      name: 'r',
      goal: 'g',
      subtasks: [
        { name: 'Quote', goal: 'q' },
        { name: 'Book', goal: 'b' },
      ],
    }),
    T0,
  );
  e.handle(finish('quote: 80 EUR'), T0);
  const aside = e.handle({ kind: 'redo', index: '1-1', reason: 'ask for a discount' }, T0);
  assert.deepEqual(kinds(aside), [], 'the iteration of 1-2 goes on');
  const redone = e.state.tree?.subtasks[0];
  assert.deepEqual([redone?.status, redone?.iterations, redone?.result], ['queueing', 0, undefined]);
  assert.equal(redone?.note, 'redo requested: ask for a discount; previous result: quote: 80 EUR');
  assert.equal(iterationOf(e.handle(finish('booked'), T0)), '1-1', 'the redone task runs again before the answer');
  assert.deepEqual(kinds(e.handle(finish('quote: 70 EUR'), T0)), ['call:treeAnswer']);
  const again = e.handle({ kind: 'redo', index: '1-2' }, T0);
  assert.equal(iterationOf(again), '1-2', 'a redo during the final answer abandons it');
});

test('spin detection: the 3rd identical call asks spin_check; a confirmed spin warns, the next confirmed one (from the 5th) aborts the task', () => {
  const e = engine({ treeLimits: { maxDepth: 3, maxFanout: 5, maxIterations: 10, spin: { warnAt: 3, stopAt: 5 } } });
  e.start(T0);
  e.handle(
    proposed({
      name: 'r',
      goal: 'g',
      subtasks: [
        { name: 'Poll', goal: 'p' },
        { name: 'Next', goal: 'n' },
      ],
    }),
    T0,
  );
  const same = acted({ thought: 'again', action: 'tool', tool: 'current_time', args: {} }, { kind: 'tool', content: '{"iso":"2026"}' });
  assert.equal(iterationOf(e.handle(same, T0)), '1-1');
  assert.equal(iterationOf(e.handle(same, T0)), '1-1');
  assert.deepEqual(kinds(e.handle(same, T0)), ['call:checkSpin']);
  assert.equal(iterationOf(e.handle({ kind: 'result', activity: 'checkSpin', value: { spinning: true, reason: 'same call, same answer' } }, T0)), '1-1');
  assert.match(e.state.observations.at(-1)?.content ?? '', /^warning: this task repeats the same call without progress \(same call, same answer\)/);
  assert.equal(iterationOf(e.handle(same, T0)), '1-1', 'no check between warnAt and stopAt');
  assert.deepEqual(kinds(e.handle(same, T0)), ['call:checkSpin']);
  assert.equal(iterationOf(e.handle({ kind: 'result', activity: 'checkSpin', value: { spinning: true, reason: 'still the same' } }, T0)), '1-2');
  assert.equal(e.state.tree?.subtasks[0]?.status, 'aborted');
  assert.equal(e.state.tree?.subtasks[0]?.summary, 'stopped: going round in circles (still the same)');
});

test('a spin check that finds progress lets the task go on', () => {
  const e = engine({ treeLimits: { maxDepth: 3, maxFanout: 5, maxIterations: 10 } });
  e.start(T0);
  e.handle(proposed({ name: 'r', goal: 'g', subtasks: [{ name: 'Poll', goal: 'p' }] }), T0);
  const same = acted({ thought: 'again', action: 'tool', tool: 'current_time', args: {} }, { kind: 'tool', content: '{"iso":"2026"}' });
  e.handle(same, T0);
  e.handle(same, T0);
  e.handle(same, T0);
  assert.equal(iterationOf(e.handle({ kind: 'result', activity: 'checkSpin', value: { spinning: false, reason: 'the time changes' } }, T0)), '1-1');
  assert.equal(e.state.tree?.subtasks[0]?.spins, undefined);
});

test('self-reflection: a failed action is followed by a reflection call whose lesson the next iteration sees', () => {
  const e = engine();
  e.start(T0);
  e.handle(proposed({ name: 'r', goal: 'g', subtasks: [{ name: 'Calc', goal: 'c' }] }), T0);
  const failed = e.handle(acted({ thought: 'try', action: 'tool', tool: 'calculator', args: { expression: '2 apples' } }, { kind: 'error', content: 'Undefined symbol apples' }), T0);
  const call = failed.at(-1);
  assert.ok(call?.kind === 'call' && call.activity === 'reflect' && call.input.taskIndex === '1-1');
  const next = e.handle({ kind: 'result', activity: 'reflect', value: { assessment: 'units are not numbers.', lesson: 'pass plain numbers' } }, T0);
  assert.equal(iterationOf(next), '1-1');
  assert.deepEqual(
    e.state.steps.map((s) => [s.type, s.status]),
    [
      ['tool', 'failed'],
      ['reason', 'completed'],
    ],
  );
  assert.equal(e.state.observations.at(-1)?.content, 'reflection on the failed action: units are not numbers. Lesson: pass plain numbers');
});

test('a question asked in a group’s child run becomes the parent’s; the reply is relayed down; a child reports waits, not its end', () => {
  const e = engine();
  e.start(T0);
  e.handle(proposed(), T0); // group 1-1 runs as run-t.t1-1
  const report = (status: 'waiting_user' | 'running') => ({ runId: 'run-t.t1-1', status, question: status === 'waiting_user' ? 'Which date?' : null, finalAnswer: null, lastError: null });
  assert.deepEqual(kinds(e.handle({ kind: 'child_report', report: report('waiting_user') }, T0)), ['status:waiting_user']);
  assert.equal(e.canTakeReply(), true);
  assert.deepEqual([e.state.steps.at(-1)?.question, e.state.steps.at(-1)?.childRunId], ['Which date?', 'run-t.t1-1']);
  const relayed = e.handle({ kind: 'reply', text: 'Friday' }, T0);
  assert.deepEqual(kinds(relayed), ['status:running', 'relay_reply']);
  const relay = relayed.at(-1);
  assert.ok(relay?.kind === 'relay_reply' && relay.runId === 'run-t.t1-1' && relay.text === 'Friday');
  assert.deepEqual(kinds(e.handle({ kind: 'child_report', report: report('running') }, T0)), [], 'the child resuming changes nothing more');

  const child = scoped('1-1');
  child.start(T0);
  const asks = child.handle(acted({ thought: 'q', action: 'ask_user', question: 'Which date?' }), T0);
  assert.deepEqual(
    asks.flatMap((c) => (c.kind === 'notify_parent' ? [[c.parentId, c.report.status]] : [])),
    [['run-t', 'waiting_user']],
  );
  child.handle({ kind: 'reply', text: 'Friday' }, T0);
  child.handle(finish('train on Friday'), T0);
  const ended = child.handle(finish('hotel'), T0);
  assert.deepEqual(kinds(ended), ['status:completed', 'end'], 'its end comes back as the child’s result, not as a report');
});

test('spin detection also counts the same kind of action refused again and again (planning past the depth limit)', () => {
  const e = engine({ treeLimits: { maxDepth: 2, maxFanout: 5, maxIterations: 10, spin: { warnAt: 3, stopAt: 5 } } });
  e.start(T0);
  e.handle(proposed({ name: 'r', goal: 'g', subtasks: [{ name: 'Deep', goal: 'd' }] }), T0);
  const plan = acted({ thought: 'split it', action: 'plan', goal: 'more' });
  assert.equal(iterationOf(e.handle(plan, T0)), '1-1');
  assert.equal(iterationOf(e.handle(plan, T0)), '1-1');
  assert.deepEqual(kinds(e.handle(plan, T0)), ['call:checkSpin'], 'the third refused plan asks whether the task spins');
});

/** What a call carries for the run's memory thread (TreeCallMemory), if anything. */
const memoryOf = (cs: TreeCommand[]) => {
  const last = cs.at(-1);
  if (last?.kind !== 'call') return null;
  const input = last.input as { openThread?: string; unrecorded?: { from: number; plan: boolean } };
  return { openThread: input.openThread ?? null, unrecorded: input.unrecorded ?? null };
};

test('a run started from a blueprint opens its memory thread at its first call, and writes its plan there', () => {
  const flat: TaskTreeReply = {
    name: 'Check',
    goal: 'Check the list',
    subtasks: [
      { name: 'One', goal: 'first' },
      { name: 'Two', goal: 'second' },
    ],
  };
  const e = engine({ blueprint: { name: 'checklist', tree: flat } });
  const first = e.start(T0);
  assert.equal(iterationOf(first), '1-1');
  assert.deepEqual(memoryOf(first), { openThread: 'run-t', unrecorded: { from: 0, plan: true } });
  // The iteration opened it: the run takes it, and later calls neither open it again nor write the plan twice.
  const second = e.handle({ kind: 'result', activity: 'reactStep', value: { reply: { thought: 'done', action: 'finish', result: 'one done' }, observation: null, threadId: 'thread_run-t' } }, T0);
  assert.equal(e.state.threadId, 'thread_run-t');
  assert.equal(iterationOf(second), '1-2');
  assert.deepEqual(memoryOf(second), { openThread: null, unrecorded: { from: 0, plan: false } }, "the finished task's result is written by the next call");
});

test("a group's run with no thread opens its root's; the root takes it when the group ends", () => {
  const child = engine({ runId: 'run-t.t1-1', parentRunId: 'run-t', scope: { index: '1-1', tree: buildTree(TREE), rootRunId: 'run-t', threadId: null } });
  assert.deepEqual(memoryOf(child.start(T0)), { openThread: 'run-t', unrecorded: null }, 'a group never writes the plan: its root did');
  const root = engine({ blueprint: { name: 'trip', tree: TREE } });
  root.start(T0);
  root.handle({ kind: 'child_ended', value: { ...child.state, status: 'completed', threadId: 'thread_run-t' } }, T0);
  assert.equal(root.state.threadId, 'thread_run-t');
});

test("a question, its reply, a task's result and a skip reach the thread through the next call; a tool's record is written once, by its own call", () => {
  const e = engine();
  e.start(T0);
  const first = e.handle(
    proposed({
      name: 'Trip',
      goal: 'Plan a trip',
      subtasks: [
        { name: 'A', goal: 'a' },
        { name: 'B', goal: 'b' },
        { name: 'C', goal: 'c' },
      ],
    }),
    T0,
  );
  assert.deepEqual(memoryOf(first), { openThread: null, unrecorded: { from: 0, plan: true } });
  // A tool call: its own call wrote it, so the next call has nothing to add.
  const afterTool = e.handle(acted({ thought: 'add', action: 'tool', tool: 'calculator', args: { expression: '1+1' } }, { kind: 'tool', content: '{"value":2}' }), T0);
  assert.deepEqual(memoryOf(afterTool), { openThread: null, unrecorded: null });
  e.handle(acted({ thought: 'which?', action: 'ask_user', question: 'Who is your sister?' }), T0);
  const afterReply = e.handle({ kind: 'reply', text: 'My sister is Ana.' }, T0);
  const replyAt = e.state.observations.findIndex((o) => o.kind === 'user_reply');
  assert.deepEqual(memoryOf(afterReply), { openThread: null, unrecorded: { from: replyAt, plan: false } });
  const afterFinish = e.handle(finish('A done'), T0);
  assert.equal(iterationOf(afterFinish), '1-2');
  assert.deepEqual(memoryOf(afterFinish), { openThread: null, unrecorded: { from: replyAt + 1, plan: false } });
  // Skipping the task in flight: the skip is written by the call that follows.
  const skipped = e.handle({ kind: 'skip', index: '1-2', reason: 'not needed' }, T0);
  assert.equal(iterationOf(skipped), '1-3');
  assert.deepEqual(memoryOf(skipped), { openThread: null, unrecorded: { from: replyAt + 2, plan: false } });
  assert.match(e.state.observations[replyAt + 2]?.content ?? '', /skipped by the user: not needed/);
});

test('under review, a subtree a task plans waits for review too: approved it runs, revised the task plans again, rejected the task goes on with actions', () => {
  const flat: TaskTreeReply = {
    name: 'r',
    goal: 'g',
    subtasks: [
      { name: 'Big', goal: 'big job' },
      { name: 'After', goal: 'later' },
    ],
  };
  const split: TaskTreeReply = {
    name: 'big',
    goal: 'big job',
    subtasks: [
      { name: 'Part 1', goal: 'p1' },
      { name: 'Part 2', goal: 'p2' },
    ],
  };
  const reviewed = () => {
    const e = engine({ review: true, reviewsSubtrees: () => true });
    e.start(T0);
    e.handle(proposed(flat), T0);
    e.handle({ kind: 'review', decision: 'approve', planId: 'run-t#tree1' }, T0);
    e.handle(acted({ thought: 'too big', action: 'plan', goal: 'split big job' }), T0);
    assert.deepEqual(kinds(e.handle(proposed(split), T0)), ['status:waiting_review', 'await_person']);
    return e;
  };
  const e = reviewed();
  assert.equal(e.state.planId, 'run-t#tree2');
  assert.deepEqual(
    e.state.tree?.subtasks[0]?.subtasks.map((n) => n.name),
    ['Part 1', 'Part 2'],
    'shown in the tree under review',
  );
  // An edited subtree is checked against the levels left below its task (1-1 is at level 2 of 3).
  const tooDeep: TaskTreeReply = { name: 'big', goal: 'big job', subtasks: [{ name: 'A', goal: 'a', subtasks: [{ name: 'A1', goal: 'a1' }] }] };
  assert.match(e.reviewProblem({ decision: 'approve', planId: 'run-t#tree2', tree: tooDeep }) ?? '', /levels/);
  const approved = e.handle({ kind: 'review', decision: 'approve', planId: 'run-t#tree2' }, T0);
  assert.deepEqual(kinds(approved), ['status:running', 'start_child']);
  assert.match(e.state.observations.at(-1)?.content ?? '', /task 1-1 planned 2 subtasks \(approved\)/);

  const f = reviewed();
  const revise = f.handle({ kind: 'review', decision: 'revise', planId: 'run-t#tree2', feedback: 'one part is enough' }, T0);
  assert.deepEqual(kinds(revise), ['status:running', 'call:proposeTree']);
  const call = revise.at(-1);
  assert.ok(call?.kind === 'call' && call.activity === 'proposeTree');
  assert.deepEqual([call.input.plan, call.input.feedback], [{ taskIndex: '1-1', goal: 'split big job' }, 'one part is enough']);
  assert.deepEqual(kinds(f.handle(proposed({ name: 'big', goal: 'big job', subtasks: [{ name: 'Only part', goal: 'p' }] }), T0)), ['status:waiting_review', 'await_person']);
  assert.equal(f.state.planId, 'run-t#tree3');

  const g = reviewed();
  const rejected = g.handle({ kind: 'review', decision: 'reject', planId: 'run-t#tree2', feedback: 'just do it' }, T0);
  assert.deepEqual(kinds(rejected), ['status:running', 'call:reactStep']);
  assert.equal(iterationOf(rejected), '1-1', 'the same task, as a leaf again');
  assert.deepEqual(g.state.tree?.subtasks[0]?.subtasks, []);
  assert.match(g.state.observations.at(-1)?.content ?? '', /the person rejected the subtasks planned for task 1-1: just do it/);

  // A run recorded before (no `reviewsSubtrees`) runs the subtree at once, as it did.
  const old = engine({ review: true });
  old.start(T0);
  old.handle(proposed(flat), T0);
  old.handle({ kind: 'review', decision: 'approve', planId: 'run-t#tree1' }, T0);
  old.handle(acted({ thought: 'too big', action: 'plan', goal: 'split big job' }), T0);
  assert.equal(old.handle(proposed(split), T0).at(-1)?.kind, 'start_child');
});

test('capability switches: ask_user, plan and blueprint actions turned off are refused, and the task goes on', () => {
  const e = engine({ allow: { askUser: false, plan: false, blueprints: false } });
  e.start(T0);
  e.handle(proposed({ name: 'r', goal: 'g', subtasks: [{ name: 'Only', goal: 'do it' }] }), T0);
  for (const action of [
    { thought: 'ask', action: 'ask_user', question: 'Who?' },
    { thought: 'split', action: 'plan', goal: 'split' },
    { thought: 'template', action: 'blueprint', blueprint: 'x' },
  ] as const) {
    const next = e.handle(acted(action), T0);
    // The task goes on; the third refusal in a row looks like a spin, and the model is asked.
    assert.ok(iterationOf(next) === '1-1' || kinds(next).includes('call:checkSpin'), `${action.action}: ${kinds(next).join(', ')}`);
    assert.match(e.state.observations.at(-1)?.content ?? '', /^refused: .* is off for this run/);
  }
  assert.notEqual(e.state.status, 'waiting_user');
});

test("seed 003's same-action-type spin: one tool with other arguments six times in a row gets a spin check; runs recorded before do not", () => {
  const run = (spinsByType?: () => boolean) => {
    const e = engine({ treeLimits: { maxDepth: 3, maxFanout: 5, maxIterations: 12 }, ...(spinsByType ? { spinsByType } : {}) });
    e.start(T0);
    e.handle(proposed({ name: 'r', goal: 'g', subtasks: [{ name: 'Search', goal: 'find it' }] }), T0);
    const kindsAfter: string[][] = [];
    for (let i = 1; i <= 6; i++)
      kindsAfter.push(kinds(e.handle(acted({ thought: `try ${i}`, action: 'tool', tool: 'calculator', args: { expression: `${i}+1` } }, { kind: 'tool', content: `{"value":${i + 1}}` }), T0)));
    return kindsAfter;
  };
  let asked = 0;
  const checked = run(() => (asked++, true));
  assert.deepEqual(
    checked.slice(0, 5).map((k) => k.at(-1)),
    Array(5).fill('call:reactStep'),
    'no check before the sixth call',
  );
  assert.equal(checked[5]?.at(-1), 'call:checkSpin');
  assert.equal(asked, 1, 'the patch is asked only when the count is reached');
  assert.equal(run()[5]?.at(-1), 'call:reactStep', 'a run recorded before: no check');
});

test('seed 003: a task that aborts fails the plan unless the plan marks it optional; a failed group fails its parent the same way', () => {
  const loop = (optional: boolean, failsOnAbort?: () => boolean) => {
    const e = engine(failsOnAbort ? { failsOnAbort } : {});
    e.start(T0);
    e.handle(
      proposed({
        name: 'r',
        goal: 'g',
        subtasks: [
          { name: 'Loop', goal: 'forever', ...(optional ? { optional: true } : {}) },
          { name: 'Next', goal: 'n' },
        ],
      }),
      T0,
    );
    const call = (n: number) => acted({ thought: 'again', action: 'tool', tool: 'calculator', args: { expression: String(n) } }, { kind: 'tool', content: `{"value":${n}}` });
    e.handle(call(1), T0);
    e.handle(call(2), T0);
    return { e, last: e.handle(call(3), T0) };
  };
  let asked = 0;
  const failed = loop(false, () => (asked++, true));
  assert.deepEqual(kinds(failed.last), ['status:failed', 'close', 'end']);
  assert.equal(failed.e.state.lastError, 'task 1-1 could not be done (gave up after 3 iterations), and the plan needs it');
  assert.equal(asked, 1);
  const optional = loop(true, () => (asked++, true));
  assert.equal(iterationOf(optional.last), '1-2', 'an optional task aborts and the plan goes on');
  assert.equal(optional.e.state.tree?.subtasks[0]?.optional, true);
  assert.equal(asked, 1, 'not asked for an optional task');
  assert.equal(iterationOf(loop(false).last), '1-2', 'a run recorded before goes on, as it did');

  // A group whose child run failed is aborted, and fails its parent unless it is optional.
  const parent = engine({ failsOnAbort: () => true });
  parent.start(T0);
  parent.handle(proposed(), T0);
  const child = { runId: 'run-t.t1-1', status: 'failed', lastError: 'task 1-1-1 could not be done', tree: null } as unknown as ExecutionState;
  assert.deepEqual(kinds(parent.handle({ kind: 'child_ended', value: child }, T0)), ['status:failed', 'close', 'end']);
  assert.match(parent.state.lastError ?? '', /^task 1-1 could not be done \(task 1-1 \(run run-t\.t1-1\) ended failed/);
});
