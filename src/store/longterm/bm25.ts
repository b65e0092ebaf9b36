/**
 * An in-process BM25 full-text index tuned for one user's long-term memory (100,000 messages
 * and facts searched in milliseconds): postings as typed arrays of document numbers and term
 * frequencies, scores accumulated in one typed array reused by every query (only the entries a
 * query touched are cleared after it, so a search allocates next to nothing and leaves the
 * garbage collector alone), and only the top `limit` kept.
 * (A general-purpose library such as MiniSearch scored 100,000 documents of common words in
 * ~200 ms per query here, through per-result maps; this is ~100 times less work.)
 * Replacing a document marks the old number dead; its postings are skipped.
 */
import { analyze } from '../../longterm/text';

/** BM25's parameters, shared by the PostgreSQL store's ranking so both backends rank alike. */
export const K1 = 1.2;
export const B = 0.75;

/** BM25's inverse document frequency of a term in `df` of `docs` documents (never negative). */
export const bm25Idf = (docs: number, df: number): number => Math.log(1 + (docs - df + 0.5) / (df + 0.5));

/** One term's postings: document numbers ascending and their term frequencies, `n` used. */
interface Postings {
  docs: Int32Array;
  tfs: Int32Array;
  n: number;
}

/** A copy of `array` with room for at least `size` entries (capacity doubles). */
function grown<T extends Int32Array | Float64Array | Uint8Array>(array: T, size: number, make: (n: number) => T): T {
  if (size <= array.length) return array;
  const next = make(Math.max(size, array.length * 2, 16));
  next.set(array);
  return next;
}

/** A Bm25Index as plain arrays (file-store.ts keeps it beside a user's log, so a cold load skips analysis). */
export interface Bm25Snapshot {
  ids: string[];
  lengths: Int32Array;
  alive: Uint8Array;
  terms: string[];
  /** Term i's postings are docs and tfs [ends[i - 1], ends[i]). */
  ends: Int32Array;
  docs: Int32Array;
  tfs: Int32Array;
}

export class Bm25Index {
  private ids: string[] = [];
  private lengths: Int32Array = new Int32Array(0);
  private alive: Uint8Array = new Uint8Array(0);
  private readonly numberOf = new Map<string, number>();
  private readonly postings = new Map<string, Postings>();
  private totalLength = 0;
  private live = 0;
  /** Score accumulators, one per document number; all zero between searches. */
  private scores = new Float64Array(0);
  private touched = new Int32Array(0);

  /** Indexes `text` under `id`, replacing what `id` had. */
  set(id: string, text: string): void {
    this.remove(id);
    const n = this.ids.length;
    const terms = analyze(text);
    // A term's postings end with this document once it was seen in it: its frequency counts on there.
    for (const term of terms) {
      let p = this.postings.get(term);
      if (!p) this.postings.set(term, (p = { docs: new Int32Array(4), tfs: new Int32Array(4), n: 0 }));
      else if (p.docs[p.n - 1] === n) {
        p.tfs[p.n - 1] = (p.tfs[p.n - 1] as number) + 1;
        continue;
      }
      if (p.n === p.docs.length) {
        p.docs = grown(p.docs, p.n + 1, (k) => new Int32Array(k));
        p.tfs = grown(p.tfs, p.n + 1, (k) => new Int32Array(k));
      }
      p.docs[p.n] = n;
      p.tfs[p.n] = 1;
      p.n++;
    }
    this.ids.push(id);
    this.lengths = grown(this.lengths, n + 1, (k) => new Int32Array(k));
    this.alive = grown(this.alive, n + 1, (k) => new Uint8Array(k));
    this.lengths[n] = terms.length;
    this.alive[n] = 1;
    this.numberOf.set(id, n);
    this.totalLength += terms.length;
    this.live++;
  }

  snapshot(): Bm25Snapshot {
    const size = this.ids.length;
    const terms = [...this.postings.keys()];
    const ends = new Int32Array(terms.length);
    let total = 0;
    terms.forEach((term, i) => (ends[i] = total += (this.postings.get(term) as Postings).n));
    const docs = new Int32Array(total);
    const tfs = new Int32Array(total);
    terms.forEach((term, i) => {
      const p = this.postings.get(term) as Postings;
      const at = (ends[i] as number) - p.n;
      docs.set(p.docs.subarray(0, p.n), at);
      tfs.set(p.tfs.subarray(0, p.n), at);
    });
    return { ids: [...this.ids], lengths: this.lengths.slice(0, size), alive: this.alive.slice(0, size), terms, ends, docs, tfs };
  }

  /** The index a snapshot was taken of. Its postings are views into the snapshot's arrays until they grow. */
  static restore(s: Bm25Snapshot): Bm25Index {
    const arrays = s.lengths instanceof Int32Array && s.alive instanceof Uint8Array && s.ends instanceof Int32Array && s.docs instanceof Int32Array && s.tfs instanceof Int32Array;
    if (!arrays || !Array.isArray(s.ids) || !Array.isArray(s.terms)) throw new Error('not a full-text index snapshot');
    const size = s.ids.length;
    if (s.lengths.length !== size || s.alive.length !== size || s.ends.length !== s.terms.length || s.docs.length !== s.tfs.length || (s.ends.at(-1) ?? 0) !== s.docs.length) {
      throw new Error('a full-text index snapshot whose arrays do not agree');
    }
    const index = new Bm25Index();
    index.ids = [...s.ids];
    index.lengths = s.lengths;
    index.alive = s.alive;
    for (let d = 0; d < size; d++) {
      if (s.alive[d] === 0) continue;
      index.numberOf.set(s.ids[d] as string, d);
      index.totalLength += s.lengths[d] as number;
      index.live++;
    }
    let start = 0;
    s.terms.forEach((term, i) => {
      const end = s.ends[i] as number;
      index.postings.set(term, { docs: s.docs.subarray(start, end), tfs: s.tfs.subarray(start, end), n: end - start });
      start = end;
    });
    return index;
  }

  remove(id: string): void {
    const n = this.numberOf.get(id);
    if (n === undefined) return;
    this.alive[n] = 0;
    this.totalLength -= this.lengths[n] ?? 0;
    this.live--;
    this.numberOf.delete(id);
  }

  /**
   * The best `limit` documents for any of `terms` (already analyzed), best first. Of `anyOf`, a
   * document counts only the best term it holds (LexicalQuery.anyOf), added to its terms' sum.
   */
  search(terms: readonly string[], limit: number, anyOf: readonly string[] = []): { id: string; score: number }[] {
    if (this.live === 0 || limit <= 0) return [];
    const size = this.ids.length;
    if (this.scores.length < size) {
      this.scores = new Float64Array(Math.max(size, this.scores.length * 2));
      this.touched = new Int32Array(this.scores.length);
    }
    const { scores, touched, lengths, alive } = this;
    const anyDead = this.live < size;
    let count = 0;
    const avgdl = this.totalLength / this.live || 1;
    // BM25's length normalisation as one multiply per posting.
    const lengthWeight = (K1 * B) / avgdl;
    const base = K1 * (1 - B);
    try {
      const summed = new Set(terms);
      // anyOf first, by the maximum: every score is still 0 or one of theirs when they are done.
      for (const [group, list] of [
        [true, [...new Set(anyOf)].filter((t) => !summed.has(t))],
        [false, summed],
      ] as const) {
        for (const term of list) {
          const p = this.postings.get(term);
          if (!p) continue;
          const idf = bm25Idf(this.live, p.n);
          const weight = idf * (K1 + 1);
          const { docs, tfs, n } = p;
          for (let i = 0; i < n; i++) {
            const d = docs[i] as number;
            if (anyDead && alive[d] === 0) continue;
            const tf = tfs[i] as number;
            const before = scores[d] as number;
            if (before === 0) touched[count++] = d;
            const add = (weight * tf) / (tf + base + lengthWeight * (lengths[d] as number));
            scores[d] = group ? Math.max(before, add) : before + add;
          }
        }
      }
      return topK(touched, count, scores, limit).map((d) => ({ id: this.ids[d] as string, score: scores[d] as number }));
    } finally {
      for (let i = 0; i < count; i++) scores[touched[i] as number] = 0;
    }
  }
}

/** The `limit` best of the first `count` of `docs` by score, best first (ties: the newer document first); a sorted window, not a full sort. */
function topK(docs: Int32Array, count: number, scores: Float64Array, limit: number): number[] {
  const top: number[] = [];
  let floor = -Infinity;
  let floorDoc = -1;
  for (let j = 0; j < count; j++) {
    const d = docs[j] as number;
    const s = scores[d] as number;
    // Most documents fall below the window: one comparison, no call.
    if (top.length === limit && (s < floor || (s === floor && d < floorDoc))) continue;
    let i = top.length === limit ? limit - 1 : top.length;
    while (i > 0) {
      const o = top[i - 1] as number;
      const so = scores[o] as number;
      if (!(s > so || (s === so && d > o))) break;
      top[i] = o;
      i--;
    }
    top[i] = d;
    if (top.length === limit) {
      floorDoc = top[limit - 1] as number;
      floor = scores[floorDoc] as number;
    }
  }
  return top;
}
