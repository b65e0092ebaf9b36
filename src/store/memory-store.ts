/**
 * The one small interface every memory storage backend implements (in-memory,
 * embedded file under DATA_DIR, PostgreSQL). One conformance suite
 * (test/store/memory-store.conformance.ts) runs unchanged against all of them.
 */
import type { Chunk, MemoryState, MemoryThread, OperationKind, OperationRecord, Origin, ReadRecord, ReadTarget } from '../memory/model';

/** The head moved since the caller read it: re-read, re-reduce and try again (optimistic concurrency). */
export class HeadMovedError extends Error {
  constructor(
    readonly threadId: string,
    readonly expected: string,
    readonly actual: string,
  ) {
    super(`thread ${threadId}: head is ${actual}, not ${expected}`);
    this.name = 'HeadMovedError';
  }
}

export interface StateSummary {
  stateId: string;
  parentStateId: string | null;
  seq: number;
  operationId: string | null;
  at: string;
}

export interface OperationFilter {
  origin?: Origin;
  kind?: OperationKind;
  runId?: string;
  /** ISO timestamps, inclusive. */
  since?: string;
  until?: string;
  /** Only records with seq greater than this (the live stream's cursor). */
  afterSeq?: number;
  /** @default 1000 */
  limit?: number;
}

export interface ReadFilter {
  origin?: Origin;
  target?: ReadTarget;
  runId?: string;
  /** ISO timestamps, inclusive. */
  since?: string;
  until?: string;
  /** @default 1000 */
  limit?: number;
}

/** A conversation message found by its id, and the thread that stored it. */
export interface MessageHit {
  threadId: string;
  chunk: Chunk;
}

export interface Checkpoint {
  name: string;
  stateId: string;
  at: string;
}

/** A record before the store has numbered it. */
export type NewOperationRecord = Omit<OperationRecord, 'seq'>;

export interface CommitInput {
  threadId: string;
  /** The head the caller reduced from; the commit fails with HeadMovedError if it moved. */
  expectedHeadStateId: string;
  /** The new head; null for records that do not change state (checkpoints), whose toStateId is the current head. */
  state: MemoryState | null;
  chunks: Chunk[];
  record: NewOperationRecord;
  /** For checkpoint records. */
  checkpoint?: { name: string };
}

export type CommitResult = { status: 'committed'; record: OperationRecord } | { status: 'duplicate'; record: OperationRecord };

export interface MemoryStore {
  readonly kind: 'memory' | 'file' | 'postgres';
  /** Creates tables / folders (numbered migrations where it applies). Idempotent. */
  setup(): Promise<void>;
  /** Releases connections and handles. */
  end(): Promise<void>;
  /** Creates a thread with its first state, chunks and creating record (seq 1). Fails if the id exists. */
  createThread(input: { thread: MemoryThread; state: MemoryState; chunks: Chunk[]; record: NewOperationRecord }): Promise<OperationRecord>;
  getThread(threadId: string): Promise<MemoryThread | undefined>;
  /** Newest first. */
  listThreads(filter: { userId?: string; limit?: number }): Promise<MemoryThread[]>;
  /** A state, materialized (its full chunk id list). */
  getState(stateId: string): Promise<MemoryState | undefined>;
  /** The states of a thread, oldest first. */
  listStates(threadId: string): Promise<StateSummary[]>;
  /** Chunks by id, in the order asked; unknown ids are left out. */
  getChunks(chunkIds: readonly string[]): Promise<Chunk[]>;
  /**
   * As `getChunks`, for a caller that only reads them (a prompt's rendering): a backend that keeps
   * chunks in memory hands out its own objects instead of copies, which nobody may change. Without
   * it, `getChunks` serves.
   */
  readChunks?(chunkIds: readonly string[]): Promise<readonly Chunk[]>;
  /** The newest chunk carrying a conversation message id (seed 004's retrieval by id), and its thread. */
  findChunkByMessageId(messageId: string): Promise<MessageHit | undefined>;
  /**
   * Appends one operation atomically: new chunks, the new state (if any), the record (numbered
   * seq = last + 1) and the new head — only if the head is still `expectedHeadStateId`, else
   * HeadMovedError. A record id already committed returns {status: 'duplicate'} and changes nothing,
   * which makes retried activity writes idempotent.
   */
  commit(input: CommitInput): Promise<CommitResult>;
  /** Oldest first. */
  listOperations(threadId: string, filter?: OperationFilter): Promise<OperationRecord[]>;
  listCheckpoints(threadId: string): Promise<Checkpoint[]>;
  /**
   * Appends records of reads. No head check and no seq: reads change nothing, so this never waits
   * for a thread's writers. Records of threads that do not exist are left out; a record id already
   * stored is kept once.
   */
  appendReads(records: readonly ReadRecord[]): Promise<void>;
  /** A thread's reads, oldest first (by `at`, then as appended). */
  listReads(threadId: string, filter?: ReadFilter): Promise<ReadRecord[]>;
}
