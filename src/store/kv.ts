/**
 * A small durable key-value store for tool data (notes) and tool-run results.
 * The file backend keeps one JSON file per key under DATA_DIR and writes by
 * rename, so a crash never leaves a half-written value and concurrent writers
 * of one key never interleave (synchronous calls: see small-files.ts). With a sealer (encryption
 * on) each file holds its key and value sealed; files from before read as they are. The journals'
 * entries, written once each, go to one append-only log per run instead (journal-log.ts).
 */
import { createHash } from 'node:crypto';
import path from 'node:path';
import { PLAIN, type Sealer } from './sealing/sealer';
import { JournalLogs } from './journal-log';
import { readJsonIfExists, writeByRename } from './small-files';

/**
 * The journals: namespaces whose keys (`<workflow id>/<run id>/<call>[:<part>]`) are each written once,
 * before the call they journal returns, and read when it runs again. A key's first value stays.
 */
export const JOURNALS = { steps: 'step-journal', calls: 'local-call-journal', memoryPasses: 'memory-passes' } as const;
const JOURNAL_NAMESPACES: ReadonlySet<string> = new Set(Object.values(JOURNALS));

export interface KeyValueStore {
  get<T = unknown>(namespace: string, key: string): Promise<T | undefined>;
  put(namespace: string, key: string, value: unknown): Promise<void>;
}

export class MemoryKeyValueStore implements KeyValueStore {
  private readonly data = new Map<string, string>();
  async get<T>(namespace: string, key: string): Promise<T | undefined> {
    const raw = this.data.get(`${namespace}\u0000${key}`);
    return raw === undefined ? undefined : (JSON.parse(raw) as T);
  }
  async put(namespace: string, key: string, value: unknown): Promise<void> {
    this.data.set(`${namespace}\u0000${key}`, JSON.stringify(value));
  }
}

/** File names are hashes: any key (slashes, unicode) is safe, and namespaces stay readable. */
const keyHash = (key: string) => createHash('sha256').update(key).digest('hex').slice(0, 40);
const fileName = (key: string) => `${keyHash(key)}.json`;
// Dots are escaped too, so no namespace can name a parent directory.
const LOGS_DIR = 'runs';
const dirName = (namespace: string) => namespace.replace(/[^A-Za-z0-9_-]/g, (c) => `%${c.charCodeAt(0).toString(16)}`);
/**
 * Every journal's entries of a run, in one log: a run's first entry creates its log, and a new file cost
 * 0.1-2 ms of the disk's time here (a session turn made two, one per journal). Its dot keeps it apart
 * from any namespace's directory (dirName escapes dots).
 */
const RUN_LOGS_DIR = 'journal.runs';
/** The run a journal key belongs to: the key up to its last `/`. */
const runOf = (key: string) => key.slice(0, Math.max(0, key.lastIndexOf('/')));
/** An entry's hash in its run's log: the journal's name and the key. */
const entryHash = (namespace: string, key: string) => keyHash(`${namespace}\u0000${key}`);

/** The worker's FileKeyValueStore: the step journals under DATA_DIR. */
export const kvDirOf = (config: { dataDir: string }): string => path.join(config.dataDir, 'kv');

/**
 * Where a FileKeyValueStore at `root` keeps the journals: the runs' logs (one a run), then, for runs
 * journaled before those, each journal's logs (one a run and journal) and its one-entry files.
 */
export function journalDirectories(root: string): { logs: string; entries?: string }[] {
  return [
    { logs: path.join(root, RUN_LOGS_DIR) },
    ...Object.values(JOURNALS).map((namespace) => ({ logs: path.join(root, dirName(namespace), LOGS_DIR), entries: path.join(root, dirName(namespace)) })),
  ];
}

export class FileKeyValueStore implements KeyValueStore {
  /** Namespace directories made by this store (one mkdir each, not one per write). */
  private readonly dirs = new Set<string>();
  private readonly logs = new JournalLogs();
  constructor(
    private readonly root: string,
    private readonly sealer: Sealer = PLAIN,
  ) {}

  private file(namespace: string, key: string): string {
    return path.join(this.root, dirName(namespace), fileName(key));
  }

  /** A journal key's run log, where every journal of the run writes. */
  private runLog(key: string): string {
    return path.join(this.root, RUN_LOGS_DIR, `${keyHash(runOf(key))}.jsonl`);
  }

  /** Where a run journaled before the run logs kept this journal's entries. */
  private journalLog(namespace: string, key: string): string {
    return path.join(this.root, dirName(namespace), LOGS_DIR, `${keyHash(runOf(key))}.jsonl`);
  }

  async get<T>(namespace: string, key: string): Promise<T | undefined> {
    await this.sealer.ready();
    // A journal entry is in its run's log, or (written before) in the journal's own log of the run, or in a file of its own.
    const journaled = JOURNAL_NAMESPACES.has(namespace) ? (this.logs.read(this.runLog(key), entryHash(namespace, key)) ?? this.logs.read(this.journalLog(namespace, key), keyHash(key))) : undefined;
    const stored = journaled ?? readJsonIfExists(this.file(namespace, key));
    return stored === undefined ? undefined : this.sealer.open<{ key: string; value: T }>(stored).value;
  }

  async put(namespace: string, key: string, value: unknown): Promise<void> {
    await this.sealer.ready();
    const sealed = JSON.stringify(this.sealer.seal({ key, value }));
    if (JOURNAL_NAMESPACES.has(namespace)) this.logs.append(this.runLog(key), entryHash(namespace, key), sealed);
    else writeByRename(this.file(namespace, key), sealed, this.dirs);
  }
}
