/**
 * The in-memory MemoryStore (tests, single-process demos), and `ThreadLog`, the
 * per-thread bookkeeping it shares with the file store: stored states as
 * deltas, records in seq order, checkpoints, and the commit rules (duplicate
 * record id first, then the head check, then seq = last + 1).
 */
import type { Chunk, MemoryState, MemoryThread, OperationRecord, ReadRecord } from '../../memory/model';
import { encodeState, fromStoredState, materialize, MaterializedCache, toStoredState, type Materialized, type StoredState } from '../../memory/state-delta';
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
import { sameUser } from '../../text/user-key';

export const DEFAULT_OPERATION_LIMIT = 1000;
export const DEFAULT_THREAD_LIMIT = 1000;

/** Deep copy through JSON, so every backend hands back exactly what a persistent one would. */
export const jsonClone = <T>(value: T): T => (value === undefined ? value : (JSON.parse(JSON.stringify(value)) as T));

/**
 * A deep copy of a commit's input. The state's id list (the one part as large as the
 * thread) is copied by slicing instead of through JSON: per commit it is the main cost.
 */
export function cloneCommitInput<T extends { state: MemoryState | null }>(input: T): T {
  const { state, ...rest } = input;
  return { ...jsonClone(rest), state: state && { ...jsonClone({ ...state, chunkIds: [] }), chunkIds: state.chunkIds.slice() } } as T;
}

export function matchesOperationFilter(record: OperationRecord, filter: OperationFilter): boolean {
  if (filter.origin !== undefined && record.origin !== filter.origin) return false;
  if (filter.kind !== undefined && record.kind !== filter.kind) return false;
  if (filter.runId !== undefined && record.runId !== filter.runId) return false;
  if (filter.afterSeq !== undefined && record.seq <= filter.afterSeq) return false;
  const at = Date.parse(record.at);
  if (filter.since !== undefined && at < Date.parse(filter.since)) return false;
  if (filter.until !== undefined && at > Date.parse(filter.until)) return false;
  return true;
}

export function matchesReadFilter(record: ReadRecord, filter: ReadFilter): boolean {
  if (filter.origin !== undefined && record.origin !== filter.origin) return false;
  if (filter.target !== undefined && record.target !== filter.target) return false;
  if (filter.runId !== undefined && record.runId !== filter.runId) return false;
  const at = Date.parse(record.at);
  if (filter.since !== undefined && at < Date.parse(filter.since)) return false;
  if (filter.until !== undefined && at > Date.parse(filter.until)) return false;
  return true;
}

export class ThreadExistsError extends Error {
  constructor(readonly threadId: string) {
    super(`thread ${threadId} already exists`);
    this.name = 'ThreadExistsError';
  }
}

export class UnknownThreadError extends Error {
  constructor(readonly threadId: string) {
    super(`thread ${threadId} does not exist`);
    this.name = 'UnknownThreadError';
  }
}

/** What a commit writes, decided before anything is written (the file store persists it, then applies it). */
export type CommitPlan =
  | { kind: 'duplicate'; record: OperationRecord }
  | { kind: 'commit'; chunks: Chunk[]; state: StoredState | null; materialized: Materialized | null; record: OperationRecord; checkpoint: Checkpoint | null };

/**
 * One thread's log as a backend holds it in memory. Records are the commit
 * points: the head is the last record's `toStateId`, and a stored state
 * counts only once a record points at it (a crashed file commit can leave a
 * state line without its record).
 */
export class ThreadLog {
  readonly chunks = new Map<string, Chunk>();
  private readonly stored = new Map<string, StoredState>();
  private readonly records: OperationRecord[] = [];
  private readonly recordsById = new Map<string, OperationRecord>();
  private readonly committed = new Set<string>();
  private readonly stateOrder: string[] = [];
  private readonly checkpoints: Checkpoint[] = [];
  private readonly reads: ReadRecord[] = [];
  private readonly readIds = new Set<string>();

  constructor(
    readonly thread: MemoryThread,
    private readonly cache: MaterializedCache,
  ) {}

  get head(): string | undefined {
    return this.records.at(-1)?.toStateId;
  }

  get lastSeq(): number {
    return this.records.at(-1)?.seq ?? 0;
  }

  /** The thread as of its last record, or undefined before its creating record. */
  view(): MemoryThread | undefined {
    const head = this.head;
    return head === undefined ? undefined : { ...this.thread, headStateId: head };
  }

  findRecord(recordId: string): OperationRecord | undefined {
    return this.recordsById.get(recordId);
  }

  /** Committed (a record names it) and its stored form has been read. */
  isReadable(stateId: string): boolean {
    return this.committed.has(stateId) && this.stored.has(stateId);
  }

  addChunk(chunk: Chunk): void {
    if (!this.chunks.has(chunk.id)) this.chunks.set(chunk.id, chunk);
  }

  addState(state: StoredState): void {
    this.stored.set(state.id, state);
  }

  addRecord(record: OperationRecord, checkpointName?: string): void {
    if (this.recordsById.has(record.id)) return;
    this.records.push(record);
    this.recordsById.set(record.id, record);
    if (!this.committed.has(record.toStateId)) {
      this.committed.add(record.toStateId);
      this.stateOrder.push(record.toStateId);
    }
    if (checkpointName !== undefined) this.checkpoints.push({ name: checkpointName, stateId: record.toStateId, at: record.at });
  }

  /** The full chunk id list of a committed state: walks back to the nearest snapshot or cached ancestor. */
  materialize(stateId: string): Materialized | undefined {
    if (!this.committed.has(stateId)) return undefined;
    const hit = this.cache.get(stateId);
    if (hit) return hit;
    const chain: StoredState[] = [];
    let base: Materialized | undefined;
    for (let id: string | null = stateId; ;) {
      const cached: Materialized | undefined = id === stateId ? undefined : this.cache.get(id);
      if (cached) {
        base = cached;
        break;
      }
      const stored = this.stored.get(id);
      if (!stored) throw new Error(`thread ${this.thread.id}: state ${id} is missing from storage`);
      chain.push(stored);
      if (stored.snapshot) break;
      id = stored.parentStateId;
      if (id === null) throw new Error(`thread ${this.thread.id}: state ${stored.id} has a splice but no parent`);
    }
    chain.reverse();
    const result = materialize(chain, base);
    this.cache.set(stateId, result);
    return result;
  }

  getState(stateId: string): MemoryState | undefined {
    const materialized = this.materialize(stateId);
    const stored = this.stored.get(stateId);
    return materialized && stored ? fromStoredState(stored, materialized.chunkIds) : undefined;
  }

  planCreate(input: { state: MemoryState; chunks: Chunk[]; record: NewOperationRecord }): CommitPlan & { kind: 'commit' } {
    if (this.records.length > 0) throw new ThreadExistsError(this.thread.id);
    if (input.state.threadId !== this.thread.id) throw new Error(`state ${input.state.id} belongs to thread ${input.state.threadId}, not ${this.thread.id}`);
    const encoded = encodeState(null, input.state.chunkIds);
    return {
      kind: 'commit',
      chunks: input.chunks,
      state: toStoredState(input.state, encoded),
      materialized: encoded.materialized,
      record: { ...input.record, threadId: this.thread.id, seq: 1, toStateId: input.state.id },
      checkpoint: null,
    };
  }

  planCommit(input: CommitInput): CommitPlan {
    // Duplicates first: an idempotent retry of a write that already went through succeeds even though the head moved on.
    const done = this.recordsById.get(input.record.id);
    if (done) return { kind: 'duplicate', record: done };
    const head = this.head;
    if (head === undefined) throw new UnknownThreadError(this.thread.id);
    if (head !== input.expectedHeadStateId) throw new HeadMovedError(this.thread.id, input.expectedHeadStateId, head);
    const record: OperationRecord = { ...input.record, threadId: this.thread.id, seq: this.lastSeq + 1, toStateId: input.state ? input.state.id : head };
    const checkpoint = input.checkpoint ? { name: input.checkpoint.name, stateId: record.toStateId, at: record.at } : null;
    if (!input.state) return { kind: 'commit', chunks: input.chunks, state: null, materialized: null, record, checkpoint };
    const state = input.state;
    if (state.threadId !== this.thread.id) throw new Error(`state ${state.id} belongs to thread ${state.threadId}, not ${this.thread.id}`);
    if (this.committed.has(state.id)) throw new Error(`thread ${this.thread.id}: state ${state.id} is already committed`);
    const base = state.parentStateId !== null ? (this.materialize(state.parentStateId) ?? null) : null;
    const encoded = encodeState(base, state.chunkIds);
    return { kind: 'commit', chunks: input.chunks, state: toStoredState(state, encoded), materialized: encoded.materialized, record, checkpoint };
  }

  apply(plan: CommitPlan & { kind: 'commit' }): void {
    for (const chunk of plan.chunks) this.addChunk(chunk);
    if (plan.state) this.addState(plan.state);
    this.addRecord(plan.record, plan.checkpoint?.name);
    if (plan.state && plan.materialized) this.cache.set(plan.state.id, plan.materialized);
  }

  listStates(): StateSummary[] {
    return this.stateOrder.map((id) => {
      const s = this.stored.get(id);
      if (!s) throw new Error(`thread ${this.thread.id}: state ${id} is missing from storage`);
      return { stateId: s.id, parentStateId: s.parentStateId, seq: s.seq, operationId: s.operationId, at: s.createdAt };
    });
  }

  listOperations(filter: OperationFilter = {}): OperationRecord[] {
    const limit = filter.limit ?? DEFAULT_OPERATION_LIMIT;
    const out: OperationRecord[] = [];
    // Seqs are 1, 2, …, so the cursor is also an index.
    for (let i = Math.max(0, filter.afterSeq ?? 0); i < this.records.length && out.length < limit; i++) {
      const record = this.records[i] as OperationRecord;
      if (matchesOperationFilter(record, filter)) out.push(record);
    }
    return out;
  }

  listCheckpoints(): Checkpoint[] {
    return this.checkpoints.slice();
  }

  hasRead(readId: string): boolean {
    return this.readIds.has(readId);
  }

  addRead(record: ReadRecord): void {
    if (this.readIds.has(record.id)) return;
    this.readIds.add(record.id);
    this.reads.push(record);
  }

  listReads(filter: ReadFilter = {}): ReadRecord[] {
    // Appended in batches from several processes, so only nearly in time order: sorted here (stable).
    const matching = this.reads.filter((r) => matchesReadFilter(r, filter)).sort((a, b) => Date.parse(a.at) - Date.parse(b.at));
    return matching.slice(0, filter.limit ?? DEFAULT_OPERATION_LIMIT);
  }

  /** Size of everything held, as JSON. */
  storedBytes(): number {
    let total = JSON.stringify(this.thread).length;
    for (const group of [this.stored.values(), this.chunks.values(), this.records.values(), this.reads.values()]) for (const item of group) total += JSON.stringify(item).length;
    return total;
  }
}

/** Newest first; among equal timestamps the later created first. */
export function newestFirst<T extends { thread: MemoryThread; order: number }>(a: T, b: T): number {
  const byTime = Date.parse(b.thread.createdAt) - Date.parse(a.thread.createdAt);
  return byTime !== 0 ? byTime : b.order - a.order;
}

/** Keeps everything in process memory; what goes in and comes out is deep-copied. */
export class InMemoryMemoryStore implements MemoryStore {
  readonly kind = 'memory' as const;
  private readonly threads = new Map<string, { log: ThreadLog; order: number }>();
  private readonly stateThread = new Map<string, ThreadLog>();
  private readonly chunkThread = new Map<string, ThreadLog>();
  private readonly messages = new Map<string, MessageHit>();
  private readonly cache = new MaterializedCache(256);

  async setup(): Promise<void> {}
  async end(): Promise<void> {}

  async createThread(input: { thread: MemoryThread; state: MemoryState; chunks: Chunk[]; record: NewOperationRecord }): Promise<OperationRecord> {
    const copy = cloneCommitInput(input);
    if (this.threads.has(copy.thread.id)) throw new ThreadExistsError(copy.thread.id);
    const log = new ThreadLog(copy.thread, this.cache);
    const plan = log.planCreate(copy);
    this.threads.set(copy.thread.id, { log, order: this.threads.size });
    this.applyPlan(log, plan);
    return jsonClone(plan.record);
  }

  async getThread(threadId: string): Promise<MemoryThread | undefined> {
    return jsonClone(this.threads.get(threadId)?.log.view());
  }

  async listThreads(filter: { userId?: string; limit?: number }): Promise<MemoryThread[]> {
    const rows = [...this.threads.values()]
      .map(({ log, order }) => ({ thread: log.view(), order }))
      .filter((r): r is { thread: MemoryThread; order: number } => r.thread !== undefined && (filter.userId === undefined || sameUser(r.thread.userId, filter.userId)));
    return jsonClone(
      rows
        .sort(newestFirst)
        .slice(0, filter.limit ?? DEFAULT_THREAD_LIMIT)
        .map((r) => r.thread),
    );
  }

  async getState(stateId: string): Promise<MemoryState | undefined> {
    return this.stateThread.get(stateId)?.getState(stateId);
  }

  async listStates(threadId: string): Promise<StateSummary[]> {
    return this.threads.get(threadId)?.log.listStates() ?? [];
  }

  async getChunks(chunkIds: readonly string[]): Promise<Chunk[]> {
    return jsonClone(await this.readChunks(chunkIds));
  }

  /** The stored chunks themselves (a prompt's rendering copied the whole thread at every model call). */
  async readChunks(chunkIds: readonly string[]): Promise<Chunk[]> {
    const out: Chunk[] = [];
    for (const id of chunkIds) {
      const chunk = this.chunkThread.get(id)?.chunks.get(id);
      if (chunk) out.push(chunk);
    }
    return out;
  }

  async findChunkByMessageId(messageId: string): Promise<MessageHit | undefined> {
    return jsonClone(this.messages.get(messageId));
  }

  async commit(input: CommitInput): Promise<CommitResult> {
    const log = this.threads.get(input.threadId)?.log;
    if (!log) throw new UnknownThreadError(input.threadId);
    // No await between the checks and the writes: a commit is atomic within the process.
    const plan = log.planCommit(cloneCommitInput(input));
    if (plan.kind === 'duplicate') return { status: 'duplicate', record: jsonClone(plan.record) };
    this.applyPlan(log, plan);
    return { status: 'committed', record: jsonClone(plan.record) };
  }

  private applyPlan(log: ThreadLog, plan: CommitPlan & { kind: 'commit' }): void {
    log.apply(plan);
    if (plan.state) this.stateThread.set(plan.state.id, log);
    for (const chunk of plan.chunks) {
      if (this.chunkThread.has(chunk.id)) continue; // chunks are immutable: the first copy stays
      this.chunkThread.set(chunk.id, log);
      if (chunk.messageId) this.messages.set(chunk.messageId, { threadId: log.thread.id, chunk });
    }
  }

  async listOperations(threadId: string, filter?: OperationFilter): Promise<OperationRecord[]> {
    return jsonClone(this.threads.get(threadId)?.log.listOperations(filter) ?? []);
  }

  async listCheckpoints(threadId: string): Promise<Checkpoint[]> {
    return jsonClone(this.threads.get(threadId)?.log.listCheckpoints() ?? []);
  }

  async appendReads(records: readonly ReadRecord[]): Promise<void> {
    for (const record of jsonClone(records)) this.threads.get(record.threadId)?.log.addRead(record);
  }

  async listReads(threadId: string, filter?: ReadFilter): Promise<ReadRecord[]> {
    return jsonClone(this.threads.get(threadId)?.log.listReads(filter) ?? []);
  }

  /** What the store holds, in JSON bytes; for benchmarks and tests. */
  async storedBytes(): Promise<number> {
    let total = 0;
    for (const { log } of this.threads.values()) total += log.storedBytes();
    return total;
  }
}
