/**
 * A read-only map from strings to ranks (integers from 0 to 2^32 - 1) held in typed arrays, off the JS heap: the tokenizer's
 * 200,000 ranks as a Map (its keys, their array, the table) are ≈ 14 MB of live heap, and V8 lets a
 * worker's heap grow in proportion to what is live (bench/results/HISTORY.md, 2026-11-29). Open
 * addressing over FNV-1a hashes of the keys' UTF-16 code units; a key is its code units in one pool.
 */
export class CompactRanks {
  readonly size: number;
  /** Every key's code units, one after another. */
  private readonly units: Uint16Array;
  /** Where key i starts in `units`; key i ends where i + 1 starts. */
  private readonly starts: Uint32Array;
  private readonly values: Uint32Array;
  /** Per slot, 1 + the index of the key hashed there, or 0 for none. */
  private readonly slots: Uint32Array;
  private readonly mask: number;

  /** Reads `ranks` twice, sizing then filling: a list of its entries would be ≈ 10 MB more at the tokenizer's load. */
  constructor(ranks: ReadonlyMap<string, number>) {
    this.size = ranks.size;
    let length = 0;
    for (const key of ranks.keys()) length += key.length;
    this.units = new Uint16Array(length);
    this.starts = new Uint32Array(ranks.size + 1);
    this.values = new Uint32Array(ranks.size);
    let capacity = 1;
    while (capacity < ranks.size * 2) capacity <<= 1; // at most half full
    this.slots = new Uint32Array(capacity);
    this.mask = capacity - 1;
    let at = 0;
    let i = 0;
    for (const [key, value] of ranks) {
      if (!Number.isInteger(value) || value < 0 || value > 0xffffffff) throw new Error(`CompactRanks: ${value} is not a rank`);
      this.starts[i] = at;
      for (let c = 0; c < key.length; c++) this.units[at++] = key.charCodeAt(c);
      this.values[i] = value;
      let slot = hash(key) & this.mask;
      while (this.slots[slot] !== 0) slot = (slot + 1) & this.mask;
      this.slots[slot] = ++i; // 1 + the key's index
    }
    this.starts[ranks.size] = at;
  }

  get(key: string): number | undefined {
    let slot = hash(key) & this.mask;
    for (;;) {
      const held = this.slots[slot] as number;
      if (held === 0) return undefined;
      if (this.matches(held - 1, key)) return this.values[held - 1];
      slot = (slot + 1) & this.mask;
    }
  }

  private matches(index: number, key: string): boolean {
    const start = this.starts[index] as number;
    if ((this.starts[index + 1] as number) - start !== key.length) return false;
    for (let c = 0; c < key.length; c++) if (this.units[start + c] !== key.charCodeAt(c)) return false;
    return true;
  }
}

/** FNV-1a, 32 bits, over UTF-16 code units. */
function hash(key: string): number {
  let h = 0x811c9dc5;
  for (let c = 0; c < key.length; c++) h = Math.imul(h ^ key.charCodeAt(c), 0x01000193);
  return h >>> 0;
}
