/**
 * Replays recorded histories of finished runs (test/fixtures/histories) against
 * today's workflow code: a non-deterministic change fails here before it can
 * break runs in flight.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { Worker } from '@temporalio/worker';

const dir = path.join(__dirname, '../fixtures/histories');
const files = readdirSync(dir)
  .filter((f) => f.endsWith('.json'))
  .sort();

test('every recorded history replays without non-determinism', async () => {
  assert.ok(files.length >= 6, `expected the recorded fixtures in ${dir}`);
  const ids = JSON.parse(readFileSync(path.join(dir, 'workflow-ids.manifest'), 'utf8')) as Record<string, string>;
  const names = files.map((f) => f.replace(/\.json$/, ''));
  const histories = names.map((name) => ({ workflowId: ids[name] ?? name, history: historyFromJSON(JSON.parse(readFileSync(path.join(dir, `${name}.json`), 'utf8'))) }));
  const bundle = process.env.THREADLINE_WORKFLOW_BUNDLE;
  const results = Worker.runReplayHistories(bundle ? { workflowBundle: { codePath: bundle } } : { workflowsPath: require.resolve('../../src/workflows') }, histories);
  const replayed: string[] = [];
  for await (const result of results) {
    assert.equal(result.error, undefined, `${result.workflowId}: ${String(result.error)}`);
    replayed.push(result.workflowId);
  }
  assert.deepEqual(replayed.sort(), names.map((n) => ids[n] ?? n).sort());
});
