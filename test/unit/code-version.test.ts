/** Seed 000's workflow versioning, pure: what changed between two code versions, and how runs record theirs. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PlanEngine } from '../../src/engine/plan-engine';
import { TreeEngine } from '../../src/engine/tree-engine';
import { describeCodeVersion, staleReason, type CodeVersion } from '../../src/planning/code-version';

const T0 = new Date('2026-01-01T00:00:00Z');
const V1: CodeVersion = { model: 'gpt-a', prompts: '1', tools: 'abc' };

test('staleReason names what changed, and nothing when nothing did', () => {
  assert.equal(staleReason(V1, { ...V1 }), null);
  assert.match(staleReason(V1, { ...V1, tools: 'def' }) ?? '', /^stale run: the tools changed since it was planned/);
  assert.match(staleReason(V1, { ...V1, prompts: '2' }) ?? '', /the prompts \(v1 → v2\) changed/);
  assert.match(staleReason(V1, { model: 'gpt-b', prompts: '2', tools: 'def' }) ?? '', /the model \(gpt-a → gpt-b\), the prompts \(v1 → v2\), the tools changed/);
  assert.equal(describeCodeVersion(V1), 'model gpt-a · prompts v1 · tools abc');
});

test('a plan run records the version it was planned with', () => {
  const e = new PlanEngine({ runId: 'run-a', userId: 'u', goal: 'g', reportTo: null, limits: { maxSteps: 5, maxDepth: 1 } }, T0);
  e.start(T0);
  e.handle({ kind: 'result', activity: 'planRun', value: { steps: [{ type: 'respond', description: 'answer' }], model: 'gpt-a', codeVersion: V1 } }, T0);
  assert.deepEqual(e.state.codeVersion, V1);
});

test('a tree run records its version and hands it to the child runs of its groups', () => {
  const e = new TreeEngine(
    { runId: 'run-t', userId: 'u', goal: 'g', reportTo: null, review: false, limits: { maxSteps: 25, maxDepth: 2 }, treeLimits: { maxDepth: 3, maxFanout: 5, maxIterations: 3 } },
    T0,
  );
  e.start(T0);
  const tree = { name: 'Root', goal: 'g', subtasks: [{ name: 'Group', goal: 'g1', subtasks: [{ name: 'Leaf', goal: 'l' }] }] };
  const commands = e.handle({ kind: 'result', activity: 'proposeTree', value: { tree, model: 'gpt-a', codeVersion: V1 } }, T0);
  assert.deepEqual(e.state.codeVersion, V1);
  const start = commands.at(-1);
  assert.ok(start?.kind === 'start_child');
  assert.deepEqual(start.input.scope?.codeVersion, V1);
  const child = new TreeEngine({ ...start.input, runId: start.workflowId, reportTo: null, review: false, treeLimits: { maxDepth: 3, maxFanout: 5, maxIterations: 3 } }, T0);
  child.start(T0);
  assert.deepEqual(child.state.codeVersion, V1);
});
