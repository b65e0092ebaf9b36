/**
 * The memory parser (seed 001): renders a state's chunks into Chat Completions
 * messages for a model, within a token budget, most important first.
 * STUB — to be implemented.
 */
import type { ChatMessage } from '../llm/provider';
import type { Chunk } from './model';

export interface RenderOptions {
  /** Never exceeded by the rendered messages (counted with `countTokens` over each message's content). */
  budget: number;
  countTokens: (text: string) => number;
}

export interface RenderedContext {
  messages: ChatMessage[];
  tokens: number;
  includedChunkIds: string[];
  droppedChunkIds: string[];
}

export function renderChunk(chunk: Chunk): string {
  void chunk;
  throw new Error('not implemented');
}

export function renderContext(chunks: readonly Chunk[], options: RenderOptions): RenderedContext {
  void chunks; void options;
  throw new Error('not implemented');
}
