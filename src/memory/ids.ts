/**
 * Id sources for the memory model: `randomIds()` for activities and the API,
 * `seededIds(seed)` for tests and anything that must replay identically.
 *
 * Ids are a kind prefix (`ID_PREFIX`) plus lowercase base36 characters: 16 for
 * threads, states, chunks, operations and reads (~83 bits), 10 for conversation
 * message ids (~52 bits) — seed 004's short nanoid, short enough for a model to
 * quote back to `retrieve_message`, long enough not to collide in practice.
 *
 * Pure module: randomness comes from the Web Crypto global (`globalThis.crypto`),
 * not from a Node built-in import.
 */
import { ID_PREFIX, type IdKind, type IdSource } from './model';

const ALPHABET = '0123456789abcdefghijklmnopqrstuvwxyz';
/** Largest multiple of 36 that fits in a byte; bytes at or above it are rejected so every character is equally likely. */
const UNBIASED_LIMIT = 252;

/** Random characters after the prefix, by kind. */
export const ID_LENGTH: Readonly<Record<IdKind, number>> = { thread: 16, state: 16, chunk: 16, operation: 16, message: 10, read: 16 };

/** Builds an IdSource from a generator of bytes in 0..255. */
function fromBytes(nextByte: () => number): IdSource {
  return (kind) => {
    let out: string = ID_PREFIX[kind];
    for (let n = ID_LENGTH[kind]; n > 0;) {
      const b = nextByte();
      if (b < UNBIASED_LIMIT) {
        out += ALPHABET[b % 36];
        n--;
      }
    }
    return out;
  };
}

/** Ids from the platform's cryptographic random source. */
export function randomIds(): IdSource {
  // Refilled every ~250 ids: a refill crosses into the platform, which at 64 bytes was every ~4 ids
  // (0.65–0.80 µs an id against 0.17–0.34).
  const buffer = new Uint8Array(4096);
  let used = buffer.length;
  return fromBytes(() => {
    if (used === buffer.length) {
      globalThis.crypto.getRandomValues(buffer);
      used = 0;
    }
    return buffer[used++] as number;
  });
}

/**
 * A deterministic id source: the same seed yields the same sequence of ids.
 * Not for production ids (predictable); for tests and replayable code.
 */
export function seededIds(seed: string | number): IdSource {
  const next = sfc32(...hashSeed(String(seed)));
  return fromBytes(() => next() & 0xff);
}

/** cyrb128: spreads a string over four 32-bit seeds for sfc32. */
function hashSeed(s: string): [number, number, number, number] {
  let h1 = 1779033703;
  let h2 = 3144134277;
  let h3 = 1013904242;
  let h4 = 2773480762;
  for (let i = 0; i < s.length; i++) {
    const k = s.charCodeAt(i);
    h1 = h2 ^ Math.imul(h1 ^ k, 597399067);
    h2 = h3 ^ Math.imul(h2 ^ k, 2869860233);
    h3 = h4 ^ Math.imul(h3 ^ k, 951274213);
    h4 = h1 ^ Math.imul(h4 ^ k, 2716044179);
  }
  h1 = Math.imul(h3 ^ (h1 >>> 18), 597399067);
  h2 = Math.imul(h4 ^ (h2 >>> 22), 2869860233);
  h3 = Math.imul(h1 ^ (h3 >>> 17), 951274213);
  h4 = Math.imul(h2 ^ (h4 >>> 19), 2716044179);
  h1 ^= h2 ^ h3 ^ h4;
  h2 ^= h1;
  h3 ^= h1;
  h4 ^= h1;
  return [h1 >>> 0, h2 >>> 0, h3 >>> 0, h4 >>> 0];
}

/** sfc32: a small, fast, well-tested 32-bit PRNG. */
function sfc32(a: number, b: number, c: number, d: number): () => number {
  return () => {
    a |= 0;
    b |= 0;
    c |= 0;
    d |= 0;
    const t = (((a + b) | 0) + d) | 0;
    d = (d + 1) | 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) | 0;
    c = (c << 21) | (c >>> 11);
    c = (c + t) | 0;
    return t >>> 0;
  };
}
