/**
 * Text analysis for long-term retrieval: words folded to lowercase without accents, common
 * English function words dropped, the rest reduced to their Porter2 stem (wink-porter2-stemmer),
 * so "lives", "lived" and "living" meet. Both the index and the query go through `analyze`.
 * Pure module.
 */
import stem from 'wink-porter2-stemmer';

/** Function words that carry no topic; kept short so that "not", "no" and numbers still count. */
const STOPWORDS = new Set(
  (
    'a an the and or but if then so of to in on at by for with from as into onto about over under ' +
    'is are was were be been being am do does did doing have has had having will would shall should can could may might must ' +
    'i me my mine myself we us our ours you your yours he him his she her hers it its they them their theirs ' +
    'this that these those there here what which who whom whose when where why how ' +
    'just also very too than such some any each every all both own same other again further once ' +
    'up down out off s t d ll m re ve'
  ).split(' '),
);

/** Words: letters and digits of any script (apostrophes inside words kept out: "alice's" → "alice", "s"). */
const WORD = /[\p{L}\p{N}]+/gu;

const NOT_ASCII = /[^\x00-\x7f]/;

/** Lowercase, accents removed ("Zoë" and "zoe" are one name). */
export function fold(text: string): string {
  // Most text is ASCII, which NFKD leaves alone and which holds no marks: analysis ≈ 17 % faster.
  if (!NOT_ASCII.test(text)) return text.toLowerCase();
  return text
    .normalize('NFKD')
    .replace(/\p{M}+/gu, '')
    .toLowerCase();
}

/** The words of `text`, folded, in order (no stopword removal, no stemming): for names and aliases. */
export function words(text: string): string[] {
  return fold(text).match(WORD) ?? [];
}

/** Stems already computed: a vocabulary repeats, and the stemmer's regular expressions are most of indexing's cost. */
const stems = new Map<string, string>();
const MAX_STEMS = 100_000;

function stemOf(word: string): string {
  let stemmed = stems.get(word);
  if (stemmed === undefined) {
    if (stems.size >= MAX_STEMS) stems.clear(); // bounded: an odd corpus of unique words cannot grow it forever
    stems.set(word, (stemmed = stem(word)));
  }
  return stemmed;
}

/** Index and query terms of `text`: folded words without stopwords, stemmed. */
export function analyze(text: string): string[] {
  const out: string[] = [];
  for (const word of words(text)) {
    if (STOPWORDS.has(word)) continue;
    // The stemmer is for English words; numbers and long tokens (ids, hashes) stay as they are.
    out.push(word.length > 2 && word.length < 30 && !/\d/.test(word) ? stemOf(word) : word);
  }
  return out;
}

/** A name or predicate as one comparable key: its folded words joined by single spaces. */
export function normalizeName(text: string): string {
  return words(text).join(' ');
}

/**
 * Trigrams of `text` exactly as PostgreSQL's pg_trgm makes them: lowercased, split into words of
 * letters and digits, each word padded with two spaces before and one after, every run of three
 * characters, as a set. Both stores measure name closeness with it (the PostgreSQL store with
 * pg_trgm itself), so a misspelt name finds the same entities everywhere.
 */
export function trigrams(text: string): Set<string> {
  const out = new Set<string>();
  for (const word of text.toLowerCase().match(WORD) ?? []) {
    const chars = [...`  ${word} `];
    for (let i = 0; i + 3 <= chars.length; i++) out.add(chars.slice(i, i + 3).join(''));
  }
  return out;
}

/**
 * pg_trgm's `similarity(a, b)`: shared trigrams over all trigrams of either (0 when either has
 * none), in single precision as PostgreSQL computes it (a `real`), so thresholds cut alike.
 */
export function trigramSimilarity(a: string, b: string): number {
  return setSimilarity(trigrams(a), trigrams(b));
}

/** `trigramSimilarity` of two strings' trigram sets, for callers comparing one string with many. */
export function setSimilarity(ta: ReadonlySet<string>, tb: ReadonlySet<string>): number {
  if (ta.size === 0 || tb.size === 0) return 0;
  let shared = 0;
  for (const t of ta) if (tb.has(t)) shared++;
  return Math.fround(shared / (ta.size + tb.size - shared));
}

/** Words shorter than this never start a name phrase: "al", "jo" are spelt like too much. */
const MIN_PHRASE_WORD = 3;

/**
 * The phrases of `text` that could be a misspelt name, normalized (folded words joined by single
 * spaces): runs of up to `maxWords` consecutive words, none a stopword nor shorter than three
 * letters ("where does Jon Smith live" → "jon", "jon smith", "smith", "live", "smith live", …),
 * each once, in order of appearance, at most `limit`.
 */
export function namePhrases(text: string, maxWords = 3, limit = 64): string[] {
  const out = new Set<string>();
  let run: string[] = [];
  const flush = () => {
    for (let i = 0; i < run.length && out.size < limit; i++) {
      for (let n = 1; n <= maxWords && i + n <= run.length && out.size < limit; n++) out.add(run.slice(i, i + n).join(' '));
    }
    run = [];
  };
  for (const word of words(text)) {
    if (out.size >= limit) break;
    if (STOPWORDS.has(word) || word.length < MIN_PHRASE_WORD) flush();
    else run.push(word);
  }
  flush();
  return [...out];
}
