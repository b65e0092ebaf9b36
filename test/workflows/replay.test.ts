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

const JSON_PLAIN = Buffer.from('json/plain').toString('base64');

/**
 * A history as it was recorded for the user `Fixture` rather than `fixture`: every JSON payload naming
 * the user (input, search attributes, upserts, activity data) spells it so. Before user keys (issue 32)
 * the search attribute held the id as spelt; such runs and sessions must replay as they were.
 */
function respelt(json: unknown): unknown {
  if (Array.isArray(json)) return json.map(respelt);
  if (json === null || typeof json !== 'object') return json;
  const o = json as { data?: unknown; metadata?: { encoding?: unknown } };
  if (typeof o.data === 'string' && o.metadata?.encoding === JSON_PLAIN) {
    return { ...o, data: Buffer.from(Buffer.from(o.data, 'base64').toString('utf8').replaceAll('"fixture"', '"Fixture"')).toString('base64') };
  }
  return Object.fromEntries(Object.entries(o).map(([k, v]) => [k, respelt(v)]));
}

for (const [title, respell] of [
  ['every recorded history replays without non-determinism', false],
  ['every recorded history replays as recorded for a user id in mixed case (its search attribute as spelt)', true],
] as const) {
  test(title, async () => {
    assert.ok(files.length >= 6, `expected the recorded fixtures in ${dir}`);
    const ids = JSON.parse(readFileSync(path.join(dir, 'workflow-ids.manifest'), 'utf8')) as Record<string, string>;
    const names = files.map((f) => f.replace(/\.json$/, ''));
    const read = (name: string): unknown => JSON.parse(readFileSync(path.join(dir, `${name}.json`), 'utf8'));
    const histories = names.map((name) => ({ workflowId: ids[name] ?? name, history: historyFromJSON(respell ? respelt(read(name)) : read(name)) }));
    const bundle = process.env.THREADLINE_WORKFLOW_BUNDLE;
    const results = Worker.runReplayHistories(bundle ? { workflowBundle: { codePath: bundle } } : { workflowsPath: require.resolve('../../src/workflows') }, histories);
    const replayed: string[] = [];
    for await (const result of results) {
      assert.equal(result.error, undefined, `${result.workflowId}: ${String(result.error)}`);
      replayed.push(result.workflowId);
    }
    assert.deepEqual(replayed.sort(), names.map((n) => ids[n] ?? n).sort());
  });
}
