/** Seed 003's task tree, pure: indices, lookup, DFS scheduling, aggregation, limits, progress. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import {
  aggregate,
  attachSubtasks,
  buildTree,
  canMove,
  dfs,
  findTask,
  levelOf,
  nextInScope,
  skipSubtree,
  pathTo,
  renderTaskProgress,
  treeProblems,
  updateTask,
  type TaskNode,
  type TaskSpec,
} from '../../src/planning/task-tree';
import { TaskSpecSchema } from '../../src/planning/task-spec';

const TRIP: TaskSpec = {
  name: 'Plan a trip',
  goal: 'A weekend in Lyon',
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
const done =
  (summary: string) =>
  (n: TaskNode): TaskNode => ({ ...n, status: 'completed', summary });

test('indices are hierarchical from the root, and lookup by index finds each node', () => {
  const root = buildTree(TRIP);
  assert.deepEqual(
    dfs(root).map((n) => n.index),
    ['1', '1-1', '1-1-1', '1-1-2', '1-2'],
  );
  assert.equal(findTask(root, '1-1-2')?.name, 'Hotel');
  assert.equal(findTask(root, '1-3'), undefined);
  assert.deepEqual(
    pathTo(root, '1-1-2').map((n) => n.name),
    ['Plan a trip', 'Travel', 'Hotel'],
  );
  assert.equal(levelOf('1-1-2'), 3);
  // A tree read back as a spec (what a person edits in a review) builds the same tree again.
  const shape = (t: TaskNode) => dfs(t).map((n) => [n.index, n.name, n.goal]);
  assert.deepEqual(shape(buildTree(TaskSpecSchema.parse(root))), shape(root));
});

test('property: every generated tree gets unique indices, each its parent’s index plus its ordinal, in DFS order', () => {
  const leaf = fc.record({ name: fc.string({ minLength: 1, maxLength: 5 }), goal: fc.constant('g') });
  const spec: fc.Arbitrary<TaskSpec> = fc.letrec<{ node: TaskSpec }>((tie) => ({
    node: fc.oneof({ maxDepth: 4 }, leaf, fc.record({ name: fc.string({ minLength: 1, maxLength: 5 }), goal: fc.constant('g'), subtasks: fc.array(tie('node'), { maxLength: 3 }) })),
  })).node;
  fc.assert(
    fc.property(spec, (s) => {
      const nodes = dfs(buildTree(s));
      assert.equal(new Set(nodes.map((n) => n.index)).size, nodes.length);
      for (const n of nodes) n.subtasks.forEach((c, i) => assert.equal(c.index, `${n.index}-${i + 1}`));
      // Pre-order: a node comes right before its first child, and parents before children.
      const order = new Map(nodes.map((n, i) => [n.index, i]));
      for (const n of nodes) if (n.subtasks[0]) assert.equal(order.get(n.subtasks[0].index), (order.get(n.index) ?? -1) + 1);
    }),
    { numRuns: 200 },
  );
});

test('DFS scheduling runs only leaves, left to right, a level per run (groups go to child runs), and skips what a person skipped', () => {
  let root = buildTree(TRIP);
  assert.equal(nextInScope(root, '1')?.index, '1-1', 'the root run hands the group 1-1 on');
  assert.equal(nextInScope(root, '1-1')?.index, '1-1-1');
  root = updateTask(root, '1-1-1', done('train booked'));
  assert.equal(nextInScope(root, '1-1')?.index, '1-1-2');
  root = updateTask(root, '1-1', (n) => skipSubtree(n, 'no travel'));
  assert.equal(nextInScope(root, '1-1'), undefined);
  assert.equal(nextInScope(root, '1')?.index, '1-2');
  root = updateTask(root, '1-2', done('bouchons'));
  assert.equal(nextInScope(root, '1'), undefined);
  assert.equal(nextInScope(root, '1-9'), undefined, 'an unknown scope has nothing to run');
});

test('a leaf under way comes first: a task re-queued before it waits until it is done', () => {
  let root = buildTree({
    name: 'r',
    goal: 'g',
    subtasks: [
      { name: 'A', goal: 'a' },
      { name: 'B', goal: 'b' },
    ],
  });
  root = updateTask(root, '1-1', done('a'));
  root = updateTask(root, '1-2', (n) => ({ ...n, status: 'processing' }));
  root = updateTask(root, '1-1', (n) => ({ ...n, status: 'queueing' }));
  assert.equal(nextInScope(root, '1')?.index, '1-2');
  root = updateTask(root, '1-2', done('b'));
  assert.equal(nextInScope(root, '1')?.index, '1-1');
});

test('groups aggregate their children: processing while under way, completed (or aborted) when all are done', () => {
  let root = buildTree(TRIP);
  root = updateTask(root, '1-1-1', (n) => ({ ...n, status: 'processing' }));
  assert.equal(findTask(root, '1-1')?.status, 'processing');
  assert.equal(root.status, 'processing');
  root = updateTask(root, '1-1-1', done('ok'));
  root = updateTask(root, '1-1-2', (n) => ({ ...n, status: 'aborted', summary: 'no rooms' }));
  assert.equal(findTask(root, '1-1')?.status, 'aborted');
  root = updateTask(root, '1-2', done('ok'));
  assert.equal(root.status, 'aborted');
  const allSkipped = aggregate({ ...buildTree(TRIP), subtasks: buildTree(TRIP).subtasks.map((c) => ({ ...c, status: 'skipped' as const })) });
  assert.equal(allSkipped.status, 'skipped');
});

test('the state machine: created → queueing → processing → completed | aborted | skipped; a finished task can be re-queued (redo)', () => {
  assert.ok(canMove('created', 'queueing') && canMove('queueing', 'processing') && canMove('processing', 'completed'));
  assert.ok(canMove('processing', 'aborted') && canMove('processing', 'skipped') && canMove('completed', 'queueing'));
  assert.ok(!canMove('completed', 'processing') && !canMove('created', 'completed'));
});

test('limits: a tree deeper or wider than allowed is named task by task', () => {
  assert.deepEqual(treeProblems(TRIP, { maxDepth: 3, maxFanout: 2 }), []);
  assert.deepEqual(treeProblems(TRIP, { maxDepth: 2, maxFanout: 1 }), [
    'task 1 has 2 subtasks; at most 1 are allowed',
    'task 1-1 has 2 subtasks; at most 1 are allowed',
    'task 1-1-1 is at level 3; at most 2 levels are allowed',
    'task 1-1-2 is at level 3; at most 2 levels are allowed',
  ]);
});

test('planning as an action: a leaf gains subtasks under its own index', () => {
  const root = attachSubtasks(buildTree(TRIP), '1-2', [
    { name: 'Lunch', goal: 'l' },
    { name: 'Dinner', goal: 'd' },
  ]);
  assert.deepEqual(
    findTask(root, '1-2')?.subtasks.map((n) => n.index),
    ['1-2-1', '1-2-2'],
  );
  assert.equal(nextInScope(root, '1-2')?.index, '1-2-1', 'the subtasks run under the task that planned');
  assert.equal(nextInScope(root, '1-1')?.index, '1-1-1');
});

test('the progress tree renders the seed’s marks: [x] finished with summary, [-] executing, [~] partly done, [ ] not started', () => {
  let root = buildTree(TRIP);
  root = updateTask(root, '1-1-1', done('train booked'));
  root = updateTask(root, '1-1-2', (n) => ({ ...n, status: 'processing', summary: 'comparing prices' }));
  assert.equal(
    renderTaskProgress(root),
    [
      '-[~] 1. "Plan a trip" (partly done)',
      ' -[~] 1-1. "Travel" (partly done)',
      '  -[x] 1-1-1. "Train" (finished: train booked)',
      '  -[-] 1-1-2. "Hotel" (executing) (status: comparing prices)',
      ' -[ ] 1-2. "Food" (not started)',
    ].join('\n'),
  );
});
