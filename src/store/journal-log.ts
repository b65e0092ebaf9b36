/**
 * The step journals' files (docs/operations.md "Embedded stores' file I/O"): a journal entry is
 * written once — the result of a call, before the call returns — and read back only when the call
 * runs again after a crash. Writing each as a file of its own (a new file and a rename) cost
 * 0.15–1 ms here, and every local call writes one or two; appending a line to its run's log costs a
 * few microseconds. One log per run (its workflow and run id, the keys' common prefix).
 *
 * Any process may append (O_APPEND: each entry is one write; a log is kept open for the run's next
 * calls) and read, without a lock: a reader takes complete lines only, each entry begins and ends
 * with a newline so a line torn by a crashed writer stands alone, and the first entry of a key that
 * reads whole wins. Entries carry a hash of their key (the values may be sealed, the keys are not
 * written in the clear).
 */
import { appendFileSync, closeSync, fstatSync, mkdirSync, openSync, statSync } from 'node:fs';
import path from 'node:path';
import { LRUCache } from 'lru-cache';
import { PRIVATE_DIR, PRIVATE_FILE, readAt, withOpenFile } from './small-files';

/** Where in a log one entry's value is. */
interface At {
  position: number;
  length: number;
}

/** What this process has read of one log. */
interface LogIndex {
  offset: number;
  entries: Map<string, At[]>;
}

/** Logs whose index a process keeps (a run's calls come one after another; older runs are read again if asked). */
const INDEXED_LOGS = 256;
/** Logs a process keeps open for appending: the runs whose calls it is making now (an fd each). */
const OPEN_LOGS = 64;

const NEWLINE = 10;

/** Notes where one entry of `hash` is (a key may have several: the first that reads whole wins). */
function addEntry(index: LogIndex, hash: string, at: At): void {
  const known = index.entries.get(hash);
  if (known) known.push(at);
  else index.entries.set(hash, [at]);
}

export class JournalLogs {
  private readonly indexes = new LRUCache<string, LogIndex>({ max: INDEXED_LOGS });
  private readonly fds = new LRUCache<string, number>({ max: OPEN_LOGS, dispose: (fd) => closeSync(fd) });
  private readonly dirs = new Set<string>();

  /** `file`'s entry for `hash` (the first that parses), or undefined. */
  read<T>(file: string, hash: string): T | undefined {
    const index = this.refresh(file);
    for (const at of index?.entries.get(hash) ?? []) {
      const text = withOpenFile(file, (fd) => readAt(fd, at.position, at.length).toString('utf8'));
      if (text === undefined) return undefined;
      try {
        return JSON.parse(text) as T;
      } catch {
        // A line torn by a writer that crashed: a later entry of the key may be whole.
      }
    }
    return undefined;
  }

  /**
   * Appends through an fd kept open for the run's next calls, and indexes the entry itself when nothing
   * else was appended since this process last read the log: the next `read` then finds the log's size
   * unchanged and reads nothing (before, each call's lookup read back the previous call's entry).
   */
  append(file: string, hash: string, json: string): void {
    const entry = Buffer.from(`\n${hash}\t${json}\n`);
    let written = this.write(file, entry);
    if (written.nlink === 0) {
      // The log was removed while open (its directory cleared): the entry goes to a new one, as a path-based append's would.
      this.fds.delete(file);
      this.indexes.delete(file);
      written = this.write(file, entry);
    }
    const start = written.size - entry.length;
    const index = this.indexes.get(file) ?? (start === 0 ? this.newIndex(file) : undefined);
    if (index?.offset !== start) return; // another process appended meanwhile: `refresh` reads it all
    addEntry(index, hash, { position: start + 2 + hash.length, length: entry.length - 3 - hash.length });
    index.offset = written.size;
  }

  /** Appends `entry` to the log through its open fd; the log's size and link count right after. */
  private write(file: string, entry: Buffer): { size: number; nlink: number } {
    const fd = this.open(file);
    appendFileSync(fd, entry);
    return fstatSync(fd);
  }

  private open(file: string): number {
    const open = this.fds.get(file);
    if (open !== undefined) return open;
    const dir = path.dirname(file);
    if (!this.dirs.has(dir)) {
      mkdirSync(dir, PRIVATE_DIR);
      this.dirs.add(dir);
    }
    const fd = openSync(file, 'a', PRIVATE_FILE.mode);
    this.fds.set(file, fd);
    return fd;
  }

  private newIndex(file: string): LogIndex {
    const index: LogIndex = { offset: 0, entries: new Map() };
    this.indexes.set(file, index);
    return index;
  }

  /** The index of `file` with every complete line appended since it was last read; none for a log never seen that does not exist. */
  private refresh(file: string): LogIndex | undefined {
    const size = statSync(file, { throwIfNoEntry: false })?.size;
    const known = this.indexes.get(file);
    if (size === undefined) return known;
    const index = known ?? this.newIndex(file);
    if (size <= index.offset) return index;
    const from = index.offset;
    const data = withOpenFile(file, (fd) => readAt(fd, from, size - from));
    if (!data) return index;
    const end = data.lastIndexOf(NEWLINE) + 1;
    for (let start = 0; start < end;) {
      const stop = data.indexOf(NEWLINE, start);
      const tab = data.indexOf(9, start);
      if (tab > start && tab < stop) {
        addEntry(index, data.toString('latin1', start, tab), { position: from + tab + 1, length: stop - tab - 1 });
      }
      start = stop + 1;
    }
    index.offset = from + end;
    return index;
  }
}
