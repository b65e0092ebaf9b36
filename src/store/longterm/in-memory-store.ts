/**
 * Long-term memory in process (MEMORY_STORE=memory, unit tests): one UserIndex per user, write
 * sections serialized per user. Gone when the process ends.
 */
import type { LongTermAuditEntry, LongTermRecord, LongTermStore, LongTermWriter } from './store';
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

/** A write section over `reader`: puts and audit entries collected, handed to `commit` at the end. */
export async function writeSection<T>(
  reader: UserIndex,
  fn: (tx: LongTermWriter) => Promise<T>,
  commit: (records: LongTermRecord[], audit: LongTermAuditEntry[]) => Promise<void>,
): Promise<T> {
  const records: LongTermRecord[] = [];
  const audit: LongTermAuditEntry[] = [];
  // Bound methods of the reader, so the section reads exactly what the index answers.
  const tx: LongTermWriter = {
    getMessages: (ids) => reader.getMessages(ids),
    getFacts: (ids) => reader.getFacts(ids),
    getEntities: (ids) => reader.getEntities(ids),
    getEpisodes: (ids) => reader.getEpisodes(ids),
    getSummaries: (ids) => reader.getSummaries(ids),
    findEntities: (names) => reader.findEntities(names),
    listFacts: (filter) => reader.listFacts(filter),
    listEpisodes: (limit) => reader.listEpisodes(limit),
    listSummaries: (sessionId) => reader.listSummaries(sessionId),
    searchText: (kind, query, limit) => reader.searchText(kind, query, limit),
    put: (items) => void records.push(...structuredClone(items)),
    audit: (entry) => void audit.push(structuredClone(entry)),
  };
  const result = await fn(tx);
  await commit(records, audit);
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

  reader(userId: string): UserIndex {
    return this.user(userId);
  }

  write<T>(userId: string, fn: (tx: LongTermWriter) => Promise<T>): Promise<T> {
    return this.mutex.run(userId, () =>
      writeSection(this.user(userId), fn, async (records, audit) => {
        this.user(userId).apply(records);
        const log = this.audits.get(userId) ?? [];
        log.push(...audit);
        this.audits.set(userId, log);
      }),
    );
  }

  async auditLog(userId: string, options: { limit?: number } = {}): Promise<LongTermAuditEntry[]> {
    const newestFirst = [...(this.audits.get(userId) ?? [])].reverse();
    return structuredClone(options.limit === undefined ? newestFirst : newestFirst.slice(0, options.limit));
  }
}
