/** Scratch directories for tests that write files: one temp root per test file, removed afterwards. */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before } from 'node:test';

/**
 * Registers `before`/`after` hooks that create a temp root named `prefix…` and remove it;
 * returns a function giving a fresh path under it per call, so tests never see each other's data.
 * Root-level `after` hooks run in the order registered: register cleanup that must run before
 * the removal (closing stores) before calling this.
 */
export function scratchDirs(prefix: string, name = 't'): () => string {
  let root = '';
  let n = 0;
  before(async () => {
    root = await mkdtemp(path.join(tmpdir(), prefix));
  });
  after(async () => {
    await rm(root, { recursive: true, force: true });
  });
  return () => {
    // Asked for while tests are being collected (in a describe body), it would be a path under the
    // working directory: data of a test left in the checkout.
    if (!root) throw new Error('a scratch directory is asked for before the test file has started: ask inside a test or a hook');
    return path.join(root, `${name}${++n}`);
  };
}
