/** The embedded stores' small-file helpers (src/store/small-files.ts). */
import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { readJsonIfExists, readTextIfExists, withOpenFile, writeByRename } from '../../src/store/small-files';
import { scratchDirs } from '../helpers/scratch-dirs';

const scratch = scratchDirs('threadline-small-files-');
/** A fresh, existing directory. */
const dir = () => {
  const made = scratch();
  mkdirSync(made, { recursive: true });
  return made;
};

test('a missing file reads as undefined; other errors are thrown', () => {
  const root = dir();
  assert.equal(readTextIfExists(path.join(root, 'none.txt')), undefined);
  assert.equal(readJsonIfExists(path.join(root, 'none.json')), undefined);
  assert.equal(
    withOpenFile(path.join(root, 'none.json'), () => 'opened'),
    undefined,
  );
  // A directory is not a file: EISDIR, not "missing".
  assert.throws(() => readTextIfExists(root), /EISDIR/);
  writeFileSync(path.join(root, 'bad.json'), '{not json');
  assert.throws(() => readJsonIfExists(path.join(root, 'bad.json')), SyntaxError);
});

test('writeByRename replaces the content whole and leaves no temporary file', () => {
  const root = dir();
  const file = path.join(root, 'value.json');
  writeByRename(file, JSON.stringify({ v: 1 }));
  writeByRename(file, JSON.stringify({ v: 2 }));
  assert.deepEqual(readJsonIfExists(file), { v: 2 });
  assert.deepEqual(readdirSync(root), ['value.json']);
  assert.equal(
    withOpenFile(file, (_fd, size) => size),
    Buffer.byteLength('{"v":2}'),
  );
});

test('with a set of known directories, the directory is made once and again if it was removed', () => {
  const root = dir();
  const dirs = new Set<string>();
  const file = path.join(root, 'ns', 'deeper', 'key.json');
  writeByRename(file, '"first"', dirs);
  assert.deepEqual([...dirs], [path.dirname(file)]);
  rmSync(path.join(root, 'ns'), { recursive: true });
  writeByRename(file, '"second"', dirs);
  assert.equal(readJsonIfExists(file), 'second');
  // Without the set, a missing directory is the caller's error.
  assert.throws(() => writeByRename(path.join(root, 'absent', 'key.json'), '1'), /ENOENT/);
});
