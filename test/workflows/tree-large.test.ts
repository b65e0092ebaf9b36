/**
 * A large tree stays within Temporal's limits: a 201-node tree (10 groups of 19 leaves) completes,
 * and no workflow of the run — the root, or any group's child run — has a history past 2,000
 * events, because each run executes only its own level of leaves. Real server, real worker, the
 * real `openai` client over HTTP to the stub model server.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { ExecutionState } from '../../src/planning/execution-state';
import { dfs } from '../../src/planning/task-tree';
import { Runs } from '../../src/temporal/runs';
import { lastMessage, StubModelServer, type StubRequest } from '../helpers/stub-model-server';
import { startTestEnv, stubProvider, testConfig, type TestEnv } from '../helpers/temporal-env';

const GROUPS = 10;
const LEAVES = 19;
const stub = new StubModelServer();
let env: TestEnv;

before(async () => {
  await stub.start();
  env = await startTestEnv({ provider: stubProvider(stub.url), config: testConfig({ MAX_TREE_FANOUT: String(LEAVES), MAX_TREE_DEPTH: '3' }) });
});
after(async () => {
  await env?.stop();
  await stub.stop();
});

test(`a ${1 + GROUPS + GROUPS * LEAVES}-node tree completes with every workflow history under 2,000 events`, { timeout: 240_000 }, async (t) => {
  const goal = 'run a large tree';
  const tree = {
    name: 'Large',
    goal,
    subtasks: Array.from({ length: GROUPS }, (_, g) => ({
      name: `Group ${g + 1}`,
      goal: `group ${g + 1}`,
      subtasks: Array.from({ length: LEAVES }, (_, l) => ({ name: `Leaf ${g + 1}.${l + 1}`, goal: `leaf ${g + 1}.${l + 1}` })),
    })),
  };
  const taskOf = (r: StubRequest) => /Current task: (\S+)\./.exec(lastMessage(r))?.[1] ?? '?';
  stub.script(goal, {
    task_tree: [tree],
    react_action: Array.from({ length: GROUPS * LEAVES }, () => (r: StubRequest) => ({ thought: 'quick', action: 'finish', result: `done ${taskOf(r)}` })),
    final_answer: [{ answer: 'all leaves done' }],
  });
  // Past the soft token limit, the shared thread's older records are summarized (summaries have no goal line).
  stub.script('', { memory_summary: Array.from({ length: 200 }, (_, i) => ({ summary: `leaves done so far (${i})` })) });
  const runs = new Runs(env.client, env.config);
  const { runId } = await runs.start({ userId: 'tree-tester', goal, engine: 'tree' });
  const done = (await env.client.workflow.getHandle(runId).result()) as ExecutionState;

  assert.equal(done.status, 'completed', done.lastError ?? '');
  const nodes = done.tree ? dfs(done.tree) : [];
  assert.equal(nodes.length, 1 + GROUPS + GROUPS * LEAVES);
  assert.ok(
    nodes.every((n) => n.status === 'completed'),
    'every task completed',
  );
  assert.equal(nodes.find((n) => n.index === '1-7-13')?.result, 'done 1-7-13', 'each leaf’s own result came back to the root');
  assert.equal(stub.requestsFor(goal, 'react_action').length, GROUPS * LEAVES, 'one iteration per leaf, none repeated');

  const workflowIds = [runId, ...Array.from({ length: GROUPS }, (_, g) => `${runId}.t1-${g + 1}`)];
  const sizes = await Promise.all(workflowIds.map(async (id) => ((await env.client.workflow.getHandle(id).fetchHistory()).events ?? []).length));
  const largest = Math.max(...sizes);
  t.diagnostic(`history events: root ${sizes[0]}, group runs ${sizes.slice(1).join(' ')}`);
  assert.ok(largest < 2_000, `largest history: ${largest} events (${sizes.join(', ')})`);
  assert.ok(sizes[0] !== undefined && sizes[0] < 200, `the root's history holds the groups, not the leaves: ${sizes[0]} events`);
});
