/**
 * The memory service: the one way anything (activities, the REST API) changes
 * or reads memory threads. It runs observers, the pure reducer and the store's
 * optimistic-concurrency commit, so every change is audited and none is lost.
 */
import { createHash } from 'node:crypto';
import { compressibleSteps, compressText, planCompaction, planCompression, projectedSummaryTokens, type CompactionStep } from '../memory/compaction';
import { randomIds } from '../memory/ids';
import {
  type Chunk,
  type ChunkContent,
  type ChunkInput,
  type IdSource,
  type MemoryState,
  type MemoryThread,
  type Operation,
  type OperationMeta,
  type OperationRecord,
  type ReadRecord,
  type ReadTarget,
  type TokenLimits,
} from '../memory/model';
import { runObservers, type MemoryObserver } from '../memory/observers';
import { renderChunk, renderContent, renderContext, type RenderedContext } from '../memory/parser';
import { createChunk, reduce, type ReduceContext, type RefusalCode } from '../memory/reducer';
import { countContentTokens, countTextTokens } from '../memory/tokens';
import { HeadMovedError, type MemoryStore, type NewOperationRecord, type OperationFilter, type ReadFilter, type StateSummary } from './memory-store';
import { ReadAudit, type ReadAuditOptions } from './read-audit';
import { sameUser } from '../text/user-key';

export class ThreadNotFoundError extends Error {
  constructor(readonly threadId: string) {
    super(`no memory thread "${threadId}"`);
    this.name = 'ThreadNotFoundError';
  }
}

export class StateNotFoundError extends Error {
  constructor(readonly stateId: string) {
    super(`no memory state "${stateId}"`);
    this.name = 'StateNotFoundError';
  }
}

/** The reducer or an observer refused the operation; nothing was written. */
export class MemoryRefusedError extends Error {
  constructor(
    readonly code: RefusalCode | 'vetoed',
    message: string,
  ) {
    super(message);
    this.name = 'MemoryRefusedError';
  }
}

/** Summarizes texts into one, within about maxTokens (a model call). */
export type Summarizer = (texts: string[], maxTokens: number) => Promise<string>;

export interface MemoryServiceOptions {
  store: MemoryStore;
  /** Run in order on every operation before it is applied. @default [] */
  observers?: MemoryObserver[];
  /** Limits of threads created without their own. */
  limits: TokenLimits;
  /** Needed for compaction of COMPRESSIBLE and BATCH_COMPRESSIBLE chunks; without it only DISPOSABLE chunks are dropped. */
  summarizer?: Summarizer;
  /** @default random ids */
  newId?: IdSource;
  /** @default () => new Date() */
  now?: () => Date;
  /** Whether reads given a `reader` are recorded in the audit trail. @default true */
  auditReads?: boolean;
  /** Batching of recorded reads. */
  readAudit?: ReadAuditOptions;
}

/** Who reads a thread and why (origin, reason, trigger, run and step), as for an operation. */
export type Reader = OperationMeta;

export interface ThreadView {
  thread: MemoryThread;
  state: MemoryState;
  chunks: Chunk[];
}

export interface StateDiff {
  from: string;
  to: string;
  added: Chunk[];
  removed: Chunk[];
  /** True when chunks present in both states changed their relative order. */
  reordered: boolean;
}

/** Concurrent writers to one thread retry this many times before giving up (each retry re-reads the head). */
const MAX_COMMIT_ATTEMPTS = 20;

/**
 * A short random pause before retrying a lost commit race, growing with the attempt: without it,
 * writers in one process re-read the same head in the same tick and only one wins per round.
 */
const backoff = (attempt: number) => new Promise((resolve) => setTimeout(resolve, Math.random() * Math.min(2 ** attempt, 50)));

/** A deterministic operation id from a caller's idempotency key: the same key never writes twice. */
export function operationIdFor(key: string): string {
  return `op_${createHash('sha256').update(key).digest('hex').slice(0, 24)}`;
}

export class MemoryService {
  readonly store: MemoryStore;
  private readonly observers: MemoryObserver[];
  private readonly newId: IdSource;
  private readonly now: () => Date;
  private readonly readAudit: ReadAudit<ReadRecord> | undefined;
  /** Each chunk the store handed out for reading, rendered (a prompt shows the same chunks call after call). */
  readonly #renderings = new WeakMap<Chunk, string>();
  readonly #renderedChunk = (chunk: Chunk): string => {
    let text = this.#renderings.get(chunk);
    if (text === undefined) this.#renderings.set(chunk, (text = renderChunk(chunk)));
    return text;
  };

  constructor(private readonly options: MemoryServiceOptions) {
    this.store = options.store;
    this.observers = options.observers ?? [];
    this.newId = options.newId ?? randomIds();
    this.now = options.now ?? (() => new Date());
    this.readAudit = (options.auditReads ?? true) ? new ReadAudit<ReadRecord>((batch) => options.store.appendReads(batch), options.readAudit) : undefined;
  }

  /** Queues a record of a read (see ReadAudit): no I/O on the read path, and it never fails the read. */
  private recordRead(reader: Reader | undefined, threadId: string, target: ReadTarget, stateId: string, details: Record<string, unknown> | null): void {
    if (!reader || !this.readAudit) return;
    const record: ReadRecord = { ...reader, id: this.newId('read'), threadId, kind: 'read', target, stateId, details, at: this.now().toISOString() };
    this.readAudit.record(record);
  }

  /** Writes the reads recorded so far; call before the store closes. */
  flushReads(): Promise<void> {
    return this.readAudit?.flush() ?? Promise.resolve();
  }

  private reduceContext(operationId: string, extra: Partial<ReduceContext> = {}): ReduceContext {
    return { now: this.now(), newId: this.newId, countTokens: (c: ChunkContent) => countContentTokens(c), operationId, ...extra };
  }

  private record(threadId: string, kind: OperationRecord['kind'], meta: OperationMeta, fields: Partial<NewOperationRecord> & { toStateId: string }): NewOperationRecord {
    return {
      id: fields.id ?? this.newId('operation'),
      threadId,
      kind,
      operation: null,
      details: null,
      fromStateId: null,
      newChunkIds: [],
      at: this.now().toISOString(),
      ...meta,
      ...fields,
    };
  }

  /** Creates a thread whose first state holds `chunks` (after observers, e.g. redaction). */
  async createThread(input: { userId: string; limits?: TokenLimits; chunks?: ChunkInput[]; meta: OperationMeta; threadId?: string }): Promise<ThreadView> {
    const threadId = input.threadId ?? this.newId('thread');
    const operationId = this.newId('operation');
    let chunkInputs = input.chunks ?? [];
    let observerNotes: string[] = [];
    if (chunkInputs.length > 0) {
      const observed = runObservers(this.observers, { op: 'add', chunks: chunkInputs }, input.meta, { threadId });
      if (!observed.ok) throw new MemoryRefusedError('vetoed', `vetoed by ${observed.vetoedBy}: ${observed.reason}`);
      if (observed.operation.op === 'add') chunkInputs = observed.operation.chunks;
      observerNotes = observed.notes;
    }
    const ctx = this.reduceContext(operationId);
    const chunks = chunkInputs.map((c) => createChunk(c, ctx));
    const now = this.now().toISOString();
    const state: MemoryState = {
      id: this.newId('state'),
      threadId,
      parentStateId: null,
      seq: 0,
      chunkIds: chunks.map((c) => c.id),
      tokens: chunks.reduce((sum, c) => sum + c.tokens, 0),
      operationId,
      createdAt: now,
    };
    const thread: MemoryThread = { id: threadId, userId: input.userId, headStateId: state.id, limits: input.limits ?? this.options.limits, forkedFrom: null, createdAt: now };
    await this.store.createThread({
      thread,
      state,
      chunks,
      record: this.record(threadId, 'create', input.meta, {
        id: operationId,
        toStateId: state.id,
        newChunkIds: state.chunkIds,
        details: observerNotes.length > 0 ? { observerNotes } : null,
      }),
    });
    return { thread, state, chunks };
  }

  /** The thread with this id, created (with `chunks`) if it does not exist yet. */
  async ensureThread(input: { threadId: string; userId: string; limits?: TokenLimits; chunks?: ChunkInput[]; meta: OperationMeta }): Promise<MemoryThread> {
    const existing = await this.store.getThread(input.threadId);
    if (existing) return existing;
    try {
      return (await this.createThread(input)).thread;
    } catch (err) {
      // Another writer created it first: fine, use theirs.
      const raced = await this.store.getThread(input.threadId);
      if (raced) return raced;
      throw err;
    }
  }

  private async requireThread(threadId: string): Promise<MemoryThread> {
    const thread = await this.store.getThread(threadId);
    if (!thread) throw new ThreadNotFoundError(threadId);
    return thread;
  }

  private async requireState(stateId: string): Promise<MemoryState> {
    const state = await this.store.getState(stateId);
    if (!state) throw new StateNotFoundError(stateId);
    return state;
  }

  /** The chunks an operation needs the reducer to see: the ones it names. */
  private async chunksFor(operation: Operation): Promise<Map<string, Chunk>> {
    const ids = operation.op === 'update' || operation.op === 'replace' ? [operation.chunkId] : operation.op === 'delete' || operation.op === 'batch_replace' ? operation.chunkIds : [];
    const chunks = await this.store.getChunks(ids);
    return new Map(chunks.map((c) => [c.id, c]));
  }

  /**
   * Applies one operation: observers, reducer, then an atomic commit against the head it read —
   * re-read and retried when another writer got there first. With `operationId` (derive it with
   * `operationIdFor`) a retried call is a no-op returning the first result. `notes` are the writer's
   * remarks for the audit (e.g. what it left out), recorded with the operation as `details.notes`.
   */
  async apply(threadId: string, operation: Operation, meta: OperationMeta, options: { operationId?: string; notes?: string[] } = {}): Promise<{ record: OperationRecord; state: MemoryState }> {
    const operationId = options.operationId ?? this.newId('operation');
    const observed = runObservers(this.observers, operation, meta, { threadId });
    if (!observed.ok) throw new MemoryRefusedError('vetoed', `vetoed by ${observed.vetoedBy}: ${observed.reason}`);
    const applied = observed.operation;
    for (let attempt = 1; ; attempt++) {
      const thread = await this.requireThread(threadId);
      const head = await this.requireState(thread.headStateId);
      const extra: Partial<ReduceContext> = {};
      if (applied.op === 'rollback') {
        const target = await this.store.getState(applied.toStateId);
        if (!target || target.threadId !== threadId) throw new MemoryRefusedError('not_found', `no state "${applied.toStateId}" in thread ${threadId}`);
        extra.rollbackTarget = target;
      }
      // In a rollback the head's chunks are all known to the store; only named chunks need loading.
      const result = reduce(head, await this.chunksFor(applied), applied, meta, this.reduceContext(operationId, extra));
      if (!result.ok) {
        // An idempotent retry of an operation that already went through (e.g. its chunks are gone now).
        const done = options.operationId ? await this.findRecord(threadId, operationId) : undefined;
        if (done) return { record: done, state: await this.requireState(done.toStateId) };
        throw new MemoryRefusedError(result.refusal.code, result.refusal.message);
      }
      const details = {
        ...(observed.notes.length > 0 ? { observerNotes: observed.notes } : {}),
        ...(options.notes && options.notes.length > 0 ? { notes: options.notes } : {}),
      };
      try {
        const committed = await this.store.commit({
          threadId,
          expectedHeadStateId: head.id,
          state: result.state,
          chunks: result.newChunks,
          record: this.record(threadId, applied.op, meta, {
            id: operationId,
            operation: applied,
            details: Object.keys(details).length > 0 ? details : null,
            fromStateId: head.id,
            toStateId: result.state.id,
            newChunkIds: result.newChunks.map((c) => c.id),
          }),
        });
        return { record: committed.record, state: committed.status === 'committed' ? result.state : await this.requireState(committed.record.toStateId) };
      } catch (err) {
        if (err instanceof HeadMovedError && attempt < MAX_COMMIT_ATTEMPTS) {
          await backoff(attempt);
          continue;
        }
        throw err;
      }
    }
  }

  private async findRecord(threadId: string, operationId: string): Promise<OperationRecord | undefined> {
    return (await this.store.listOperations(threadId, { limit: 100_000 })).find((r) => r.id === operationId);
  }

  /** Makes a new head equal to an earlier state; the history in between stays. */
  rollback(threadId: string, stateId: string, meta: OperationMeta): Promise<{ record: OperationRecord; state: MemoryState }> {
    return this.apply(threadId, { op: 'rollback', toStateId: stateId }, meta);
  }

  /** A new thread starting from any state of this one; recorded in both threads. */
  async fork(threadId: string, stateId: string, meta: OperationMeta): Promise<ThreadView> {
    const source = await this.requireThread(threadId);
    const from = await this.requireState(stateId);
    if (from.threadId !== threadId) throw new MemoryRefusedError('not_found', `no state "${stateId}" in thread ${threadId}`);
    const newThreadId = this.newId('thread');
    const operationId = this.newId('operation');
    const now = this.now().toISOString();
    const state: MemoryState = { ...from, id: this.newId('state'), threadId: newThreadId, parentStateId: null, seq: 0, operationId, createdAt: now };
    const thread: MemoryThread = { id: newThreadId, userId: source.userId, headStateId: state.id, limits: source.limits, forkedFrom: { threadId, stateId }, createdAt: now };
    await this.store.createThread({
      thread,
      state,
      chunks: [], // chunks are immutable and shared between threads
      record: this.record(newThreadId, 'fork', meta, { id: operationId, toStateId: state.id, details: { fromThreadId: threadId, fromStateId: stateId } }),
    });
    await this.recordWithoutChange(threadId, 'fork', meta, { toThreadId: newThreadId, fromStateId: stateId });
    return { thread, state, chunks: await this.store.getChunks(state.chunkIds) };
  }

  /** Names the current head. */
  async checkpoint(threadId: string, name: string, meta: OperationMeta): Promise<OperationRecord> {
    return this.recordWithoutChange(threadId, 'checkpoint', meta, { name }, { name });
  }

  private async recordWithoutChange(threadId: string, kind: 'fork' | 'checkpoint', meta: OperationMeta, details: Record<string, unknown>, checkpoint?: { name: string }): Promise<OperationRecord> {
    for (let attempt = 1; ; attempt++) {
      const thread = await this.requireThread(threadId);
      try {
        const committed = await this.store.commit({
          threadId,
          expectedHeadStateId: thread.headStateId,
          state: null,
          chunks: [],
          record: this.record(threadId, kind, meta, { toStateId: thread.headStateId, fromStateId: thread.headStateId, details }),
          ...(checkpoint ? { checkpoint } : {}),
        });
        return committed.record;
      } catch (err) {
        if (err instanceof HeadMovedError && attempt < MAX_COMMIT_ATTEMPTS) {
          await backoff(attempt);
          continue;
        }
        throw err;
      }
    }
  }

  /** The user a thread belongs to, or null when there is no such thread. */
  async ownerOf(threadId: string): Promise<string | null> {
    return (await this.store.getThread(threadId))?.userId ?? null;
  }

  /** The head with its chunks. With a `reader`, the read is recorded in the audit trail. */
  async view(threadId: string, reader?: Reader): Promise<ThreadView> {
    const thread = await this.requireThread(threadId);
    const state = await this.requireState(thread.headStateId);
    const chunks = await this.store.getChunks(state.chunkIds);
    this.recordRead(reader, threadId, 'thread', state.id, { chunks: chunks.length, tokens: state.tokens });
    return { thread, state, chunks };
  }

  async stateView(threadId: string, stateId: string, reader?: Reader): Promise<{ state: MemoryState; chunks: Chunk[] }> {
    await this.requireThread(threadId);
    const state = await this.requireState(stateId);
    if (state.threadId !== threadId) throw new StateNotFoundError(stateId);
    const chunks = await this.store.getChunks(state.chunkIds);
    this.recordRead(reader, threadId, 'state', state.id, { chunks: chunks.length, tokens: state.tokens });
    return { state, chunks };
  }

  async states(threadId: string): Promise<StateSummary[]> {
    await this.requireThread(threadId);
    return this.store.listStates(threadId);
  }

  async diff(threadId: string, fromStateId: string, toStateId: string, reader?: Reader): Promise<StateDiff> {
    const [{ state: from }, { state: to }] = await Promise.all([this.stateView(threadId, fromStateId), this.stateView(threadId, toStateId)]);
    const before = new Set(from.chunkIds);
    const after = new Set(to.chunkIds);
    const kept = (ids: string[], other: Set<string>) => ids.filter((id) => other.has(id));
    const [added, removed] = await Promise.all([this.store.getChunks(to.chunkIds.filter((id) => !before.has(id))), this.store.getChunks(from.chunkIds.filter((id) => !after.has(id)))]);
    const reordered = kept(from.chunkIds, after).join('\u0000') !== kept(to.chunkIds, before).join('\u0000');
    this.recordRead(reader, threadId, 'diff', toStateId, { from: fromStateId, added: added.length, removed: removed.length });
    return { from: fromStateId, to: toStateId, added, removed, reordered };
  }

  /** The thread's operations (its writes), oldest first. */
  async audit(threadId: string, filter: OperationFilter = {}): Promise<OperationRecord[]> {
    await this.requireThread(threadId);
    return this.store.listOperations(threadId, filter);
  }

  /** The thread's recorded reads, oldest first, including those still queued in this process. */
  async auditReads(threadId: string, filter: ReadFilter = {}): Promise<ReadRecord[]> {
    await this.requireThread(threadId);
    await this.flushReads();
    return this.store.listReads(threadId, filter);
  }

  /**
   * The head rendered for a model within `budget` tokens (never above the thread's hard limit).
   * With a `reader`, the rendering is recorded: the state and budget determine what it held.
   */
  async context(threadId: string, budget?: number, reader?: Reader): Promise<RenderedContext> {
    const thread = await this.requireThread(threadId);
    const state = await this.requireState(thread.headStateId);
    const limit = Math.min(budget ?? thread.limits.hard, thread.limits.hard);
    // Only read: the store's own chunks, not copies of the whole thread at every model call; being
    // the same objects from call to call (and immutable), each renders once.
    const rendered = this.store.readChunks
      ? renderContext(await this.store.readChunks(state.chunkIds), { budget: limit, countTokens: countTextTokens, renderChunk: this.#renderedChunk })
      : renderContext(await this.store.getChunks(state.chunkIds), { budget: limit, countTokens: countTextTokens });
    this.recordRead(reader, threadId, 'context', state.id, { budget: limit, tokens: rendered.tokens, chunks: rendered.includedChunkIds.length, dropped: rendered.droppedChunkIds.length });
    return rendered;
  }

  /**
   * Past the soft limit, compacts by retention class (`planCompaction`): DISPOSABLE chunks dropped,
   * OTHERS ones shortened by the built-in compression, COMPRESSIBLE ones summarized one by one,
   * BATCH_COMPRESSIBLE ones summarized together (summaries need a summarizer); then, while still
   * past the hard limit, any other non-CRITICAL chunk shortened by the built-in compression.
   * CRITICAL chunks are never touched. Each step is an audited operation of origin "system".
   * With `summarize: false` no model is called (where a model call would hold up a reply).
   * With `compressEvery` (seed 002's option A), a thread under its soft limit is compressed
   * (`compress`) once that many older steps have gathered raw since the last compression.
   * Returns the steps applied.
   */
  async compactIfNeeded(
    threadId: string,
    meta: Omit<OperationMeta, 'origin'> = { reason: 'soft token limit exceeded', trigger: 'compaction' },
    options: { summarize?: boolean; compressEvery?: number } = {},
  ): Promise<number> {
    // Another compaction of the thread (a step's earlier attempt still running after its heartbeat
    // timed out, a session's write) can shorten a chunk this one planned to shorten: plan again.
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.compactOnce(threadId, meta, options);
      } catch (err) {
        if (!(err instanceof MemoryRefusedError && err.code === 'not_found') || attempt >= 3) throw err;
      }
    }
  }

  private async compactOnce(threadId: string, meta: Omit<OperationMeta, 'origin'>, options: { summarize?: boolean; compressEvery?: number }): Promise<number> {
    const summarizer = (options.summarize ?? true) ? this.options.summarizer : undefined;
    // Under the soft limit (most writes) there is nothing to plan: the head's token count says so
    // without loading its chunks (a state's tokens are the sum of its chunks', kept by the reducer).
    const current = await this.requireThread(threadId);
    if ((await this.requireState(current.headStateId)).tokens <= current.limits.soft) {
      const every = options.compressEvery ?? 0;
      if (every <= 0 || !summarizer) return 0;
      const { chunks } = await this.view(threadId);
      if (compressibleSteps(chunks) < every) return 0;
      const steps = planCompression(chunks, current.limits);
      await this.applySteps(threadId, steps, chunks, current.limits, { ...meta, reason: `every ${every} steps (MEMORY_COMPRESS_EVERY)`, origin: 'system' }, summarizer);
      return steps.length;
    }
    const { thread, chunks } = await this.view(threadId);
    const steps = planCompaction(chunks, thread.limits, { summarize: summarizer !== undefined });
    await this.applySteps(threadId, steps, chunks, thread.limits, { ...meta, origin: 'system' }, summarizer);
    return steps.length;
  }

  /**
   * Compresses the thread's older working flow now, whatever its size (seed 002's option C: the
   * agent decides; `planCompression`): one summary per group of older steps, a person's words and
   * failed results left verbatim. Under origin `agent` only chunks the agent may change are
   * summarized. Needs the summarizer. Returns the steps applied and the tokens before and after.
   */
  async compress(threadId: string, meta: OperationMeta): Promise<{ steps: number; tokensBefore: number; tokensAfter: number }> {
    const summarizer = this.options.summarizer;
    if (!summarizer) throw new Error('memory compression needs a summarizer (a model), and this memory service has none');
    const { thread, state, chunks } = await this.view(threadId);
    const steps = planCompression(chunks, thread.limits, (c) => meta.origin !== 'agent' || (c.agentModifiable && c.retention !== 'CRITICAL'));
    await this.applySteps(threadId, steps, chunks, thread.limits, meta, summarizer);
    const after = await this.requireState((await this.requireThread(threadId)).headStateId);
    return { steps: steps.length, tokensBefore: state.tokens, tokensAfter: after.tokens };
  }

  /** Applies planned compaction steps, each an audited operation under `meta` (its reason extended by what the step does). */
  private async applySteps(threadId: string, steps: readonly CompactionStep[], chunks: readonly Chunk[], limits: TokenLimits, meta: OperationMeta, summarizer: Summarizer | undefined): Promise<void> {
    const byId = new Map(chunks.map((c) => [c.id, c]));
    for (const step of steps) {
      if (step.kind === 'drop') {
        await this.apply(threadId, { op: 'delete', chunkIds: step.chunkIds }, { ...meta, reason: `${meta.reason}: drop disposable chunks` });
        continue;
      }
      const ids = step.kind === 'batch_summarize' ? step.chunkIds : [step.chunkId];
      const originals = ids.map((id) => byId.get(id)).filter((c): c is Chunk => c !== undefined);
      const first = originals[0];
      if (!first) continue;
      const tokens = originals.reduce((sum, c) => sum + c.tokens, 0);
      if (step.kind === 'builtin_compress' || step.kind === 'hard_trim') {
        // The chunk keeps its type, class and rights; only its text is shortened, without a model call.
        // Its message id stays with the original (retrieve_message still finds the full text); the
        // provenance names the message it was made from.
        const chunk: ChunkInput = {
          type: first.type,
          content: { kind: 'text', text: compressText(renderContent(first.content), step.kind === 'hard_trim' ? step.tokens : projectedSummaryTokens(first.tokens), countTextTokens) },
          priority: first.priority,
          retention: first.retention,
          agentModifiable: first.agentModifiable,
          provenance: { ...first.provenance, ...(first.messageId ? { messageId: first.messageId } : {}) },
        };
        const why = step.kind === 'hard_trim' ? `still past the hard limit (${limits.hard} tokens): built-in compression` : 'built-in compression (OTHERS)';
        await this.apply(threadId, { op: 'replace', chunkId: first.id, chunk }, { ...meta, reason: `${meta.reason}: ${why}` });
        continue;
      }
      if (!summarizer) continue; // not planned without one
      const summary = await summarizer(originals.map(renderChunk), projectedSummaryTokens(tokens));
      const chunk: ChunkInput = {
        type: step.kind === 'summarize' ? first.type : 'compacted',
        content: { kind: 'text', text: summary },
        priority: Math.max(...originals.map((c) => c.priority)),
        retention: step.kind === 'summarize' ? 'COMPRESSIBLE' : 'BATCH_COMPRESSIBLE',
        provenance: { operationId: 'compaction' },
      };
      const operation: Operation = step.kind === 'summarize' ? { op: 'replace', chunkId: first.id, chunk } : { op: 'batch_replace', chunkIds: step.chunkIds, chunk };
      await this.apply(threadId, operation, { ...meta, reason: `${meta.reason}: summarize ${ids.length} chunk(s)` });
    }
  }

  /** EPHEMERAL chunks leave when their session (or run) ends. */
  async endSession(threadId: string, meta: Omit<OperationMeta, 'origin'>): Promise<void> {
    const { chunks } = await this.view(threadId);
    const ephemeral = chunks.filter((c) => c.retention === 'EPHEMERAL').map((c) => c.id);
    if (ephemeral.length > 0) await this.apply(threadId, { op: 'delete', chunkIds: ephemeral }, { ...meta, origin: 'system' });
  }

  /**
   * A conversation message by its short id (seed 004's retrieval), looked for only in `threadIds` that
   * belong to `userId` (the caller's own threads), and only as their heads hold it now: a message in the
   * head (as last edited), or one that compaction or compression folded into a chunk of the head. A
   * message deleted, rolled back or cleared away is not found. With a `reader`, the read is recorded
   * in the thread it was found in.
   */
  async findMessage(messageId: string, scope: { threadIds: readonly string[]; userId: string }, reader?: Reader): Promise<Chunk | undefined> {
    if (!(await this.store.findChunkByMessageId(messageId))) return undefined; // never written anywhere
    for (const threadId of new Set(scope.threadIds)) {
      const thread = await this.store.getThread(threadId);
      if (!thread || !sameUser(thread.userId, scope.userId)) continue;
      const head = await this.store.getChunks((await this.requireState(thread.headStateId)).chunkIds);
      const found = head.find((c) => c.messageId === messageId) ?? (await this.findFolded(threadId, head, messageId));
      if (found) {
        if (reader && this.readAudit) this.recordRead(reader, threadId, 'message', thread.headStateId, { messageId, chunkId: found.id });
        return found;
      }
    }
    return undefined;
  }

  /**
   * Walks back from a head's chunks to the chunks they were made from — an edited or replaced chunk's
   * parent, a `chunks` chunk's parts, the chunks a `batch_replace` (audited) folded into one — and
   * returns the newest one carrying `messageId`.
   */
  private async findFolded(threadId: string, head: readonly Chunk[], messageId: string): Promise<Chunk | undefined> {
    const folded = new Map<string, string[]>();
    for (const record of await this.store.listOperations(threadId, { kind: 'batch_replace', limit: 100_000 })) {
      if (record.operation?.op === 'batch_replace') for (const id of record.newChunkIds) folded.set(id, record.operation.chunkIds);
    }
    const seen = new Set(head.map((c) => c.id));
    let frontier: readonly Chunk[] = head;
    while (frontier.length > 0) {
      const sources = frontier.flatMap((c) => [...(c.parentChunkId ? [c.parentChunkId] : []), ...(c.content.kind === 'chunks' ? c.content.chunkIds : []), ...(folded.get(c.id) ?? [])]);
      const next = [...new Set(sources)].filter((id) => !seen.has(id));
      next.forEach((id) => seen.add(id));
      frontier = await this.store.getChunks(next);
      const found = frontier.find((c) => c.messageId === messageId);
      if (found) return found;
    }
    return undefined;
  }
}
