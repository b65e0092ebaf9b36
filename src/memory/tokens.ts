/**
 * Token counting with a real tokenizer (gpt-tokenizer, o200k_base — the
 * encoding of current OpenAI models). Not for workflow code: activities and the
 * API count tokens; workflows only read the counts stored on chunks.
 * STUB — to be implemented.
 */
import type { ChunkContent } from './model';

export function countTextTokens(text: string): number {
  void text;
  throw new Error('not implemented');
}

export function countContentTokens(content: ChunkContent): number {
  void content;
  throw new Error('not implemented');
}
