/**
 * `memory_summary` (seed 001's compaction): a faithful summary of memory chunks — one COMPRESSIBLE
 * chunk, or a batch of BATCH_COMPRESSIBLE ones — made when a thread passes its soft token limit.
 * `summarize` (src/llm/summarize.ts) sends it and holds the summary to its token allowance.
 */
import { z } from 'zod';
import { countTextTokens } from '../memory/tokens';
import { modelCall, type ContextKind } from './call';

export const MemorySummaryReplySchema = z.object({ summary: z.string().min(1) });
export type MemorySummaryReply = z.infer<typeof MemorySummaryReplySchema>;

/** What a `memory_summary` call is made from: the texts to summarize and the summary's token allowance. */
export interface SummaryContext {
  call: 'memory_summary';
  texts: string[];
  maxTokens: number;
}

/** Tells a summary request's context from a planner's. */
export function isSummaryContext(context: { call: string }): context is SummaryContext {
  return context.call === 'memory_summary' && 'texts' in context;
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

const SUMMARY_TAG = '[offline demo summary]';
const SENTENCE_CHARS = 200;

/** The first sentence of a text, whitespace collapsed, at most SENTENCE_CHARS characters. */
function firstSentence(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  const sentence = /^.*?[.!?](?=\s|$)/.exec(flat)?.[0] ?? flat;
  return sentence.length > SENTENCE_CHARS ? `${sentence.slice(0, SENTENCE_CHARS - 1).trimEnd()}…` : sentence;
}

/**
 * The demo's `memory_summary`: extractive, not abstractive — the first sentence
 * of each text, labelled, cut to fit `maxTokens`. Deterministic.
 */
export function demoSummary(texts: readonly string[], maxTokens: number): string {
  const full = [SUMMARY_TAG, ...texts.map(firstSentence).filter((s) => s !== '')].join(' ');
  if (countTextTokens(full) <= maxTokens) return full;
  // The longest prefix (plus an ellipsis) that fits, found by bisection on its length.
  const fits = (length: number) => countTextTokens(`${full.slice(0, length).trimEnd()}…`) <= maxTokens;
  let lo = SUMMARY_TAG.length;
  let hi = full.length;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (fits(mid)) lo = mid;
    else hi = mid - 1;
  }
  return `${full.slice(0, lo).trimEnd()}…`;
}

const SUMMARY_CONTEXT: ContextKind<SummaryContext> = { label: 'a SummaryContext (texts, maxTokens)', is: isSummaryContext };

export const memorySummary = modelCall({
  name: 'memory_summary',
  schema: MemorySummaryReplySchema,
  context: SUMMARY_CONTEXT,
  messages: (ctx) => [
    { role: 'system', content: SYSTEM },
    { role: 'user', content: summaryPrompt(ctx.texts, ctx.maxTokens) },
  ],
  demo: (ctx) => ({ summary: demoSummary(ctx.texts, ctx.maxTokens) }),
});
