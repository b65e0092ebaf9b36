/**
 * Token counting with a real tokenizer (gpt-tokenizer, o200k_base — the
 * encoding of current OpenAI models). Not for workflow code: activities and the
 * API count tokens; workflows only read the counts stored on chunks.
 */
import { LRUCache } from 'lru-cache';
import { CompactRanks } from './compact-ranks';
import type { ChunkContent } from './model';
import { renderJson } from './parser';

/**
 * What an image costs: OpenAI bills a low-detail image at a flat 85 tokens
 * whatever its size, so an image reference is budgeted at that price.
 */
export const IMAGE_TOKENS = 85;

// Text like "<|endoftext|>" in memory is data, not a control token: count it as
// ordinary text instead of letting the tokenizer throw.
const AS_PLAIN_TEXT = { disallowedSpecial: new Set<string>() };

type CountTokens = typeof import('gpt-tokenizer').countTokens;
let bpeCount: CountTokens | undefined;

/**
 * Words past the vocabulary whose BPE merges the tokenizer keeps (its default is 100,000). After varied
 * text (tool output, base64, rare words) that default held ≈ 29 MB of heap and, evicting from a Map that
 * large, counted slower than a small cache: 19.4 against 4.7 s for 4,000 base64 pieces and 100,000 rare
 * words, growing the heap 0.7 MB at 2,000 (bench/results/HISTORY.md). Pieces that recur are counted once
 * by `pieceTokens` below, before they reach it.
 */
export const MERGE_CACHE_WORDS = 2_000;

/**
 * The tokenizer, loaded on the first count: its tables cost a process ≈ 45 MB (≈ 65 MB under tsx),
 * which a worker that has not counted yet, or a process that imports this module and never counts, is spared.
 */
function bpe(): CountTokens {
  if (!bpeCount) {
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- an import would load the tables with the module
    const tokenizer = require('gpt-tokenizer') as typeof import('gpt-tokenizer');
    tokenizer.setMergeCacheSize(MERGE_CACHE_WORDS);
    compactRanks(tokenizer.default);
    bpeCount = tokenizer.countTokens;
  }
  return bpeCount;
}

/** The parts of gpt-tokenizer's instance (4.x) that hold its ranks. */
interface RankTables {
  bytePairEncodingCoreProcessor?: { bytePairStringRankEncoder?: unknown; bytePairRankDecoder?: unknown };
}

/**
 * Moves the tokenizer's ranks off the JS heap (./compact-ranks.ts): ≈ 14 MB less live heap, which V8
 * would let a worker's peak grow by about twice that, and counts as fast. What Threadline uses of the
 * instance — counting, encoding — reads ranks by string only; its table of ranks to strings, for
 * decoding, is dropped with the module that holds them. Where the instance is not as expected (another
 * version), it is left as it is: `ranksCompacted()` says which, and a test that it was.
 */
function compactRanks(instance: unknown): void {
  const core = (instance as RankTables).bytePairEncodingCoreProcessor;
  if (!core || !(core.bytePairStringRankEncoder instanceof Map) || !Array.isArray(core.bytePairRankDecoder)) return;
  const ranks = core.bytePairRankDecoder;
  core.bytePairStringRankEncoder = new CompactRanks(core.bytePairStringRankEncoder as Map<string, number>);
  core.bytePairRankDecoder = [];
  // The module of the ranks keeps them as its export while it is loaded: emptied, and out of the cache.
  for (const [file, loaded] of Object.entries(require.cache)) {
    if (loaded?.exports && (loaded.exports as { default?: unknown }).default === ranks) {
      (loaded.exports as { default?: unknown }).default = undefined;
      delete require.cache[file];
    }
  }
  compacted = true;
}

let compacted = false;

/** Whether the tokenizer's ranks were moved off the heap (compactRanks). */
export function ranksCompacted(): boolean {
  return compacted;
}

/**
 * Counts of the pieces counted lately. Every model call rebuilds its prompt and context from what the
 * last one had (the system prompt and tools, a run's earlier steps, a conversation's turns), so most
 * pieces were counted before: BPE took ≈ 0.5 ms of a plan step's worker time. Bounded by entries and
 * by the text held (≈ 8 MB at most).
 */
const pieceTokens = new LRUCache<string, number>({ max: 20_000, maxSize: 4_000_000, sizeCalculation: (_tokens, piece) => Math.max(1, piece.length) });

function countPiece(piece: string): number {
  const known = pieceTokens.get(piece);
  if (known !== undefined) return known;
  const tokens = bpe()(piece, AS_PLAIN_TEXT);
  pieceTokens.set(piece, tokens);
  return tokens;
}

/**
 * Long text is counted in pieces: BPE is quadratic in the length of one pre-token, so a tool that
 * returns 100 kB without a space (base64, a run of one character) took ~10 s to count whole and
 * blocked the activity past its heartbeat timeout. Pieces of PIECE_CHARS bound that; a split can
 * move a count by a token or so per piece, which budgets tolerate.
 */
const PIECE_CHARS = 1_000;

export function countTextTokens(text: string): number {
  if (text.length <= PIECE_CHARS) return text.length === 0 ? 0 : countPiece(text);
  let tokens = 0;
  for (let at = 0; at < text.length; at += PIECE_CHARS) tokens += countPiece(text.slice(at, at + PIECE_CHARS));
  return tokens;
}

/**
 * Tokens of a chunk's content as the parser renders it: text as is, JSON in its
 * readable form, an image at IMAGE_TOKENS, and 0 for a list of chunks (the
 * chunks it refers to count themselves).
 */
export function countContentTokens(content: ChunkContent): number {
  switch (content.kind) {
    case 'text':
      return countTextTokens(content.text);
    case 'json':
      return countTextTokens(renderJson(content.data));
    case 'image':
      return IMAGE_TOKENS;
    case 'chunks':
      return 0;
  }
}
