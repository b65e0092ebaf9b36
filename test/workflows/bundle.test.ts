/**
 * What the workflow bundle carries. Each run a worker loads evaluates every module of the bundle
 * again in its sandbox (the SDK gives each workflow its own module cache), so a heavy library there
 * costs memory for every cached run and time for every replay of an evicted one.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';

test('the workflow bundle the tests run (bundled like a worker bundles it) does not include zod', () => {
  const bundlePath = process.env.THREADLINE_WORKFLOW_BUNDLE;
  assert.ok(bundlePath, 'THREADLINE_WORKFLOW_BUNDLE is set by `npm test`');
  const code = readFileSync(bundlePath, 'utf8');
  assert.match(code, /src\/workflows\/plan-execution\.ts/, 'the bundle names its modules');
  assert.doesNotMatch(code, /node_modules\/zod\//);
});
