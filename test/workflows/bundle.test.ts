/**
 * The workflow bundle as a worker builds it at start: in a child process (so webpack's peak never
 * counts against the worker's memory), and without zod. Each run a worker loads evaluates every
 * module of the bundle again in its sandbox (the SDK gives each workflow its own module cache), so
 * a heavy library there costs memory for every cached run and time for every replay of an evicted one.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { bundleWorkflowsInChild, bundleWorkflowsToFile } from '../../src/workflow-bundle';

/** The bundle's inline source map. */
function sourceMapOf(code: string): { sources: string[]; sourcesContent?: unknown } {
  const data = code.slice(code.lastIndexOf('//# sourceMappingURL=data:'));
  return JSON.parse(Buffer.from(data.slice(data.indexOf('base64,') + 'base64,'.length), 'base64').toString('utf8')) as { sources: string[]; sourcesContent?: unknown };
}

test('a worker bundles its workflows in a child process, and the bundle does not include zod', async () => {
  const code = await bundleWorkflowsInChild();
  assert.match(code, /src\/workflows\/plan-execution\.ts/, 'the bundle names its modules');
  assert.match(code, /planExecutionWorkflow/);
  assert.doesNotMatch(code, /node_modules\/zod\//);
});

test("the worker's bundle goes to a file removed once read; its source map names the sources without holding them", async () => {
  const built = await bundleWorkflowsToFile();
  try {
    const code = readFileSync(built.path, 'utf8');
    assert.match(code, /planExecutionWorkflow/);
    const map = sourceMapOf(code);
    assert.ok(
      map.sources.some((s) => s.endsWith(path.join('src', 'workflows', 'plan-execution.ts'))),
      'stack traces still map to the TypeScript files',
    );
    assert.equal(map.sourcesContent, undefined, 'no sources in the bundle: the SDK shows them only with showStackTraceSources');
  } finally {
    await built.remove();
  }
  assert.equal(existsSync(path.dirname(built.path)), false);
});
