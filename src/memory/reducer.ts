/**
 * The reducer (seed 001): (state, operation, origin) → next state and new chunks,
 * or a clear refusal. Pure and deterministic given its context.
 * STUB — to be implemented.
 */
import type { Chunk, ChunkContent, ChunkInput, ChunkType, IdSource, MemoryState, Operation, OperationMeta, RetentionClass } from './model';

export interface ReduceContext {
  now: Date;
  newId: IdSource;
  countTokens: (content: ChunkContent) => number;
  /** Id of the operation being applied; recorded in new chunks' provenance. */
  operationId: string;
  /** For `rollback`: the target state, loaded by the caller (must belong to the same thread). */
  rollbackTarget?: MemoryState;
}

export type RefusalCode = 'not_found' | 'forbidden' | 'invalid';
export interface Refusal {
  code: RefusalCode;
  message: string;
}
export type ReduceResult = { ok: true; state: MemoryState; newChunks: Chunk[] } | { ok: false; refusal: Refusal };

export function chunkDefaults(type: ChunkType): { priority: number; retention: RetentionClass; agentModifiable: boolean } {
  void type;
  throw new Error('not implemented');
}

export function createChunk(input: ChunkInput, ctx: ReduceContext, parentChunkId: string | null = null): Chunk {
  void input; void ctx; void parentChunkId;
  throw new Error('not implemented');
}

export function reduce(state: MemoryState, chunks: ReadonlyMap<string, Chunk>, operation: Operation, meta: OperationMeta, ctx: ReduceContext): ReduceResult {
  void state; void chunks; void operation; void meta; void ctx;
  throw new Error('not implemented');
}
