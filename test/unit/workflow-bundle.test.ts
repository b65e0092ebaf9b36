import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import vm from 'node:vm';
import { asciiOnly } from '../../src/workflow-bundle';

const run = (code: string): unknown => {
  const ascii = asciiOnly(code);
  assert.match(ascii, /^[\x00-\x7f]*$/);
  return vm.runInNewContext(ascii);
};

test('a bundle made ASCII means what it meant', () => {
  assert.equal(run('"a—b" // a dash…'), 'a—b');
  assert.equal(run('"不是"'), '不是');
  assert.equal(run(String.raw`"a\—b"`), 'a—b', 'an escaped character: the escape is taken in');
  assert.equal(run(String.raw`"a\\—b"`), 'a\\—b', 'an escaped backslash stays');
  assert.equal(run('`x—${1 + 1}`'), 'x—2');
  assert.equal(run('/^[—…]+$/u.test("—…")'), true);
  assert.equal(run('/ø/.test("søren")'), true);
  assert.equal(run('var café = 3; café * 2'), 6);
  assert.equal(run('"😀".length'), 2);
});

test('the workflow bundle the tests run is ASCII (V8 would hold a UTF-16 copy of it in each thread)', () => {
  const file = process.env.THREADLINE_WORKFLOW_BUNDLE;
  assert.ok(file, 'scripts/test.mjs bundles the workflows and names the file');
  assert.match(readFileSync(file, 'utf8'), /^[\x00-\x7f]*$/);
});
