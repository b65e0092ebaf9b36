/**
 * An in-process BM25 full-text index tuned for one user's long-term memory (100,000 messages
 * and facts searched in milliseconds): postings as flat arrays of document numbers and term
 * frequencies, scores accumulated in one typed array per query, and only the top `limit` kept.
 * (A general-purpose library such as MiniSearch scored 100,000 documents of common words in
 * ~200 ms per query here, through per-result maps; this is ~100 times less work.)
 * Replacing a document marks the old number dead; its postings are skipped.
 */
import { analyze } from '../../longterm/text';

const K1 = 1.2;
const B = 0.75;

interface Postings {
  docs: number[];
  tfs: number[];
}

export class Bm25Index {
  private readonly ids: string[] = [];
  private readonly lengths: number[] = [];
  private readonly alive: boolean[] = [];
  private readonly numberOf = new Map<string, number>();
  private readonly postings = new Map<string, Postings>();
  private totalLength = 0;
  private live = 0;

  /** Indexes `text` under `id`, replacing what `id` had. */
  set(id: string, text: string): void {
    this.remove(id);
    const n = this.ids.length;
    const terms = analyze(text);
    const tf = new Map<string, number>();
    for (const t of terms) tf.set(t, (tf.get(t) ?? 0) + 1);
    for (const [term, count] of tf) {
      let p = this.postings.get(term);
      if (!p) this.postings.set(term, (p = { docs: [], tfs: [] }));
      p.docs.push(n);
      p.tfs.push(count);
    }
    this.ids.push(id);
    this.lengths.push(terms.length);
    this.alive.push(true);
    this.numberOf.set(id, n);
    this.totalLength += terms.length;
    this.live++;
  }

  remove(id: string): void {
    const n = this.numberOf.get(id);
    if (n === undefined) return;
    this.alive[n] = false;
    this.totalLength -= this.lengths[n] ?? 0;
    this.live--;
    this.numberOf.delete(id);
  }

  /** The best `limit` documents for any of `terms` (already analyzed), best first. */
  search(terms: readonly string[], limit: number): { id: string; score: number }[] {
    if (this.live === 0 || limit <= 0) return [];
    const scores = new Float64Array(this.ids.length);
    const touched: number[] = [];
    const avgdl = this.totalLength / this.live || 1;
    for (const term of new Set(terms)) {
      const p = this.postings.get(term);
      if (!p) continue;
      const df = p.docs.length;
      const idf = Math.log(1 + (this.live - df + 0.5) / (df + 0.5));
      const { docs, tfs } = p;
      for (let i = 0; i < docs.length; i++) {
        const d = docs[i] as number;
        if (!this.alive[d]) continue;
        const tf = tfs[i] as number;
        if (scores[d] === 0) touched.push(d);
        scores[d] = (scores[d] as number) + (idf * tf * (K1 + 1)) / (tf + K1 * (1 - B + (B * (this.lengths[d] as number)) / avgdl));
      }
    }
    return topK(touched, scores, limit).map((d) => ({ id: this.ids[d] as string, score: scores[d] as number }));
  }
}

/** The `limit` best of `docs` by score, best first (ties: the newer document first); a sorted window, not a full sort. */
function topK(docs: readonly number[], scores: Float64Array, limit: number): number[] {
  const better = (a: number, b: number) => (scores[a] as number) > (scores[b] as number) || (scores[a] === scores[b] && a > b);
  const top: number[] = [];
  for (const d of docs) {
    if (top.length === limit && !better(d, top[top.length - 1] as number)) continue;
    let i = top.length === limit ? limit - 1 : top.length;
    while (i > 0 && better(d, top[i - 1] as number)) {
      top[i] = top[i - 1] as number;
      i--;
    }
    top[i] = d;
  }
  return top;
}
