/**
 * Compaction by retention class (seed 001 "Memory Compact"): what to drop and
 * what to summarize once a state is past its soft token limit. Pure planning;
 * the summaries themselves are model calls made by the memory service.
 * STUB — to be implemented.
 */
import type { Chunk, TokenLimits } from './model';

export type CompactionStep =
  | { kind: 'drop'; chunkIds: string[] }
  | { kind: 'summarize'; chunkId: string }
  | { kind: 'batch_summarize'; chunkIds: string[] };

export function planCompaction(chunks: readonly Chunk[], limits: TokenLimits): CompactionStep[] {
  void chunks; void limits;
  throw new Error('not implemented');
}
