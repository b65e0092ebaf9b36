/**
 * Long-term memory in process (MEMORY_STORE=memory, unit tests): one UserIndex per user, write
 * sections serialized per user. Gone when the process ends.
 */
import { auditEntryMatches, type LongTermAuditEntry, type LongTermAuditFilter, type LongTermReader, type LongTermRecord, type LongTermStore, type LongTermWriter, type RecordVector } from './store';
import { UserIndex } from './user-index';

/** Serializes async sections per key (this process only). */
export class KeyedMutex {
  private readonly tails = new Map<string, Promise<unknown>>();
  run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    const next = previous.then(fn, fn);
    const tail = next.catch(() => undefined);
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return next;
  }
}

/**
 * The reads of `index` as a plain LongTermReader, each after `before` (the file store reads what
 * other processes appended first).
 */
export function readerOf(index: UserIndex, before: () => Promise<void> = async () => {}): LongTermReader {
  const wrap =
    <A extends unknown[], R>(read: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      await before();
      return read.apply(index, args);
    };
  return {
    getMessages: wrap(index.getMessages),
    getFacts: wrap(index.getFacts),
    getEntities: wrap(index.getEntities),
    getEpisodes: wrap(index.getEpisodes),
    getSummaries: wrap(index.getSummaries),
    findEntities: wrap(index.findEntities),
    listFacts: wrap(index.listFacts),
    listEpisodes: wrap(index.listEpisodes),
    listSummaries: wrap(index.listSummaries),
    listMessages: wrap(index.listMessages),
    searchText: wrap(index.searchText),
    nearest: wrap(index.nearest),
    similarEntities: wrap(index.similarEntities),
  };
}

/** A write section over `index`: puts and audit entries collected, handed to `commit` when `fn` returns. */
export async function writeSection<T>(
  index: UserIndex,
  fn: (tx: LongTermWriter) => Promise<T>,
  commit: (records: LongTermRecord[], audit: LongTermAuditEntry[], vectors: RecordVector[]) => Promise<void>,
): Promise<T> {
  const records: LongTermRecord[] = [];
  const audit: LongTermAuditEntry[] = [];
  const vectors: RecordVector[] = [];
  const tx: LongTermWriter = {
    ...readerOf(index),
    put: (items) => void records.push(...structuredClone(items)),
    audit: (entry) => void audit.push(structuredClone(entry)),
    putVectors: (items) => void vectors.push(...structuredClone(items)),
  };
  const result = await fn(tx);
  await commit(records, audit, vectors);
  return result;
}

export class InMemoryLongTermStore implements LongTermStore {
  private readonly users = new Map<string, UserIndex>();
  private readonly audits = new Map<string, LongTermAuditEntry[]>();
  private readonly mutex = new KeyedMutex();

  async setup(): Promise<void> {}
  async end(): Promise<void> {}

  private user(userId: string): UserIndex {
    let index = this.users.get(userId);
    if (!index) this.users.set(userId, (index = new UserIndex()));
    return index;
  }

  reader(userId: string): LongTermReader {
    return readerOf(this.user(userId));
  }

  write<T>(userId: string, fn: (tx: LongTermWriter) => Promise<T>): Promise<T> {
    return this.mutex.run(userId, () =>
      writeSection(this.user(userId), fn, async (records, audit, vectors) => {
        this.user(userId).apply(records);
        this.user(userId).applyVectors(vectors);
        const log = this.audits.get(userId) ?? [];
        log.push(...audit);
        this.audits.set(userId, log);
      }),
    );
  }

  async appendAudit(userId: string, entries: readonly LongTermAuditEntry[]): Promise<void> {
    this.audits.set(userId, [...(this.audits.get(userId) ?? []), ...structuredClone(entries)]);
  }

  async auditLog(userId: string, filter: LongTermAuditFilter = {}): Promise<LongTermAuditEntry[]> {
    const newestFirst = [...(this.audits.get(userId) ?? [])].reverse().filter((e) => auditEntryMatches(e, filter));
    return structuredClone(filter.limit === undefined ? newestFirst : newestFirst.slice(0, filter.limit));
  }
}
