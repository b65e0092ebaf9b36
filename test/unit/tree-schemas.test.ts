/** Seed 003's wire schemas (DESIGN.md "Tree engine"): what a valid reply is, and what is sent back for repair. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildTree, dfs, treeProblems } from '../../src/planning/task-tree';
import { BlueprintParamsReplySchema } from '../../src/calls/blueprint-params';
import { ReactActionReplySchema } from '../../src/calls/react-action';
import { ReflectionReplySchema } from '../../src/calls/reflection';
import { SpinCheckReplySchema } from '../../src/calls/spin-check';
import { TaskTreeReplySchema } from '../../src/calls/task-tree';

const paths = (r: { success: boolean; error?: { issues: { path: PropertyKey[] }[] } }) => (r.success ? [] : (r.error?.issues ?? []).map((i) => i.path.join('.')));

test('task_tree: a root with subtasks, nested to any depth by the schema; the limits are checked on top and name each offender', () => {
  const reply = {
    name: 'Trip',
    goal: 'Plan it',
    subtasks: [
      { name: 'Travel', goal: 'Get there', subtasks: [{ name: 'Train', goal: 'Book' }] },
      { name: 'Food', goal: 'Eat' },
    ],
  };
  const parsed = TaskTreeReplySchema.parse(reply);
  assert.deepEqual(
    dfs(buildTree(parsed)).map((n) => n.index),
    ['1', '1-1', '1-1-1', '1-2'],
  );
  assert.deepEqual(treeProblems(parsed, { maxDepth: 2, maxFanout: 5 }), ['task 1-1-1 is at level 3; at most 2 levels are allowed']);
  assert.deepEqual(paths(TaskTreeReplySchema.safeParse({ name: 'Trip', goal: 'x', subtasks: [] })), ['subtasks']);
  assert.deepEqual(paths(TaskTreeReplySchema.safeParse({ name: 'Trip', goal: 'x', subtasks: [{ name: 'A' }] })), ['subtasks.0.goal']);
});

test('react_action: each action needs its own field', () => {
  assert.ok(ReactActionReplySchema.safeParse({ thought: 't', action: 'tool', tool: 'calculator', args: { expression: '1+1' } }).success);
  assert.ok(ReactActionReplySchema.safeParse({ thought: 't', action: 'finish', result: '2' }).success);
  assert.deepEqual(paths(ReactActionReplySchema.safeParse({ thought: 't', action: 'tool' })), ['tool']);
  // A finish without "result" is taken: its thought is the result.
  assert.ok(ReactActionReplySchema.safeParse({ thought: 't', action: 'finish' }).success);
  assert.deepEqual(paths(ReactActionReplySchema.safeParse({ thought: 't', action: 'ask_user' })), ['question']);
  assert.deepEqual(paths(ReactActionReplySchema.safeParse({ thought: 't', action: 'plan' })), ['goal']);
  assert.deepEqual(paths(ReactActionReplySchema.safeParse({ thought: 't', action: 'blueprint' })), ['blueprint']);
  assert.deepEqual(paths(ReactActionReplySchema.safeParse({ thought: 't', action: 'dance' })), ['action']);
});

test('spin_check, reflection and blueprint_params have the fixed shapes', () => {
  assert.ok(SpinCheckReplySchema.safeParse({ spinning: true, reason: 'same call 3 times' }).success);
  assert.deepEqual(paths(SpinCheckReplySchema.safeParse({ spinning: 'yes', reason: '' })), ['spinning']);
  assert.ok(ReflectionReplySchema.safeParse({ assessment: 'the expression was invalid', lesson: 'quote units' }).success);
  assert.deepEqual(paths(ReflectionReplySchema.safeParse({ assessment: 'x' })), ['lesson']);
  assert.ok(BlueprintParamsReplySchema.safeParse({ params: { city: 'Lyon' } }).success);
  assert.deepEqual(paths(BlueprintParamsReplySchema.safeParse({ params: 'Lyon' })), ['params']);
});
