/**
 * Dense vectors of long-term records (EMBEDDING_MODEL), as every store keeps them: Float32, unit
 * length — so a dot product is the cosine — and base64 (little-endian bytes) where text holds
 * them. Pure.
 */

/** `v` scaled to length 1 (a zero vector stays zero: similar to nothing). */
export function normalized(v: ArrayLike<number>): Float32Array {
  let sum = 0;
  for (let i = 0; i < v.length; i++) sum += (v[i] as number) ** 2;
  const norm = Math.sqrt(sum);
  const out = new Float32Array(v.length);
  if (norm > 0) for (let i = 0; i < v.length; i++) out[i] = (v[i] as number) / norm;
  return out;
}

/** Cosine of two unit vectors; vectors of different lengths (another model) are not comparable: -Infinity. */
export function cosine(a: Float32Array, b: Float32Array): number {
  if (a.length !== b.length) return -Infinity;
  let dot = 0;
  for (let i = 0; i < a.length; i++) dot += (a[i] as number) * (b[i] as number);
  return dot;
}

export function vectorToBase64(v: Float32Array): string {
  const bytes = Buffer.alloc(v.length * 4);
  for (let i = 0; i < v.length; i++) bytes.writeFloatLE(v[i] as number, i * 4);
  return bytes.toString('base64');
}

export function vectorFromBase64(text: string): Float32Array {
  const bytes = Buffer.from(text, 'base64');
  const out = new Float32Array(Math.floor(bytes.length / 4));
  for (let i = 0; i < out.length; i++) out[i] = bytes.readFloatLE(i * 4);
  return out;
}

/** The best `limit` of `scored` per kind, each kind best first (ties by id, so equal inputs give one order). */
export function topPerKind<K extends string>(scored: readonly { kind: K; id: string; score: number }[], limit: number): { kind: K; id: string; score: number }[] {
  const byKind = new Map<K, { kind: K; id: string; score: number }[]>();
  for (const hit of scored) {
    if (!Number.isFinite(hit.score)) continue;
    let list = byKind.get(hit.kind);
    if (!list) byKind.set(hit.kind, (list = []));
    list.push(hit);
  }
  return [...byKind.values()].flatMap((list) => list.sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)).slice(0, limit));
}
