/**
 * The embedded MemoryStore under DATA_DIR: no server, survives restarts, and is
 * safe when several processes (the API and the worker) write the same threads.
 *
 * Layout under the root:
 *   threads/<thread>/thread.json        the thread (written once, by rename)
 *   threads/<thread>/operations.jsonl   records, one per line: the commit points
 *   threads/<thread>/states.jsonl       states as snapshot or splice (state-delta.ts)
 *   threads/<thread>/chunks.jsonl       chunks
 *   threads/<thread>/reads.jsonl        records of reads (appended in batches under the lock, no seq)
 *   threads/<thread>/id                 the thread id; index/{states,chunks}/<id> are hard links to it
 *   threads/<thread>/id.<n>             the same, once `id` (then id.<n-1>) has as many links as the file
 *                                       system allows an inode (ext4: 65,000)
 *   threads/<thread>/lock               lock held around writes (file-lock.ts: a hard link to
 *                                       lock.base beside it, made once)
 *   index/threads.jsonl                 {threadId, userId, createdAt} per thread, for listThreads
 *   index/{states,chunks}/<id>          the thread an id belongs to (getState/getChunks take bare ids);
 *                                       hard links cost a directory entry each, not a disk block
 *   index/messages/<id>                 {threadId, chunkId} of the newest chunk with that message id
 *
 * A commit, under the thread's lock, re-reads what other processes appended,
 * checks duplicate and head, then appends chunks, the state and index entries,
 * and last the record line: a crash before that line leaves only unreferenced
 * lines, and a torn trailing line is ignored by readers and cut off by the next
 * writer. Each process caches what it has read of a thread and reads only the
 * bytes appended since, so a read after another process's write sees it.
 */
import { createHash } from 'node:crypto';
import { appendFileSync, closeSync, linkSync, mkdirSync, openSync, statSync, truncateSync } from 'node:fs';
import { lstat, readdir } from 'node:fs/promises';
import path from 'node:path';
import type { Chunk, MemoryState, MemoryThread, OperationRecord, ReadRecord } from '../../memory/model';
import { LruCache, MaterializedCache, type StoredState } from '../../memory/state-delta';
import {
  HeadMovedError,
  type Checkpoint,
  type CommitInput,
  type CommitResult,
  type MemoryStore,
  type MessageHit,
  type NewOperationRecord,
  type OperationFilter,
  type ReadFilter,
  type StateSummary,
} from '../memory-store';
import { withFileLock } from '../file-lock';
import { openChunk, openOperation, sealChunk, sealOperation } from '../sealing/memory-records';
import { PLAIN, type Sealer } from '../sealing/sealer';
import { eachLineFromEnd, PRIVATE_DIR, PRIVATE_FILE, readAt, readJsonIfExists, readTextIfExists, withOpenFile, writeByRename } from '../small-files';
import { cloneCommitInput, DEFAULT_THREAD_LIMIT, jsonClone, ThreadExistsError, ThreadLog, UnknownThreadError, type CommitPlan } from './in-memory-store';
import { userKey } from '../../text/user-key';

/** One line of operations.jsonl. */
interface OperationLine {
  record: OperationRecord;
  checkpoint?: string;
}

interface ThreadIndexLine {
  threadId: string;
  userId: string;
  createdAt: string;
}

/** A thread index line as a process holds it, its time parsed. */
interface IndexedThread extends ThreadIndexLine {
  at: number;
}

/**
 * Inserts `entry` (the latest line read) into `list`, kept oldest first by creation time, equal times in
 * file order: from the end, where lines nearly always belong (threads are indexed as they are created).
 */
function insertByTime(list: IndexedThread[], entry: IndexedThread): void {
  let i = list.length;
  while (i > 0 && (list[i - 1] as IndexedThread).at > entry.at) i--;
  list.splice(i, 0, entry);
}

/** Ids become file names: escaped with fixed-width codes (so distinct ids stay distinct), hashed when long. */
export function fileSafe(id: string): string {
  const escaped = id.replace(/[^A-Za-z0-9_-]/g, (c) => `%${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  return escaped.length <= 120 ? escaped : `~${createHash('sha256').update(id).digest('hex')}`;
}

/** Runs `fn` holding the lock of `dir` (its `lock` entry), across processes; fails if the lock was lost meanwhile. */
export function withDirLock<T>(dir: string, fn: () => Promise<T>): Promise<T> {
  return withFileLock(dir, path.join(dir, 'lock'), fn);
}

/** The JSON lines of `data` before `end`, parsed (empty lines skipped). */
function linesOf<T>(data: Buffer, end: number): T[] {
  const items: T[] = [];
  if (end > 0) for (const line of data.toString('utf8', 0, end).split('\n')) if (line !== '') items.push(JSON.parse(line) as T);
  return items;
}

/** Reads the complete lines appended to a JSONL file since the last call (synchronous I/O: see small-files.ts). */
export class JsonlTail<T> {
  offset = 0;
  /** The file open for appending, kept between commits: one write instead of open, write and close. */
  private fd: number | undefined;
  constructor(readonly file: string) {}

  /**
   * With `repair` (only under the file's lock, when nobody else can be appending)
   * a torn trailing line left by a crashed writer is cut off.
   */
  async read(repair = false): Promise<T[]> {
    // One stat when nothing was appended (the common case) instead of open, fstat and close.
    const size = statSync(this.file, { throwIfNoEntry: false })?.size ?? -1;
    if (size === this.offset || size === -1) return [];
    let items: T[] = [];
    const grown = withOpenFile(this.file, (fd, now) => {
      if (now > this.offset) {
        const data = readAt(fd, this.offset, now - this.offset);
        const end = data.lastIndexOf(10);
        if (end >= 0) {
          items = linesOf<T>(data, end);
          this.offset += end + 1;
        }
      }
      return now;
    });
    if (grown === undefined) return [];
    if (repair && grown > this.offset) truncateSync(this.file, this.offset);
    return items;
  }

  /**
   * The lines before `limit`, which must be a line's end within the file; undefined when it is not (the
   * file was replaced or cut since). The offset stays: the caller moves it to `limit` once it used them.
   */
  linesBefore(limit: number): T[] | undefined {
    const data = withOpenFile(this.file, (fd, size) => (size >= limit ? readAt(fd, 0, limit) : undefined));
    if (data?.length !== limit || (limit > 0 && data[limit - 1] !== 10)) return undefined;
    return linesOf<T>(data, limit - 1);
  }

  /**
   * Moves to the file's end without reading what is before it, for a file this process only appends to
   * (an audit): a torn trailing line is cut off first. Only under the lock, instead of `read(true)`.
   */
  skipToEnd(): void {
    this.offset = cutTornTail(this.file);
  }

  /** Appends whole lines; only under the lock, after `read(true)` or `skipToEnd`, so the offset stays exact. */
  async append(items: readonly unknown[]): Promise<void> {
    if (items.length === 0) return;
    const text = items.map((i) => `${JSON.stringify(i)}\n`).join('');
    this.fd ??= openSync(this.file, 'a', PRIVATE_FILE.mode);
    appendFileSync(this.fd, text);
    this.offset += Buffer.byteLength(text);
  }

  async close(): Promise<void> {
    const fd = this.fd;
    this.fd = undefined;
    if (fd !== undefined) closeSync(fd);
  }
}

/** The last complete line of a JSONL file, read from its end (a thread's head without loading the thread). */
function readLastLine<T>(file: string): T | undefined {
  let last: T | undefined;
  eachLineFromEnd(file, (line) => {
    last = JSON.parse(line) as T;
    return false;
  });
  return last;
}

/**
 * Cuts a torn trailing line (a writer that crashed mid-append) off `file`, reading from its end only;
 * under the file's lock, before an append. What the file holds before it is not read. Returns the
 * file's size after (0 when it does not exist).
 */
function cutTornTail(file: string): number {
  const sizes = withOpenFile(file, (fd, size) => {
    if (size === 0 || readAt(fd, size - 1, 1)[0] === 10) return { size, cut: size };
    for (let window = 16 * 1024; ; window *= 4) {
      const start = Math.max(0, size - window);
      const end = readAt(fd, start, size - start).lastIndexOf(10);
      if (end >= 0) return { size, cut: start + end + 1 };
      if (start === 0) return { size, cut: 0 };
    }
  });
  if (!sizes) return 0;
  if (sizes.cut < sizes.size) truncateSync(file, sizes.cut);
  return sizes.cut;
}

/**
 * Adds an index entry unless it exists (ids are immutable: the first entry stays): a hard link to the
 * thread's id file. An inode takes only so many links (ext4: 65,000; a long conversation's thread passes
 * that), so when one is full the entry links to the next copy, `id.1`, `id.2`, …, made here (the caller
 * holds the thread's lock). Readers read the entry's text, whichever copy it is. Returns the copy used.
 */
function linkOnce(dir: string, threadId: string, copy: number, entry: string): number {
  for (;;) {
    const target = path.join(dir, copy === 0 ? 'id' : `id.${copy}`);
    try {
      linkSync(target, entry);
      return copy;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'EEXIST') return copy;
      if (code === 'EMLINK') copy++;
      // A copy not made yet (the one before is full): made once, then linked to.
      else if (code === 'ENOENT' && copy > 0 && !statSync(target, { throwIfNoEntry: false })) writeByRename(target, threadId);
      else throw err;
    }
  }
}

/** What this process has read of one thread. */
interface LoadedThread {
  dir: string;
  log: ThreadLog;
  ops: JsonlTail<OperationLine>;
  states: JsonlTail<StoredState>;
  chunks: JsonlTail<Chunk>;
  reads: JsonlTail<ReadRecord>;
  /** Serializes this process's reads of the tails, so no line is applied twice. */
  queue: Promise<unknown>;
  /** The copy of the id file new index entries link to (linkOnce): 0 for `id`, n for `id.<n>`. */
  idCopy: number;
}

export interface FileMemoryStoreOptions {
  /** Threads whose logs a process keeps in memory. @default 64 */
  maxLoadedThreads?: number;
  /** Seals chunk content and operations on disk (THREADLINE_ENCRYPTION_KEY). @default PLAIN */
  sealer?: Sealer;
}

export class FileMemoryStore implements MemoryStore {
  readonly kind = 'file' as const;
  private readonly loaded = new Map<string, LoadedThread>();
  /** Which thread an id belongs to, as far as this process has read; misses go to the on-disk index. */
  private readonly stateThread = new LruCache<string>(100_000);
  private readonly chunkThread = new LruCache<string>(200_000);
  private readonly cache = new MaterializedCache(256);
  private readonly threadIndex: JsonlTail<ThreadIndexLine>;
  /** The thread index as read so far: the threads seen (each once, by its first line), and oldest first, all and per user's key. */
  private readonly threadIds = new Set<string>();
  private readonly threadsOldestFirst: IndexedThread[] = [];
  private readonly userThreadsOldestFirst = new Map<string, IndexedThread[]>();
  private readonly maxLoaded: number;
  private readonly sealer: Sealer;

  constructor(
    readonly root: string,
    options: FileMemoryStoreOptions = {},
  ) {
    this.threadIndex = new JsonlTail(path.join(root, 'index', 'threads.jsonl'));
    this.maxLoaded = options.maxLoadedThreads ?? 64;
    this.sealer = options.sealer ?? PLAIN;
  }

  private threadDir(threadId: string): string {
    return path.join(this.root, 'threads', fileSafe(threadId));
  }

  private indexFile(kind: 'states' | 'chunks' | 'messages', id: string): string {
    return path.join(this.root, 'index', kind, fileSafe(id));
  }

  async setup(): Promise<void> {
    await this.sealer.ready();
    mkdirSync(path.join(this.root, 'threads'), PRIVATE_DIR);
    for (const kind of ['states', 'chunks', 'messages']) mkdirSync(path.join(this.root, 'index', kind), PRIVATE_DIR);
  }

  async end(): Promise<void> {
    const all = [...this.loaded.values()];
    this.loaded.clear();
    await Promise.all(all.map((t) => this.closeFiles(t)));
  }

  /** After the thread's pending work; a later append on the same object reopens its file. */
  private closeFiles(t: LoadedThread): Promise<void> {
    return this.serial(t, async () => {
      await Promise.all([t.ops.close(), t.states.close(), t.chunks.close(), t.reads.close()]);
    }).catch(() => undefined);
  }

  private serial<T>(t: LoadedThread, fn: () => Promise<T>): Promise<T> {
    const run = t.queue.then(fn, fn);
    t.queue = run.catch(() => undefined);
    return run;
  }

  /** The thread's files as this process knows them, or undefined when the thread has no thread.json. */
  private async load(threadId: string): Promise<LoadedThread | undefined> {
    const hit = this.loaded.get(threadId);
    if (hit) {
      this.loaded.delete(threadId);
      this.loaded.set(threadId, hit);
      return hit;
    }
    const dir = this.threadDir(threadId);
    const thread = readJsonIfExists<MemoryThread>(path.join(dir, 'thread.json'));
    if (!thread) return undefined;
    const t: LoadedThread = {
      dir,
      log: new ThreadLog(thread, this.cache),
      ops: new JsonlTail(path.join(dir, 'operations.jsonl')),
      states: new JsonlTail(path.join(dir, 'states.jsonl')),
      chunks: new JsonlTail(path.join(dir, 'chunks.jsonl')),
      reads: new JsonlTail(path.join(dir, 'reads.jsonl')),
      queue: Promise.resolve(),
      idCopy: 0,
    };
    this.loaded.set(threadId, t);
    while (this.loaded.size > this.maxLoaded) {
      const oldest = this.loaded.keys().next().value as string;
      const evicted = this.loaded.get(oldest) as LoadedThread;
      this.loaded.delete(oldest);
      void this.closeFiles(evicted);
    }
    return t;
  }

  /**
   * Reads what was appended since the last read. Records first: every state and chunk a record
   * names was appended before it, so reading states and chunks afterwards finds them.
   */
  private async refresh(t: LoadedThread, which: 'ops' | 'all', repair = false): Promise<void> {
    if (repair) {
      // Under the lock nothing is being appended, so the three files can be read at once.
      const [ops, states, chunks] = await Promise.all([t.ops.read(true), t.states.read(true), t.chunks.read(true)]);
      this.absorb(t, ops, states, chunks);
      return;
    }
    const ops = await t.ops.read();
    if (which === 'ops') return this.absorb(t, ops, [], []);
    const states = await t.states.read();
    this.absorb(t, ops, states, await t.chunks.read());
  }

  private absorb(t: LoadedThread, ops: OperationLine[], states: StoredState[], chunks: Chunk[]): void {
    for (const line of ops) t.log.addRecord(openOperation(this.sealer, line.record), line.checkpoint);
    for (const state of states) {
      t.log.addState(state);
      this.stateThread.set(state.id, t.log.thread.id);
    }
    for (const stored of chunks) {
      const chunk = openChunk(this.sealer, stored);
      t.log.addChunk(chunk);
      if (this.chunkThread.get(chunk.id) === undefined) this.chunkThread.set(chunk.id, t.log.thread.id);
    }
  }

  private withLock<T>(dir: string, fn: () => Promise<T>): Promise<T> {
    return withDirLock(dir, fn);
  }

  async createThread(input: { thread: MemoryThread; state: MemoryState; chunks: Chunk[]; record: NewOperationRecord }): Promise<OperationRecord> {
    const thread = jsonClone(input.thread);
    const dir = this.threadDir(thread.id);
    mkdirSync(dir, PRIVATE_DIR);
    return this.withLock(dir, async () => {
      // thread.json may be left from a creation that crashed before its record; the record decides.
      if (readLastLine<OperationLine>(path.join(dir, 'operations.jsonl'))) throw new ThreadExistsError(thread.id);
      writeByRename(path.join(dir, 'id'), thread.id);
      writeByRename(path.join(dir, 'thread.json'), JSON.stringify(thread));
      // Whatever this process read of an earlier, unfinished creation is stale now.
      const stale = this.loaded.get(thread.id);
      if (stale) {
        this.loaded.delete(thread.id);
        void this.closeFiles(stale);
      }
      const t = await this.load(thread.id);
      if (!t) throw new Error(`thread ${thread.id}: thread.json vanished while creating it`);
      return this.serial(t, async () => {
        await this.refresh(t, 'all', true);
        const plan = t.log.planCreate(cloneCommitInput({ state: input.state, chunks: input.chunks, record: input.record }));
        await this.appendThreadIndex({ threadId: thread.id, userId: thread.userId, createdAt: thread.createdAt });
        await this.persist(t, plan);
        return jsonClone(plan.record);
      });
    });
  }

  private async appendThreadIndex(line: ThreadIndexLine): Promise<void> {
    const file = this.threadIndex.file;
    mkdirSync(path.dirname(file), PRIVATE_DIR);
    await withFileLock(file, `${file}.lock`, async () => {
      // Only the file's end is read: reading it whole (to cut a torn line) made each thread's creation
      // cost as much as the threads before it, 127 ms a run at 100,000 (bench/results/HISTORY.md).
      cutTornTail(file);
      appendFileSync(file, `${JSON.stringify(line)}\n`, PRIVATE_FILE);
    });
  }

  /** Appends a planned commit (record line last) and applies it to the in-memory log. */
  private async persist(t: LoadedThread, plan: CommitPlan & { kind: 'commit' }): Promise<void> {
    const threadId = t.log.thread.id;
    // Everything the record line refers to is written first.
    await t.chunks.append(plan.chunks.map((c) => sealChunk(this.sealer, c)));
    await t.states.append(plan.state ? [plan.state] : []);
    for (const c of plan.chunks) {
      t.idCopy = linkOnce(t.dir, threadId, t.idCopy, this.indexFile('chunks', c.id));
      if (c.messageId !== null) writeByRename(this.indexFile('messages', c.messageId), JSON.stringify({ threadId, chunkId: c.id }));
    }
    if (plan.state) t.idCopy = linkOnce(t.dir, threadId, t.idCopy, this.indexFile('states', plan.state.id));
    const record = sealOperation(this.sealer, plan.record);
    const line: OperationLine = plan.checkpoint ? { record, checkpoint: plan.checkpoint.name } : { record };
    await t.ops.append([line]);
    t.log.apply(plan);
    if (plan.state) this.stateThread.set(plan.state.id, threadId);
    for (const chunk of plan.chunks) if (this.chunkThread.get(chunk.id) === undefined) this.chunkThread.set(chunk.id, threadId);
  }

  async getThread(threadId: string): Promise<MemoryThread | undefined> {
    const t = this.loaded.get(threadId);
    if (t) {
      await this.serial(t, () => this.refresh(t, 'ops'));
      return jsonClone(t.log.view());
    }
    return this.peekThread(threadId);
  }

  /** Thread and head from thread.json and the last record line, without loading the thread's log. */
  private async peekThread(threadId: string): Promise<MemoryThread | undefined> {
    const dir = this.threadDir(threadId);
    const thread = readJsonIfExists<MemoryThread>(path.join(dir, 'thread.json'));
    if (!thread) return undefined;
    const last = readLastLine<OperationLine>(path.join(dir, 'operations.jsonl'));
    return last ? { ...thread, headStateId: last.record.toStateId } : undefined;
  }

  async listThreads(filter: { userId?: string; limit?: number }): Promise<MemoryThread[]> {
    for (const line of await this.threadIndex.read()) {
      // A creation retried after a crash appends its line again; the first one keeps its place.
      if (this.threadIds.has(line.threadId)) continue;
      this.threadIds.add(line.threadId);
      const entry: IndexedThread = { ...line, at: Date.parse(line.createdAt) };
      insertByTime(this.threadsOldestFirst, entry);
      const key = userKey(line.userId);
      let mine = this.userThreadsOldestFirst.get(key);
      if (!mine) this.userThreadsOldestFirst.set(key, (mine = []));
      insertByTime(mine, entry);
    }
    // Kept in order as the index is read: a listing walks only what it returns (filtering and sorting
    // every thread of the store took 27-40 ms a listing at 100,000 threads).
    const candidates = filter.userId === undefined ? this.threadsOldestFirst : (this.userThreadsOldestFirst.get(userKey(filter.userId)) ?? []);
    const limit = filter.limit ?? DEFAULT_THREAD_LIMIT;
    const out: MemoryThread[] = [];
    for (let i = candidates.length - 1; i >= 0 && out.length < limit; i--) {
      const current = await this.getThread((candidates[i] as IndexedThread).threadId);
      if (current) out.push(current);
    }
    return out;
  }

  /** The loaded thread an id belongs to, from this process's maps or the on-disk index. */
  private async threadOf(kind: 'states' | 'chunks', id: string): Promise<LoadedThread | undefined> {
    const known = (kind === 'states' ? this.stateThread : this.chunkThread).get(id);
    const threadId = known ?? readTextIfExists(this.indexFile(kind, id));
    return threadId === undefined ? undefined : this.load(threadId);
  }

  async getState(stateId: string): Promise<MemoryState | undefined> {
    const t = await this.threadOf('states', stateId);
    if (!t) return undefined;
    return this.serial(t, async () => {
      if (!t.log.isReadable(stateId)) await this.refresh(t, 'all');
      return t.log.isReadable(stateId) ? t.log.getState(stateId) : undefined;
    });
  }

  async listStates(threadId: string): Promise<StateSummary[]> {
    const t = await this.load(threadId);
    if (!t) return [];
    return this.serial(t, async () => {
      await this.refresh(t, 'all');
      return t.log.listStates();
    });
  }

  async getChunks(chunkIds: readonly string[]): Promise<Chunk[]> {
    return jsonClone(await this.readChunks(chunkIds));
  }

  /** The chunks as this process holds them (a prompt's rendering copied the whole thread at every model call). */
  async readChunks(chunkIds: readonly string[]): Promise<Chunk[]> {
    const found = new Map<string, Chunk>();
    // A state's chunks are nearly all in one thread: once it is found, its chunks are taken from it
    // without a lookup and an await each (a run's prompt reads all its chunks at every model call).
    const threads: LoadedThread[] = [];
    const held = (id: string): Chunk | undefined => {
      for (const t of threads) {
        const chunk = t.log.chunks.get(id);
        if (chunk) return chunk;
      }
      return undefined;
    };
    for (const id of new Set(chunkIds)) {
      let chunk = held(id);
      if (!chunk) {
        const t = await this.threadOf('chunks', id);
        if (!t) continue;
        if (!threads.includes(t)) threads.push(t);
        chunk = t.log.chunks.get(id);
        if (!chunk) {
          await this.serial(t, () => this.refresh(t, 'all'));
          chunk = t.log.chunks.get(id);
        }
      }
      if (chunk) found.set(id, chunk);
    }
    return chunkIds.flatMap((id) => found.get(id) ?? []);
  }

  async findChunkByMessageId(messageId: string): Promise<MessageHit | undefined> {
    const entry = readJsonIfExists<{ threadId: string; chunkId: string }>(this.indexFile('messages', messageId));
    if (!entry) return undefined;
    const t = await this.load(entry.threadId);
    if (!t) return undefined;
    let chunk = t.log.chunks.get(entry.chunkId);
    if (!chunk) {
      await this.serial(t, () => this.refresh(t, 'all'));
      chunk = t.log.chunks.get(entry.chunkId);
    }
    return chunk && { threadId: entry.threadId, chunk: jsonClone(chunk) };
  }

  async commit(input: CommitInput): Promise<CommitResult> {
    const t = await this.load(input.threadId);
    if (!t) throw new UnknownThreadError(input.threadId);
    const copy = cloneCommitInput(input);
    // Without the lock first: a retry of a finished write, or a head that already moved, needs no lock
    // (a head never returns to an earlier state id: every state commit brings a new one).
    const early = await this.serial(t, async () => {
      await this.refresh(t, 'ops');
      const done = t.log.findRecord(copy.record.id);
      if (done) return done;
      const head = t.log.head;
      if (head === undefined) throw new UnknownThreadError(input.threadId);
      if (head !== copy.expectedHeadStateId) throw new HeadMovedError(input.threadId, copy.expectedHeadStateId, head);
      return undefined;
    });
    if (early) return { status: 'duplicate', record: jsonClone(early) };
    return this.withLock(t.dir, () =>
      this.serial(t, async () => {
        await this.refresh(t, 'all', true);
        const plan = t.log.planCommit(copy);
        if (plan.kind === 'duplicate') return { status: 'duplicate', record: jsonClone(plan.record) };
        await this.persist(t, plan);
        return { status: 'committed', record: jsonClone(plan.record) };
      }),
    );
  }

  async listOperations(threadId: string, filter?: OperationFilter): Promise<OperationRecord[]> {
    const t = await this.load(threadId);
    if (!t) return [];
    return this.serial(t, async () => {
      await this.refresh(t, 'ops');
      return jsonClone(t.log.listOperations(filter));
    });
  }

  async listCheckpoints(threadId: string): Promise<Checkpoint[]> {
    const t = await this.load(threadId);
    if (!t) return [];
    return this.serial(t, async () => {
      await this.refresh(t, 'ops');
      return jsonClone(t.log.listCheckpoints());
    });
  }

  async appendReads(records: readonly ReadRecord[]): Promise<void> {
    const byThread = new Map<string, ReadRecord[]>();
    for (const record of jsonClone(records)) byThread.set(record.threadId, [...(byThread.get(record.threadId) ?? []), record]);
    for (const [threadId, batch] of byThread) {
      const t = await this.load(threadId);
      if (!t) continue;
      await this.withLock(t.dir, () =>
        this.serial(t, async () => {
          for (const read of await t.reads.read(true)) t.log.addRead(read);
          const fresh = batch.filter((r) => !t.log.hasRead(r.id));
          await t.reads.append(fresh);
          for (const read of fresh) t.log.addRead(read);
        }),
      );
    }
  }

  async listReads(threadId: string, filter?: ReadFilter): Promise<ReadRecord[]> {
    const t = await this.load(threadId);
    if (!t) return [];
    return this.serial(t, async () => {
      for (const read of await t.reads.read()) t.log.addRead(read);
      return jsonClone(t.log.listReads(filter));
    });
  }

  /**
   * Bytes on disk under the root: file sizes (a hard-linked file once) plus directory sizes,
   * which grow with index entries. For benchmarks and tests.
   */
  async storedBytes(): Promise<number> {
    const entries = await readdir(this.root, { recursive: true, withFileTypes: true });
    const seen = new Set<string>();
    let total = 0;
    for (let i = 0; i < entries.length; i += 256) {
      const stats = await Promise.all(entries.slice(i, i + 256).map((e) => lstat(path.join(e.parentPath, e.name))));
      for (const s of stats) {
        const key = `${s.dev}:${s.ino}`;
        if (seen.has(key)) continue;
        seen.add(key);
        total += s.size;
      }
    }
    return total;
  }
}
