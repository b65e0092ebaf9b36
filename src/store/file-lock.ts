/**
 * The cross-process lock of the embedded stores' files (a memory thread's directory, long-term
 * memory's user directory, the thread index): proper-lockfile's protocol — an entry made
 * atomically, its mtime refreshed while held, taken over when stale — with two changes for cost:
 *
 * - The entry is a hard link to a base file (`makeEntry`), not a directory: on this project's ext4
 *   a mkdir + rmdir pair takes ~220 µs, a link + unlink ~15 µs. A link, like a mkdir or an exclusive
 *   create, fails with EEXIST on an entry of any kind, so processes making directory, file or link
 *   entries exclude each other; a stale directory entry is removed with rmdir.
 * - The first attempt is synchronous, like the stores' other small-file I/O (small-files.ts): a
 *   free lock costs no trip through libuv's thread pool. A held one is waited for asynchronously.
 */
import fs from 'node:fs';
import lockfile, { type LockOptions } from 'proper-lockfile';
import { PRIVATE_FILE } from './small-files';

/** The file every lock entry at `entry` is a hard link to: made once, kept (an empty file). */
const baseOf = (entry: string): string => `${entry}.base`;

/**
 * Makes the lock entry, atomically: a hard link to its base file, so taking a lock allocates no inode
 * (creating a file took ≈ 190 µs on this ext4 while writes were pending, a link ≈ 15 µs). The first
 * lock of a path makes the base; taking the lock sets the mtime others judge staleness by (the base's
 * own, shared by the entry). Fails with EEXIST while the entry exists.
 */
function makeEntry(entry: string): void {
  const base = baseOf(entry);
  try {
    fs.linkSync(base, entry);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    fs.closeSync(fs.openSync(base, 'a', PRIVATE_FILE.mode));
    fs.linkSync(base, entry);
  }
}

const isDirectoryEntry = (err: NodeJS.ErrnoException | null): boolean => err?.code === 'EISDIR' || err?.code === 'EPERM';

/** The `fs` proper-lockfile is given: its mkdir links the entry to its base, its rmdir removes an entry of any kind. */
const LOCK_FS = {
  ...fs,
  // The retries of a held lock wait asynchronously; each attempt is the same synchronous link.
  mkdir(file: string, callback: (err: NodeJS.ErrnoException | null) => void): void {
    let failed: NodeJS.ErrnoException | null = null;
    try {
      makeEntry(file);
    } catch (err) {
      failed = err as NodeJS.ErrnoException;
    }
    process.nextTick(callback, failed);
  },
  mkdirSync: makeEntry,
  rmdir(file: string, callback: (err: NodeJS.ErrnoException | null) => void): void {
    fs.unlink(file, (err) => (isDirectoryEntry(err) ? fs.rmdir(file, callback) : callback(err)));
  },
  rmdirSync(file: string): void {
    try {
      fs.unlinkSync(file);
    } catch (err) {
      if (!isDirectoryEntry(err as NodeJS.ErrnoException)) throw err;
      fs.rmdirSync(file);
    }
  },
};

const BASE_OPTIONS = {
  // A holder that died leaves its lock; after 10 s without a refresh others may take it.
  stale: 10_000,
  realpath: false,
  fs: LOCK_FS,
} as const;

/** Short waits at first (a commit holds the lock for a few milliseconds); about 30 s in all, past the stale timeout. */
const RETRIES = { retries: 300, factor: 1.5, minTimeout: 2, maxTimeout: 100, randomize: true } as const;

/**
 * Runs `fn` holding the lock at `lockPath` (guarding `target`), across processes; fails if the lock
 * was lost meanwhile (its refresh failed for longer than the stale timeout).
 */
export async function withFileLock<T>(target: string, lockPath: string, fn: () => Promise<T>): Promise<T> {
  let compromised: Error | undefined;
  const options: LockOptions = {
    ...BASE_OPTIONS,
    lockfilePath: lockPath,
    onCompromised: (err) => {
      compromised = err;
    },
  };
  let release: () => Promise<void> | void;
  try {
    release = lockfile.lockSync(target, options);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ELOCKED') throw err;
    release = await lockfile.lock(target, { ...options, retries: RETRIES });
  }
  try {
    const result = await fn();
    // Another process may have written meanwhile. The caller's retry (same record id) sorts it out.
    if (compromised) throw new Error(`lock on ${target} was lost while writing (${compromised.message}); retry the commit`);
    return result;
  } finally {
    try {
      await release();
    } catch {
      // Released already (compromised) or removed by a process that found it stale: nothing to undo.
    }
  }
}
