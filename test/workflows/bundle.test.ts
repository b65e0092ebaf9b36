/**
 * The workflow bundle as a worker builds it at start: in a child process (so webpack's peak never
 * counts against the worker's memory), and without zod. Each run a worker loads evaluates every
 * module of the bundle again in its sandbox (the SDK gives each workflow its own module cache), so
 * a heavy library there costs memory for every cached run and time for every replay of an evicted one.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { bundleWorkflowsInChild } from '../../src/workflow-bundle';

test('a worker bundles its workflows in a child process, and the bundle does not include zod', async () => {
  const code = await bundleWorkflowsInChild();
  assert.match(code, /src\/workflows\/plan-execution\.ts/, 'the bundle names its modules');
  assert.match(code, /planExecutionWorkflow/);
  assert.doesNotMatch(code, /node_modules\/zod\//);
});
