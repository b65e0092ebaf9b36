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
 *         longterm/<user>/text-index      the full-text indexes as of an offset of records.jsonl (sealed
 *                                         with the records): a cold load reads the records before that
 *                                         offset without analysing their words again
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
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { rename } from 'node:fs/promises';
import path from 'node:path';
import { deserialize, serialize } from 'node:v8';
import { LRUCache } from 'lru-cache';
import { fileSafe, JsonlTail, withDirLock } from '../memory/file-store';
import { PLAIN, type Sealer } from '../sealing/sealer';
import { eachLineFromEnd, isMissing, PRIVATE_DIR, readAt, withOpenFile, writeByRename } from '../small-files';
import { KeyedMutex, readerOf, writeSection } from './in-memory-store';
import { auditEntryMatches, type LongTermAuditEntry, type LongTermAuditFilter, type LongTermReader, type LongTermRecord, type LongTermStore, type LongTermWriter } from './store';
import { vectorFromBase64, vectorToBase64 } from '../../longterm/vectors';
import type { MemoryKind } from '../../longterm/contract';
import { analyze } from '../../longterm/text';
import { UserIndex, type TextSnapshot } from './user-index';

interface LoadedUser {
  dir: string;
  index: UserIndex;
  /** Records indexed since the full-text snapshot (or since none): a new one is written past `snapshotDue`. */
  sinceSnapshot: number;
  /** Records the last snapshot written or read covers. */
  inSnapshot: number;
  /** Whether the first look for a snapshot was made. */
  snapshotTried: boolean;
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
  /** Records indexed since a user's full-text snapshot before a new one is written. @default SNAPSHOT_AFTER_RECORDS */
  snapshotAfterRecords?: number;
  /** Seals every line of the records, vectors and audit files, and the full-text snapshot (THREADLINE_ENCRYPTION_KEY). @default PLAIN */
  sealer?: Sealer;
}

/**
 * A user's full-text snapshot is written once this many records were indexed without one: a cold load of
 * 95,000 messages and 5,000 facts spent about half of its 1.1 s analysing and indexing their words.
 */
export const SNAPSHOT_AFTER_RECORDS = 5_000;
const SNAPSHOT_FILE = 'text-index';
/** Bumped when the snapshot's shape changes; a snapshot of another version is rebuilt. */
const SNAPSHOT_VERSION = 1;
/** Bytes of records.jsonl before the snapshot's offset that it keeps, to see the log is the one it was taken of. */
const TAIL_BYTES = 256;

interface SnapshotFile {
  version: number;
  /** What `analyze` makes of a probe text: a snapshot of words analysed otherwise is rebuilt. */
  analysis: string;
  offset: number;
  tail: Uint8Array;
  text: TextSnapshot;
}

/** Folding, stopwords, stems, numbers and a ligature: changes of `analyze` show here. */
const analysisProbe = () => analyze("The Zoë's dogs LIVED in 42 houses; ﬁnely organized workers were running happily").join(' ');

export class FileLongTermStore implements LongTermStore {
  private readonly users: LRUCache<string, LoadedUser>;
  private readonly mutex = new KeyedMutex();
  private readonly sealer: Sealer;
  private readonly snapshotAfter: number;

  constructor(
    private readonly root: string,
    options: FileLongTermStoreOptions = {},
  ) {
    this.sealer = options.sealer ?? PLAIN;
    this.snapshotAfter = Math.max(1, options.snapshotAfterRecords ?? SNAPSHOT_AFTER_RECORDS);
    this.users = new LRUCache<string, LoadedUser>({
      max: Math.max(1, options.maxUsers ?? 100),
      // After the user's write in flight (the mutex): its appends go to files still open. A reader handed
      // out before keeps its own index and reads on; the files reopen on their next append.
      dispose: (user, userId, reason) => {
        if (reason === 'evict') void this.mutex.run(userId, () => closeUser(user));
      },
    });
  }

  /** Users whose full-text indexes this process took from a snapshot instead of analysing their log. */
  restoredSnapshots = 0;

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
    await Promise.all(users.map((u) => u.queue)); // a snapshot being written
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
        sinceSnapshot: 0,
        inSnapshot: 0,
        snapshotTried: false,
        records: new JsonlTail(path.join(dir, 'records.jsonl')),
        audit: new JsonlTail(path.join(dir, 'audit.jsonl')),
        vectors: new JsonlTail(path.join(dir, 'vectors.jsonl')),
        queue: Promise.resolve(),
      };
      this.users.set(userId, user);
    }
    return user;
  }

  /** Applies what was appended since the last look (by any process); a first look starts from the full-text snapshot. */
  private catchUp(user: LoadedUser, repair = false): Promise<void> {
    const next = user.queue.then(async () => {
      if (!user.snapshotTried) {
        user.snapshotTried = true;
        this.restoreSnapshot(user);
      }
      const records = this.opened(await user.records.read(repair));
      user.index.apply(records);
      user.sinceSnapshot += records.length;
      user.index.applyVectors(this.opened(await user.vectors.read(repair)).map((l) => ({ kind: l.kind, id: l.id, vector: vectorFromBase64(l.v) })));
    });
    user.queue = next.catch(() => undefined);
    return next;
  }

  /**
   * After a read's catch-up, in the user's queue (the read itself does not wait for it): a new snapshot
   * once enough records were indexed without one. Never in a write section, so an import of thousands of
   * records writes none until the user is next searched.
   */
  private snapshotIfDue(user: LoadedUser): void {
    if (!this.snapshotDue(user)) return;
    const write = () => {
      if (!this.snapshotDue(user)) return; // another read's turn wrote it meanwhile
      try {
        this.writeSnapshot(user);
      } catch (err) {
        console.warn(`long-term memory: the full-text snapshot of ${user.dir} was not written (${(err as Error).message})`);
      }
    };
    user.queue = user.queue.then(() => new Promise<void>((resolve) => setImmediate(() => resolve(write()))));
  }

  /** Whether enough was indexed since the last snapshot: past a quarter of what it holds too, so a growing user's snapshots grow geometrically. */
  private snapshotDue(user: LoadedUser): boolean {
    return user.sinceSnapshot >= Math.max(this.snapshotAfter, user.inSnapshot / 4);
  }

  /** The bytes of the user's log just before `offset` (at most TAIL_BYTES): what a snapshot taken there keeps, to know the log again. */
  private logTail(user: LoadedUser, offset: number): Buffer | undefined {
    return withOpenFile(user.records.file, (fd) => readAt(fd, Math.max(0, offset - TAIL_BYTES), Math.min(TAIL_BYTES, offset)));
  }

  /**
   * Reads the records the user's snapshot covers into a user that read nothing yet, without indexing
   * their words: the snapshot's indexes hold them. Nothing happens when there is no snapshot, or one of
   * another version, analysis or sealing, or of a log that is not this one (the log then is read whole).
   */
  private restoreSnapshot(user: LoadedUser): void {
    const file = path.join(user.dir, SNAPSHOT_FILE);
    let snapshot: SnapshotFile | undefined;
    try {
      const bytes = readFileSync(file);
      // Sealed, it is JSON of the base64 bytes; plain, V8's serialization (never a "{").
      const sealed = bytes[0] === 0x7b;
      if (sealed !== this.sealer.on) return;
      snapshot = deserialize(sealed ? Buffer.from(this.sealer.open<string>(JSON.parse(bytes.toString('utf8'))), 'base64') : bytes) as SnapshotFile | undefined;
    } catch (err) {
      if (!isMissing(err)) console.warn(`long-term memory: the full-text snapshot ${file} was not read (${(err as Error).message}); indexing the log instead`);
      return;
    }
    if (snapshot?.version !== SNAPSHOT_VERSION || snapshot.analysis !== analysisProbe() || !Number.isInteger(snapshot.offset) || !(snapshot.tail instanceof Uint8Array)) return;
    const tail = this.logTail(user, snapshot.offset);
    if (!tail || !Buffer.from(snapshot.tail).equals(tail)) return;
    const text = UserIndex.textIndexesOf(snapshot.text);
    const records = user.records.offset === 0 ? user.records.linesBefore(snapshot.offset) : undefined;
    if (!text || !records) return;
    const opened = this.opened(records);
    user.index.restoreText(text);
    user.index.apply(opened, false);
    user.records.offset = snapshot.offset;
    user.inSnapshot = opened.length;
    this.restoredSnapshots++;
  }

  /** Writes the user's full-text indexes as of what it read of the log (by rename: a reader sees a whole one). */
  private writeSnapshot(user: LoadedUser): void {
    const { offset } = user.records;
    const tail = this.logTail(user, offset);
    if (!tail || tail.length !== Math.min(TAIL_BYTES, offset)) return;
    const bytes = serialize({ version: SNAPSHOT_VERSION, analysis: analysisProbe(), offset, tail, text: user.index.textSnapshot() } satisfies SnapshotFile);
    writeByRename(path.join(user.dir, SNAPSHOT_FILE), this.sealer.on ? JSON.stringify(this.sealer.seal(bytes.toString('base64'))) : bytes);
    user.inSnapshot += user.sinceSnapshot;
    user.sinceSnapshot = 0;
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
    return readerOf(user.index, () => this.catchUp(user).then(() => this.snapshotIfDue(user)));
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
            user.sinceSnapshot += records.length;
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
