/**
 * Threadline's own data sealed at rest: with THREADLINE_ENCRYPTION_KEY set, the stores seal what
 * people and tools wrote (chunk content, long-term records, the audit's notes, notes, the step
 * journal) with the keys and the AES-256-GCM seal the Temporal payload codec uses (./keys.ts), and
 * search indexes hold keyed hashes of terms instead of the terms. docs/encryption-at-rest.md says
 * what stays readable, and why.
 *
 * A sealed value is stored as `{"$sealed": "<key id>:<base64 of iv, ciphertext, tag>"}` (beside
 * copies of the few fields a query filters on, when the caller keeps some plain). Whatever is not
 * in that form is read as it is: rows written before encryption was turned on still read, and a
 * value sealed by a key now among THREADLINE_ENCRYPTION_OLD_KEYS still opens (rotation).
 */
import { createHmac, hkdfSync } from 'node:crypto';
import { configuredKeys, openBytes, sealBytes, type EncryptionKey } from './keys';

export const SEALED_FIELD = '$sealed';

/** How a store seals and opens what it keeps. */
export interface Sealer {
  /** Whether values are sealed (a key is configured). */
  readonly on: boolean;
  /** Resolves the keys (a passphrase is stretched once per process, off the event loop); `seal`, `open` and the hashes need it done. */
  ready(): Promise<void>;
  /**
   * `value` sealed: `{$sealed}` plus the fields of `keep` copied plain (for queries); `value` itself
   * when sealing is off.
   */
  seal<T>(value: T, keep?: readonly (keyof T & string)[]): unknown;
  /** What `seal` stored, opened; anything not sealed is returned as it is (written before encryption was on). */
  open<T>(stored: unknown): T;
  /** The index form of an analyzed term as stored: its keyed hash under the current key; the term itself when sealing is off. */
  indexTerm(term: string): string;
  /** Every form a stored term may have: its hashes (both lengths) under the current and the older keys, and the term itself (rows from before encryption). */
  queryTerms(term: string): string[];
}

/** Whether `stored` is a sealed value. */
export function isSealed(stored: unknown): stored is { [SEALED_FIELD]: string } {
  return typeof stored === 'object' && stored !== null && typeof (stored as Record<string, unknown>)[SEALED_FIELD] === 'string';
}

/** The sealer of a deployment without a key: stores values as they are, and refuses sealed ones it cannot open. */
export const PLAIN: Sealer = {
  on: false,
  ready: () => Promise.resolve(),
  seal: (value) => value,
  open<T>(stored: unknown): T {
    if (isSealed(stored)) throw new Error('a stored value is sealed, and THREADLINE_ENCRYPTION_KEY is not set');
    return stored as T;
  },
  indexTerm: (term) => term,
  queryTerms: (term) => [term],
};

interface ResolvedKey {
  id: string;
  aes: Buffer;
  /** The HMAC key of search terms, derived from the AES key (never the AES key itself). */
  terms: Buffer;
  /** Hashes of terms seen lately: words repeat, and an HMAC costs a few µs (in memory only, never stored). */
  hashes: Map<string, TermHashes>;
}

/** Term hashes kept per key. */
const HASHES_KEPT = 50_000;

/**
 * A term's hash as rows store it: 48 bits of its HMAC, base64url after a `g` (9 characters, about a
 * stemmed word's length: the hashes are most of an index's and a search's bytes). A collision only
 * joins two words in one user's index (a record with one matches a query for the other); among a
 * user's 100,000 distinct terms its probability is about 2e-5, see docs/encryption-at-rest.md.
 */
const TERM_HASH_CHARS = 8;
/** The hashes of rows written before: 64 bits, hex after an `h` (17 characters). Queries still ask for them. */
const LEGACY_TERM_HASH_HEX = 16;

interface TermHashes {
  short: string;
  legacy: string;
}

class KeySealer implements Sealer {
  readonly on = true;
  #current: ResolvedKey | undefined;
  #all: ResolvedKey[] = [];
  #ready: Promise<void> | undefined;

  constructor(
    private readonly current: EncryptionKey,
    private readonly older: readonly EncryptionKey[],
  ) {}

  ready(): Promise<void> {
    this.#ready ??= Promise.all([this.current, ...this.older].map(async (k) => ({ id: k.id, aes: await k.key }))).then((keys) => {
      this.#all = keys.map((k) => ({ ...k, terms: Buffer.from(hkdfSync('sha256', k.aes, 'threadline', 'search terms', 32)), hashes: new Map() }));
      this.#current = this.#all[0];
    });
    return this.#ready;
  }

  #key(): ResolvedKey {
    if (!this.#current) throw new Error('the store sealer is used before ready() resolved');
    return this.#current;
  }

  seal<T>(value: T, keep: readonly (keyof T & string)[] = []): unknown {
    const key = this.#key();
    const sealed = sealBytes(key.aes, Buffer.from(JSON.stringify(value), 'utf8'));
    const plain: Record<string, unknown> = {};
    for (const field of keep) if (value[field] !== undefined) plain[field] = value[field];
    return { ...plain, [SEALED_FIELD]: `${key.id}:${sealed.toString('base64')}` };
  }

  open<T>(stored: unknown): T {
    if (!isSealed(stored)) return stored as T;
    this.#key();
    const text = stored[SEALED_FIELD];
    const colon = text.indexOf(':');
    const id = text.slice(0, colon);
    const data = Buffer.from(text.slice(colon + 1), 'base64');
    const keys = this.#all.filter((k) => k.id === id);
    if (keys.length === 0) throw new Error(`a stored value is sealed with encryption key ${id}, which is not configured (THREADLINE_ENCRYPTION_KEY / THREADLINE_ENCRYPTION_OLD_KEYS)`);
    for (const key of keys) {
      const plain = openBytes(key.aes, data);
      if (plain) return JSON.parse(plain.toString('utf8')) as T;
    }
    throw new Error(`a stored value (key ${id}) could not be opened: changed after sealing, or sealed with another key of that name`);
  }

  indexTerm(term: string): string {
    return termHashes(this.#key(), term).short;
  }

  queryTerms(term: string): string[] {
    this.#key();
    return [...new Set([...this.#all.flatMap((k) => Object.values(termHashes(k, term))), term])];
  }
}

function termHashes(key: ResolvedKey, term: string): TermHashes {
  let hash = key.hashes.get(term);
  if (hash === undefined) {
    const digest = createHmac('sha256', key.terms).update(term, 'utf8').digest();
    hash = { short: `g${digest.subarray(0, (TERM_HASH_CHARS * 3) / 4).toString('base64url')}`, legacy: `h${digest.toString('hex').slice(0, LEGACY_TERM_HASH_HEX)}` };
    if (key.hashes.size >= HASHES_KEPT) key.hashes.clear(); // simpler than an LRU: a busy vocabulary refills it in moments
    key.hashes.set(term, hash);
  }
  return hash;
}

export type SealingConfig = Parameters<typeof configuredKeys>[0];

const sealers = new Map<string, Sealer>();

/** The sealer of `config`'s keys: one per process and key set, so every store shares its keys' stretching. */
export function sealerFor(config: SealingConfig): Sealer {
  const keys = configuredKeys(config);
  if (!keys) return PLAIN;
  const memo = `${config.THREADLINE_ENCRYPTION_KEY}\n${config.THREADLINE_ENCRYPTION_OLD_KEYS ?? ''}`;
  let sealer = sealers.get(memo);
  if (!sealer) {
    sealer = new KeySealer(keys.current, keys.older);
    sealers.set(memo, sealer);
  }
  return sealer;
}
