/**
 * The step journals' files (docs/operations.md "Embedded stores' file I/O"): a journal entry is
 * written once — the result of a call, before the call returns — and read back only when the call
 * runs again after a crash. Writing each as a file of its own (a new file and a rename) cost
 * 0.15–1 ms here, and every local call writes one or two; appending a line to its run's log costs a
 * few microseconds. One log per run (its workflow and run id, the keys' common prefix).
 *
 * Any process may append (O_APPEND: each entry is one write) and read, without a lock: a reader takes
 * complete lines only, each entry begins and ends with a newline so a line torn by a crashed writer
 * stands alone, and the first entry of a key that reads whole wins. Entries carry a hash of their key
 * (the values may be sealed, the keys are not written in the clear).
 */
import { appendFileSync, mkdirSync, statSync } from 'node:fs';
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

const NEWLINE = 10;

export class JournalLogs {
  private readonly indexes = new LRUCache<string, LogIndex>({ max: INDEXED_LOGS });
  private readonly dirs = new Set<string>();

  /** `file`'s entry for `hash` (the first that parses), or undefined. */
  read<T>(file: string, hash: string): T | undefined {
    const index = this.refresh(file);
    for (const at of index.entries.get(hash) ?? []) {
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

  append(file: string, hash: string, json: string): void {
    const dir = path.dirname(file);
    if (!this.dirs.has(dir)) {
      mkdirSync(dir, PRIVATE_DIR);
      this.dirs.add(dir);
    }
    appendFileSync(file, `\n${hash}\t${json}\n`, PRIVATE_FILE);
  }

  /** The index of `file` with every complete line appended since it was last read. */
  private refresh(file: string): LogIndex {
    let index = this.indexes.get(file);
    if (!index) {
      index = { offset: 0, entries: new Map() };
      this.indexes.set(file, index);
    }
    const size = statSync(file, { throwIfNoEntry: false })?.size ?? 0;
    if (size <= index.offset) return index;
    const from = index.offset;
    const data = withOpenFile(file, (fd) => readAt(fd, from, size - from));
    if (!data) return index;
    const end = data.lastIndexOf(NEWLINE) + 1;
    for (let start = 0; start < end;) {
      const stop = data.indexOf(NEWLINE, start);
      const tab = data.indexOf(9, start);
      if (tab > start && tab < stop) {
        const hash = data.toString('latin1', start, tab);
        const at = { position: from + tab + 1, length: stop - tab - 1 };
        const known = index.entries.get(hash);
        if (known) known.push(at);
        else index.entries.set(hash, [at]);
      }
      start = stop + 1;
    }
    index.offset = from + end;
    return index;
  }
}
