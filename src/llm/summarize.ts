/**
 * The `memory_summary` model call: compaction's summaries of memory chunks
 * (one COMPRESSIBLE chunk, or a batch of BATCH_COMPRESSIBLE ones), validated and
 * repaired like every structured call.
 */
import { countTextTokens } from '../memory/tokens';
import type { ChatMessage } from '../text/chat-message';
import type { ModelProvider, SummaryContext } from './provider';
import { completeStructured } from './structured';

export type { SummaryContext } from './provider';

export interface SummarizeOptions {
  /** The most tokens the summary may have; a longer reply is sent back to be shortened. */
  maxTokens: number;
  /** How many replies to try before giving up with InvalidModelReplyError (1 = no repair). */
  attempts: number;
}

const SYSTEM = `You summarize part of an AI agent's working memory so it can be kept in less space.
Be faithful: keep every fact, name, number, identifier, decision and open question; keep who said or did what.
Drop chatter, repetition and pleasantries. Do not add anything that is not in the texts. Write plain prose or short lines.
Reply with JSON only: {"summary": "..."}.`;

/** The user message: the texts numbered in order, and the length allowed. */
export function summaryPrompt(texts: readonly string[], maxTokens: number): string {
  const numbered = texts.map((t, i) => `[${i + 1}]\n${t}`).join('\n\n');
  return `Summarize these ${texts.length} text(s), oldest first, in at most ${maxTokens} tokens.\n\n${numbered}`;
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
  const messages: ChatMessage[] = [
    { role: 'system', content: SYSTEM },
    { role: 'user', content: summaryPrompt(texts, options.maxTokens) },
  ];
  const tooLong = ({ summary }: { summary: string }) => {
    const tokens = countTextTokens(summary);
    return tokens > options.maxTokens ? `the summary has ${tokens} tokens, more than the ${options.maxTokens} allowed; shorten it` : null;
  };
  const reply = await completeStructured(provider, { name: 'memory_summary', messages, context }, options.attempts, signal, tooLong);
  return reply.summary;
}
