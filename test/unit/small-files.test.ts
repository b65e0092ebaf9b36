/** The embedded stores' small-file helpers (src/store/small-files.ts). */
import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { eachLineFromEnd, readJsonIfExists, readTextIfExists, withOpenFile, writeByRename } from '../../src/store/small-files';
import fc from 'fast-check';
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

test('eachLineFromEnd gives the whole lines last first, skips a torn tail and empty lines, and stops when told (property)', () => {
  const root = dir();
  mkdirSync(root, { recursive: true });
  let n = 0;
  fc.assert(
    fc.property(
      fc.array(fc.string({ unit: fc.constantFrom('a', 'é', '{', '"', ' ', '\n'), maxLength: 40 }), { maxLength: 30 }),
      fc.string({ unit: fc.constantFrom('x', '"'), maxLength: 12 }),
      fc.integer({ min: 1, max: 64 }),
      fc.integer({ min: 0, max: 35 }),
      (pieces, torn, window, stopAfter) => {
        // Lines as a writer appends them (each ends with a newline; some are empty), then a torn tail.
        const text = pieces.map((p) => `${p.replaceAll('\n', '')}\n`).join('') + torn;
        const file = path.join(root, `f${n++}.jsonl`);
        writeFileSync(file, text);
        const expected = pieces
          .map((p) => p.replaceAll('\n', ''))
          .filter((l) => l.trim() !== '')
          .reverse();
        const seen: string[] = [];
        eachLineFromEnd(file, (line) => seen.push(line) < stopAfter || stopAfter === 0, window);
        assert.deepEqual(seen, stopAfter === 0 ? expected : expected.slice(0, stopAfter));
      },
    ),
  );
  const none: string[] = [];
  eachLineFromEnd(path.join(root, 'missing.jsonl'), (line) => none.push(line) > 0);
  assert.deepEqual(none, []);
});
