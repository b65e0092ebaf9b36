/**
 * The embedded long-term store under DATA_DIR (MEMORY_STORE=file), safe when the API and the
 * worker processes write one user's memory at once.
 *
 * Layout: longterm/<user>/records.jsonl   every record written, one per line; a later line with
 *                                          the same kind and id replaces the earlier one
 *         longterm/<user>/audit.jsonl     the audit of writes
 *         longterm/<user>/vectors.jsonl   dense vectors (EMBEDDING_MODEL): {kind, id, v: base64 Float32}
 *         longterm/<user>/lock            lock held around a write section (store/file-lock.ts: a
 *                                         hard link to lock.base beside it)
 *
 * Each process keeps, per user it has touched, a UserIndex (records plus BM25 full-text
 * indexes) built from the log, and before every read applies the lines appended since (one
 * `stat` when nothing changed), so a read after another process's write sees it. A write
 * section takes the lock, catches up (cutting off a torn trailing line a crash left), runs,
 * then appends its records and audit entries.
 *
 * The indexes held are bounded (`maxUsers`): the least recently used user's is dropped, and its
 * next use rebuilds it from the log — so a long-running API that searched many users' memory
 * holds only the recent ones, not every user's records.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { rename } from 'node:fs/promises';
import path from 'node:path';
import { LRUCache } from 'lru-cache';
import { fileSafe, JsonlTail, withDirLock } from '../memory/file-store';
import { PLAIN, type Sealer } from '../sealing/sealer';
import { eachLineFromEnd, PRIVATE_DIR } from '../small-files';
import { KeyedMutex, readerOf, writeSection } from './in-memory-store';
import { auditEntryMatches, type LongTermAuditEntry, type LongTermAuditFilter, type LongTermReader, type LongTermRecord, type LongTermStore, type LongTermWriter } from './store';
import { vectorFromBase64, vectorToBase64 } from '../../longterm/vectors';
import type { MemoryKind } from '../../longterm/contract';
import { UserIndex } from './user-index';

interface LoadedUser {
  dir: string;
  index: UserIndex;
  records: JsonlTail<LongTermRecord>;
  audit: JsonlTail<LongTermAuditEntry>;
  vectors: JsonlTail<VectorLine>;
  /** Serializes this process's reads of the tail, so no line is applied twice. */
  queue: Promise<unknown>;
}

const closeUser = (u: LoadedUser) => Promise.all([u.records.close(), u.audit.close(), u.vectors.close()]).then(() => undefined);

/** One line of vectors.jsonl. */
interface VectorLine {
  kind: MemoryKind;
  id: string;
  v: string;
}

export interface FileLongTermStoreOptions {
  /** Users whose index this process keeps loaded at once. @default 100 */
  maxUsers?: number;
  /** Seals every line of the records, vectors and audit files (THREADLINE_ENCRYPTION_KEY); the indexes live only in memory. @default PLAIN */
  sealer?: Sealer;
}

export class FileLongTermStore implements LongTermStore {
  private readonly users: LRUCache<string, LoadedUser>;
  private readonly mutex = new KeyedMutex();
  private readonly sealer: Sealer;

  constructor(
    private readonly root: string,
    options: FileLongTermStoreOptions = {},
  ) {
    this.sealer = options.sealer ?? PLAIN;
    this.users = new LRUCache<string, LoadedUser>({
      max: Math.max(1, options.maxUsers ?? 100),
      // After the user's write in flight (the mutex): its appends go to files still open. A reader handed
      // out before keeps its own index and reads on; the files reopen on their next append.
      dispose: (user, userId, reason) => {
        if (reason === 'evict') void this.mutex.run(userId, () => closeUser(user));
      },
    });
  }

  /** Users whose index is loaded now (least recently used ones are dropped past `maxUsers`). */
  get loadedUsers(): number {
    return this.users.size;
  }

  async setup(): Promise<void> {
    await this.sealer.ready();
    mkdirSync(this.root, PRIVATE_DIR);
  }

  async end(): Promise<void> {
    const users = [...this.users.values()];
    this.users.clear();
    await Promise.all(users.map(closeUser));
  }

  /**
   * The folder of `from` becomes the folder of `to` when `to` has none (on a disk that ignores case
   * they are one folder already). A folder made meanwhile by another process wins; the move is skipped.
   */
  async adoptUser(from: string, to: string): Promise<void> {
    const source = path.join(this.root, fileSafe(from));
    const target = path.join(this.root, fileSafe(to));
    if (source === target) return;
    await this.mutex.run(to, async () => {
      if (existsSync(target) || !existsSync(source)) return;
      await rename(source, target).catch((err: unknown) => {
        if (!['ENOENT', 'EEXIST', 'ENOTEMPTY'].includes((err as NodeJS.ErrnoException).code ?? '')) throw err;
      });
    });
  }

  private user(userId: string): LoadedUser {
    let user = this.users.get(userId);
    if (!user) {
      const dir = path.join(this.root, fileSafe(userId));
      user = {
        dir,
        index: new UserIndex(),
        records: new JsonlTail(path.join(dir, 'records.jsonl')),
        audit: new JsonlTail(path.join(dir, 'audit.jsonl')),
        vectors: new JsonlTail(path.join(dir, 'vectors.jsonl')),
        queue: Promise.resolve(),
      };
      this.users.set(userId, user);
    }
    return user;
  }

  /** Applies what was appended since the last look (by any process). */
  private catchUp(user: LoadedUser, repair = false): Promise<void> {
    const next = user.queue.then(async () => {
      user.index.apply(this.opened(await user.records.read(repair)));
      user.index.applyVectors(this.opened(await user.vectors.read(repair)).map((l) => ({ kind: l.kind, id: l.id, vector: vectorFromBase64(l.v) })));
    });
    user.queue = next.catch(() => undefined);
    return next;
  }

  /**
   * Lines as written: with sealing on, one line holding the batch sealed whole (a write section's
   * records, an import's thousand messages): one seal per append, not one per record (~20 µs each).
   */
  private sealed(lines: readonly unknown[]): unknown[] {
    return this.sealer.on && lines.length > 0 ? [this.sealer.seal(lines)] : [...lines];
  }

  /** Lines as read, opened: a sealed batch gives its lines (a plain line, from before encryption was on, is an object, never an array). */
  private opened<T>(lines: readonly T[]): T[] {
    return lines.flatMap((l) => {
      const opened = this.sealer.open<T | T[]>(l);
      return Array.isArray(opened) ? opened : [opened];
    });
  }

  reader(userId: string): LongTermReader {
    const user = this.user(userId);
    return readerOf(user.index, () => this.catchUp(user));
  }

  write<T>(userId: string, fn: (tx: LongTermWriter) => Promise<T>): Promise<T> {
    const user = this.user(userId);
    return this.mutex.run(userId, async () => {
      mkdirSync(user.dir, PRIVATE_DIR);
      return withDirLock(user.dir, async () => {
        await this.catchUp(user, true);
        // Only its end is read: reading it whole (once a process, and again after the user left the cache) cost 0.5 s at 50,000 entries.
        user.audit.skipToEnd();
        return writeSection(user.index, fn, async (records, audit, vectors) => {
          // In the read queue: a reader catching up meanwhile must not move the tail's offset under the append.
          const appended = user.queue.then(async () => {
            await user.records.append(this.sealed(records));
            user.index.apply(records);
            await user.vectors.append(this.sealed(vectors.map((v) => ({ kind: v.kind, id: v.id, v: vectorToBase64(v.vector) }))));
            user.index.applyVectors(vectors);
          });
          user.queue = appended.catch(() => undefined);
          await appended;
          await user.audit.append(this.sealed(audit));
        });
      });
    });
  }

  appendAudit(userId: string, entries: readonly LongTermAuditEntry[]): Promise<void> {
    if (entries.length === 0) return Promise.resolve();
    const user = this.user(userId);
    // Under the user's lock, like a write section's own entries: appends never interleave.
    return this.mutex.run(userId, async () => {
      mkdirSync(user.dir, PRIVATE_DIR);
      await withDirLock(user.dir, async () => {
        user.audit.skipToEnd();
        await user.audit.append(this.sealed(entries));
      });
    });
  }

  async auditLog(userId: string, filter: LongTermAuditFilter = {}): Promise<LongTermAuditEntry[]> {
    const user = this.user(userId);
    const { limit } = filter;
    if (limit !== undefined) {
      // The newest first, from the file's end, until enough match (the API always asks for a limit):
      // reading the whole audit took 250-730 ms a listing at 50,000 entries.
      const found: LongTermAuditEntry[] = [];
      if (limit > 0)
        eachLineFromEnd(user.audit.file, (line) => {
          const entries = this.opened([JSON.parse(line) as LongTermAuditEntry]);
          for (let i = entries.length - 1; i >= 0 && found.length < limit; i--) {
            const entry = entries[i] as LongTermAuditEntry;
            if (auditEntryMatches(entry, filter)) found.push(entry);
          }
          return found.length < limit;
        });
      return found;
    }
    // A fresh tail: the audit is read whole on demand, never held in memory.
    const all = this.opened(await new JsonlTail<LongTermAuditEntry>(user.audit.file).read());
    const newestFirst = all.reverse().filter((e) => auditEntryMatches(e, filter));
    return filter.limit === undefined ? newestFirst : newestFirst.slice(0, filter.limit);
  }
}
