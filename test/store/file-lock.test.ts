/**
 * The embedded stores' cross-process lock (src/store/file-lock.ts): its entry is a hard link to a
 * base file made once, so taking a lock allocates no inode; the entry is gone once released.
 */
import assert from 'node:assert/strict';
import { mkdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { withFileLock } from '../../src/store/file-lock';
import { scratchDirs } from '../helpers/scratch-dirs';

const scratch = scratchDirs('threadline-file-lock-');
const dir = (): string => {
  const where = scratch();
  mkdirSync(where, { recursive: true });
  return where;
};

test('a lock entry is a hard link to its base file, which every lock of the path reuses', async () => {
  const where = dir();
  const entry = path.join(where, 'lock');
  const inodes: number[] = [];
  for (let i = 0; i < 3; i++) {
    await withFileLock(where, entry, async () => {
      const held = statSync(entry);
      const base = statSync(`${entry}.base`);
      assert.equal(held.ino, base.ino, 'the entry is the base file, linked');
      assert.equal(base.nlink, 2);
      assert.ok(Date.now() - held.mtimeMs < 5_000, 'a lock just taken is fresh, whatever the base held before');
      assert.equal(base.mode & 0o777, 0o600);
      inodes.push(held.ino);
    });
    assert.equal(statSync(entry, { throwIfNoEntry: false }), undefined, 'released: no entry is left');
  }
  assert.equal(new Set(inodes).size, 1, 'the same inode each time');
});

test('locks of one path exclude each other; the second runs once the first is released', async () => {
  const where = dir();
  const entry = path.join(where, 'lock');
  const order: string[] = [];
  let release!: () => void;
  const first = withFileLock(where, entry, async () => {
    order.push('first in');
    await new Promise<void>((r) => (release = r));
    order.push('first out');
  });
  const second = withFileLock(where, entry, async () => void order.push('second'));
  await new Promise((r) => setTimeout(r, 200));
  assert.deepEqual(order, ['first in'], 'the second waits');
  release();
  await Promise.all([first, second]);
  assert.deepEqual(order, ['first in', 'first out', 'second']);
});
