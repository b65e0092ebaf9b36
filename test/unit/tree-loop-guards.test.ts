/**
 * Seed 003's ReAct first and the loop guards of its ReAct engine, pure (src/engine/tree-engine.ts,
 * src/engine/reflection.ts): a run that answers directly or plans only when it needs to, reflection
 * levels and their switch, and the summary of a task stopped at its iteration limit.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TreeEngine, type TreeCommand, type TreeEngineInput } from '../../src/engine/tree-engine';
import { FAILURES_ONLY, reflectionLevel } from '../../src/engine/reflection';
import type { ReactActionReply } from '../../src/calls/react-action';

const T0 = new Date('2026-01-01T00:00:00Z');

function engine(over: Partial<TreeEngineInput> = {}): TreeEngine {
  return new TreeEngine(
    {
      runId: 'run-r',
      userId: 'alice',
      goal: 'What is 6*7?',
      reportTo: null,
      review: false,
      entry: 'react',
      limits: { maxSteps: 25, maxDepth: 2 },
      treeLimits: { maxDepth: 3, maxFanout: 5, maxIterations: 4 },
      ...over,
    },
    T0,
  );
}
const kinds = (cs: TreeCommand[]) => cs.map((c) => (c.kind === 'call' ? `call:${c.activity}` : c.kind === 'status' ? `status:${c.status}` : c.kind));
const acted = (reply: ReactActionReply, observation: { kind: 'tool' | 'error'; content: string } | null = null) => ({
  kind: 'result' as const,
  activity: 'reactStep' as const,
  value: { reply, observation },
});
const tool = (ok = true) =>
  acted({ thought: 'compute', action: 'tool', tool: 'calculator', args: { expression: '6*7' } }, ok ? { kind: 'tool', content: '{"value":42}' } : { kind: 'error', content: 'bad expression' });
const lastCall = (cs: TreeCommand[]) => {
  const last = cs.at(-1);
  return last?.kind === 'call' ? last : null;
};
/** The input of the call a batch ends with, as a record (the call's own type is a union of every activity's). */
const inputOf = (cs: TreeCommand[]) => (lastCall(cs)?.input ?? {}) as Record<string, unknown>;

test('ReAct first: the goal is one task whose loop answers directly, with no tree proposed and no answer call', () => {
  const e = engine();
  const first = e.start(T0);
  assert.deepEqual(kinds(first), ['status:running', 'call:reactStep']);
  assert.equal(inputOf(first).taskIndex, '1');
  assert.equal(e.state.entry, 'react');
  assert.equal(e.state.tree?.goal, 'What is 6*7?');
  assert.deepEqual(e.state.tree?.subtasks, []);
  assert.deepEqual(kinds(e.handle(tool(), T0)), ['call:reactStep']);
  const done = e.handle(acted({ thought: 'known', action: 'finish', result: '42' }), T0);
  assert.deepEqual(kinds(done), ['status:completed', 'close', 'end']);
  assert.equal(e.state.finalAnswer, '42');
});

test('ReAct first: planning makes the tree under the goal’s task; its subtasks run, then the answer is written', () => {
  const e = engine({ goal: 'Plan a trip' });
  e.start(T0);
  const planned = e.handle(acted({ thought: 'big', action: 'plan', goal: 'split the trip' }), T0);
  assert.deepEqual(kinds(planned), ['call:proposeTree']);
  assert.deepEqual(inputOf(planned).plan, { taskIndex: '1', goal: 'split the trip' });
  const subtree = {
    name: 'Trip',
    goal: 'split the trip',
    subtasks: [
      { name: 'Train', goal: 'Book a train' },
      { name: 'Hotel', goal: 'Book a hotel' },
    ],
  };
  const next = e.handle({ kind: 'result', activity: 'proposeTree', value: { tree: subtree, model: 'm' } }, T0);
  assert.equal(inputOf(next).taskIndex, '1-1');
  e.handle(acted({ thought: 'ok', action: 'finish', result: 'train booked' }), T0);
  assert.deepEqual(kinds(e.handle(acted({ thought: 'ok', action: 'finish', result: 'hotel booked' }), T0)), ['call:treeAnswer']);
});

test('reflection levels: off, failures only, periodic stock-taking and the last call before the limit', () => {
  const at = (failed: boolean, iterations: number) => ({ failed, iterations, maxIterations: 10 });
  assert.equal(reflectionLevel({ mode: 'off', every: 3 }, at(true, 1)), 'none');
  assert.equal(reflectionLevel(FAILURES_ONLY, at(true, 1)), 'deep');
  assert.equal(reflectionLevel(FAILURES_ONLY, at(false, 9)), 'none');
  const periodic = { mode: 'periodic' as const, every: 3 };
  assert.equal(reflectionLevel(periodic, at(false, 2)), 'none');
  assert.equal(reflectionLevel(periodic, at(false, 3)), 'standard');
  assert.equal(reflectionLevel(periodic, at(false, 6)), 'standard');
  assert.equal(reflectionLevel(periodic, at(false, 9)), 'critical');
  assert.equal(reflectionLevel(periodic, at(true, 3)), 'deep');
  assert.equal(reflectionLevel({ mode: 'periodic', every: 0 }, at(false, 5)), 'none');
});

test('periodic reflection: a task takes stock after every N iterations, then goes on without a second reflection', () => {
  const e = engine({ treeLimits: { maxDepth: 3, maxFanout: 5, maxIterations: 10, reflection: { mode: 'periodic', every: 2 } } });
  e.start(T0);
  assert.deepEqual(kinds(e.handle(tool(), T0)), ['call:reactStep']);
  // The second call is not the first repeated (spin checks count identical calls from 3 on).
  const second = e.handle(acted({ thought: 'again', action: 'tool', tool: 'calculator', args: { expression: '7*6' } }, { kind: 'tool', content: '42' }), T0);
  assert.equal(lastCall(second)?.activity, 'reflect');
  assert.equal(inputOf(second).level, 'standard');
  const after = e.handle({ kind: 'result', activity: 'reflect', value: { assessment: 'close to done', lesson: 'finish now' } }, T0);
  assert.deepEqual(kinds(after), ['call:reactStep']);
  assert.match(e.state.observations.at(-1)?.content ?? '', /^reflection \(standard\): close to done Lesson: finish now/);
});

test('the switch: reflection off means a failed call goes straight on; failures mode reflects as runs always did (no level sent)', () => {
  const off = engine({ treeLimits: { maxDepth: 3, maxFanout: 5, maxIterations: 4, reflection: { mode: 'off', every: 0 } } });
  off.start(T0);
  assert.deepEqual(kinds(off.handle(tool(false), T0)), ['call:reactStep']);
  const legacy = engine();
  legacy.start(T0);
  const failed = legacy.handle(tool(false), T0);
  assert.equal(lastCall(failed)?.activity, 'reflect');
  assert.equal('level' in inputOf(failed), false);
});

test('a task at its iteration limit is summarised, and the summary is its result; without the setting it aborts as before', () => {
  const run = (summarizeAtLimit: boolean) => {
    const e = engine({ treeLimits: { maxDepth: 3, maxFanout: 5, maxIterations: 2, reflection: { mode: 'off', every: 0 }, summarizeAtLimit } });
    e.start(T0);
    e.handle(tool(), T0);
    return { e, cs: e.handle(acted({ thought: 'more', action: 'tool', tool: 'calculator', args: { expression: '1+1' } }, { kind: 'tool', content: '2' }), T0) };
  };
  const { e, cs } = run(true);
  assert.equal(lastCall(cs)?.activity, 'summarizeTask');
  assert.deepEqual(kinds(e.handle({ kind: 'result', activity: 'summarizeTask', value: { summary: 'found 42 and 2' } }, T0)), ['call:treeAnswer']);
  assert.equal(e.state.tree?.status, 'aborted');
  assert.equal(e.state.tree?.result, 'found 42 and 2');
  assert.match(e.state.tree?.summary ?? '', /^gave up after 2 iterations: found 42 and 2/);
  assert.equal(e.state.steps.at(-1)?.description, '[1] summary at the iteration limit');

  const old = run(false);
  assert.equal(lastCall(old.cs)?.activity, 'treeAnswer');
  assert.equal(old.e.state.tree?.summary, 'gave up after 2 iterations');

  // A model that gave no summary: the task aborts without one.
  const none = run(true);
  none.e.handle({ kind: 'result', activity: 'summarizeTask', value: { summary: null } }, T0);
  assert.equal(none.e.state.tree?.result, undefined);
  assert.equal(none.e.state.tree?.status, 'aborted');
});
