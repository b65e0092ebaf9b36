/**
 * Reciprocal rank fusion (Cormack et al. 2009): each ranking gives an item
 * weight / (k + rank), rank from 1; the sums order the fused list. It needs no comparable
 * scores across rankings, which is why lexical, graph, recency and dense rankings mix. Pure.
 */

export interface Ranking {
  /** Item keys, best first (duplicates after the first are ignored). */
  ids: readonly string[];
  /** @default 1 */
  weight?: number;
}

/** The usual constant: damps the head of each ranking so that no single list dominates. */
export const RRF_K = 60;

export function fuse(rankings: readonly Ranking[], k = RRF_K): { id: string; score: number }[] {
  const scores = new Map<string, number>();
  for (const { ids, weight = 1 } of rankings) {
    const seen = new Set<string>();
    let rank = 0;
    for (const id of ids) {
      if (seen.has(id)) continue;
      seen.add(id);
      rank++;
      scores.set(id, (scores.get(id) ?? 0) + weight / (k + rank));
    }
  }
  // Ties broken by key, so equal inputs give one order.
  return [...scores].map(([id, score]) => ({ id, score })).sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}
