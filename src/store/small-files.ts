/**
 * Small-file I/O of the embedded stores under DATA_DIR (the key-value store, the memory threads'
 * and long-term memory's files), done with synchronous calls on purpose. Their files are small and
 * local: a synchronous call returns in microseconds, while a promise-based one costs about five
 * times the CPU (a round trip through libuv's thread pool, its wake-ups and a FileHandle) — ≈ 0.5 ms
 * against ≈ 0.1 ms per journal read and write here, and every local call writes one (docs/operations.md
 * "Embedded stores' file I/O"). Calls keep their promise-returning signatures.
 */
import { closeSync, fstatSync, mkdirSync, openSync, readFileSync, readSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import path from 'node:path';

/**
 * How Threadline's files and directories under DATA_DIR are made: its user's alone (0600, 0700),
 * whatever the umask. They hold people's memory, notes, usage, blobs and keys.
 */
export const PRIVATE_FILE = { mode: 0o600 } as const;
export const PRIVATE_DIR = { recursive: true, mode: 0o700 } as const;

const NEWLINE = 10;

export const isMissing = (err: unknown): boolean => (err as NodeJS.ErrnoException).code === 'ENOENT';

/** The file's text, or undefined when it does not exist. */
export function readTextIfExists(file: string): string | undefined {
  // Missing is common (a journal entry not written yet, an index entry): a stat says so in ~1 µs of CPU,
  // where a failed read makes and throws an error, ~9 µs. The read still handles a file removed meanwhile.
  if (!statSync(file, { throwIfNoEntry: false })) return undefined;
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    if (isMissing(err)) return undefined;
    throw err;
  }
}

/** The file's JSON, or undefined when it does not exist. */
export function readJsonIfExists<T>(file: string): T | undefined {
  const text = readTextIfExists(file);
  return text === undefined ? undefined : (JSON.parse(text) as T);
}

/**
 * Replaces the file's content at once (a new file renamed over it): a reader sees the old content or
 * the new, never half, and a crash leaves at most a stray `.tmp` file. `dirs`: directories known to
 * exist (the file's is made, and added, when missing).
 */
export function writeByRename(file: string, text: string | Uint8Array, dirs?: Set<string>): void {
  const dir = path.dirname(file);
  if (dirs && !dirs.has(dir)) {
    mkdirSync(dir, PRIVATE_DIR);
    dirs.add(dir);
  }
  const tmp = `${file}.${randomUUID()}.tmp`;
  try {
    writeFileSync(tmp, text, PRIVATE_FILE);
  } catch (err) {
    // A directory removed since it was made (a test's cleanup, a person's): made again, once.
    if (!dirs || !isMissing(err)) throw err;
    mkdirSync(dir, PRIVATE_DIR);
    writeFileSync(tmp, text, PRIVATE_FILE);
  }
  renameSync(tmp, file);
}

/** Reads `length` bytes at `position` of an open file; fewer at its end. */
export function readAt(fd: number, position: number, length: number): Buffer {
  const buf = Buffer.alloc(length);
  const bytesRead = readSync(fd, buf, 0, length, position);
  return buf.subarray(0, bytesRead);
}

/**
 * Calls `visit` with `file`'s whole lines, the last first, until it returns false, reading the file from
 * its end in growing windows (a listing of the newest entries reads only them). Bytes after the last
 * newline (a line being appended) are skipped; empty lines too. Nothing when the file does not exist.
 */
export function eachLineFromEnd(file: string, visit: (line: string) => boolean, firstWindow = 64 * 1024): void {
  withOpenFile(file, (fd, size) => {
    let pos = size; // what lies before `pos` is not read yet
    let rest = Buffer.alloc(0); // the read start of the earliest line seen, whose beginning lies before `pos`
    let whole = false; // whether the torn tail, if any, was dropped
    for (let window = firstWindow; pos > 0 || rest.length > 0; window = Math.min(window * 2, 4 * 1024 * 1024)) {
      const start = Math.max(0, pos - window);
      const chunk = pos > start ? Buffer.concat([readAt(fd, start, pos - start), rest]) : rest;
      pos = start;
      let end = chunk.length; // the current line ends before `end`
      if (!whole) {
        const last = chunk.lastIndexOf(NEWLINE);
        if (last < 0 && pos > 0) {
          rest = chunk;
          continue;
        }
        end = Math.max(0, last);
        whole = true;
      }
      for (;;) {
        const newline = end > 0 ? chunk.lastIndexOf(NEWLINE, end - 1) : -1;
        if (newline < 0 && pos > 0) break;
        const line = chunk.toString('utf8', newline + 1, end);
        if (line.trim() !== '' && !visit(line)) return;
        if (newline < 0) return;
        end = newline;
      }
      rest = chunk.subarray(0, end);
    }
  });
}

/** Runs `fn` with the file open for reading and closes it; undefined when the file does not exist. */
export function withOpenFile<T>(file: string, fn: (fd: number, size: number) => T): T | undefined {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch (err) {
    if (isMissing(err)) return undefined;
    throw err;
  }
  try {
    return fn(fd, fstatSync(fd).size);
  } finally {
    closeSync(fd);
  }
}
