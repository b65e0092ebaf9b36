/**
 * Sends the `memory_summary` model call (src/calls/memory-summary.ts): compaction's summaries of
 * memory chunks, validated and repaired like every structured call, and held to a token allowance.
 */
import { countTextTokens } from '../memory/tokens';
import { memorySummary, type SummaryContext } from '../calls/memory-summary';
import type { ModelProvider } from './provider';
import { completeStructured } from './structured';

export type { SummaryContext } from '../calls/memory-summary';

export interface SummarizeOptions {
  /** The most tokens the summary may have; a longer reply is sent back to be shortened. */
  maxTokens: number;
  /** How many replies to try before giving up with InvalidModelReplyError (1 = no repair). */
  attempts: number;
}

/**
 * Summarizes `texts` in at most `maxTokens` tokens (counted with the same
 * tokenizer as memory). Throws InvalidModelReplyError when the model keeps
 * answering outside the schema or over length for `attempts` replies; provider
 * failures propagate as they are.
 */
export async function summarize(provider: ModelProvider, texts: readonly string[], options: SummarizeOptions, signal?: AbortSignal): Promise<string> {
  if (texts.length === 0) throw new RangeError('summarize: no texts to summarize');
  if (!(options.maxTokens >= 1)) throw new RangeError(`summarize: maxTokens must be at least 1 (got ${options.maxTokens})`);
  const context: SummaryContext = { call: 'memory_summary', texts: [...texts], maxTokens: options.maxTokens };
  const tooLong = ({ summary }: { summary: string }) => {
    const tokens = countTextTokens(summary);
    return tokens > options.maxTokens ? `the summary has ${tokens} tokens, more than the ${options.maxTokens} allowed; shorten it` : null;
  };
  const reply = await completeStructured(provider, { name: 'memory_summary', messages: memorySummary.messages(context), context }, options.attempts, signal, tooLong);
  return reply.summary;
}
