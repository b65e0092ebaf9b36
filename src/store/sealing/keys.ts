/**
 * Threadline's encryption keys and its one AES-256-GCM seal: what the Temporal payload codec
 * (src/temporal/codec/encryption.ts) and the stores' sealing (./sealer.ts) both use, so payloads
 * and stored records are sealed by the same keys, the same way, and rotate together
 * (THREADLINE_ENCRYPTION_KEY seals, THREADLINE_ENCRYPTION_OLD_KEYS still open).
 *
 * A key's id is a name the operator gives it (`name:key`, else `default`), never derived from the
 * secret: an id that was a hash of the key (as before named keys) let anyone holding history test
 * passphrase guesses offline at the speed of SHA-256. Payloads sealed that way still open (legacy).
 */
import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomFillSync, scrypt } from 'node:crypto';

export const IV_BYTES = 12;
export const TAG_BYTES = 16;
/** The id of a key given without a name. */
export const DEFAULT_KEY_NAME = 'default';
const KEY_NAME = /^([A-Za-z0-9][A-Za-z0-9._-]{0,31}):(.*)$/s;
/**
 * scrypt for passphrases: 64 MiB and ~0.2 s on a small server, once per key and process, in the
 * thread pool (never on the event loop, never per payload). Each guess costs an attacker the same.
 */
const SCRYPT = { N: 2 ** 16, r: 8, p: 1, maxmem: 128 * 1024 * 1024 } as const;

export interface EncryptionKey {
  /** What payloads it seals are labelled with: the operator's name for the key, else `default`. */
  id: string;
  /** The AES key: the 32 bytes given, or the passphrase stretched with scrypt. */
  key: Promise<Buffer>;
  /** The id and key the release before named keys used for the same text: they open what it sealed, never seal. */
  legacy: { id: string; key: Buffer }[];
}

/** 64 hex digits or base64 of 32 bytes (`openssl rand -base64 32`), else null (a passphrase). */
function rawKey(secret: string): Buffer | null {
  if (/^[0-9a-f]{64}$/i.test(secret)) return Buffer.from(secret, 'hex');
  if (/^[A-Za-z0-9+/]{43}=$/.test(secret)) return Buffer.from(secret, 'base64');
  return null;
}

/** The derivation and id of the release before named keys (HKDF only; id a hash prefix of the key). */
function legacyKey(text: string): { id: string; key: Buffer } {
  const key = rawKey(text) ?? Buffer.from(hkdfSync('sha256', text, 'threadline', 'payload encryption', 32));
  return { id: createHash('sha256').update(key).digest('hex').slice(0, 12), key };
}

const stretched = new Map<string, Promise<Buffer>>();
/** The passphrase stretched with scrypt, salted with the key's (public) name: once per process. */
function stretch(passphrase: string, name: string): Promise<Buffer> {
  const memo = `${name}\n${passphrase}`;
  let key = stretched.get(memo);
  if (!key) {
    key = new Promise<Buffer>((resolve, reject) => {
      scrypt(passphrase, `threadline payload encryption/${name}`, 32, SCRYPT, (err, derived) => (err ? reject(err) : resolve(derived)));
    });
    stretched.set(memo, key);
  }
  return key;
}

/**
 * A key from its text, `[name:]secret`: the secret is 32 bytes as 64 hex digits or base64, used as
 * is, or a passphrase, stretched with scrypt. The name (letters, digits, `.`, `_`, `-`; up to 32)
 * is the key's id in every payload it seals; without one the id is `default`.
 */
export function parseKey(text: string): EncryptionKey {
  const trimmed = text.trim();
  const named = KEY_NAME.exec(trimmed);
  const id = named?.[1] ?? DEFAULT_KEY_NAME;
  const secret = (named?.[2] ?? trimmed).trim();
  if (secret === '') throw new Error('an encryption key is empty');
  const raw = rawKey(secret);
  // The release before named keys took the whole text as the key: a text with a name-like prefix was all secret then.
  const legacy = named ? [legacyKey(trimmed), legacyKey(secret)] : [legacyKey(secret)];
  return { id, key: raw ? Promise.resolve(raw) : stretch(secret, id), legacy };
}

/** The configured keys: THREADLINE_ENCRYPTION_KEY (seals) and THREADLINE_ENCRYPTION_OLD_KEYS (comma-separated, open only); null when encryption is off. */
export function configuredKeys(config: {
  THREADLINE_ENCRYPTION_KEY?: string | undefined;
  THREADLINE_ENCRYPTION_OLD_KEYS?: string | undefined;
}): { current: EncryptionKey; older: EncryptionKey[] } | null {
  if (!config.THREADLINE_ENCRYPTION_KEY) return null;
  const older = (config.THREADLINE_ENCRYPTION_OLD_KEYS ?? '').split(',').filter((k) => k.trim() !== '');
  return { current: parseKey(config.THREADLINE_ENCRYPTION_KEY), older: older.map(parseKey) };
}

/**
 * Nonces come from one buffer of random bytes, refilled when used up: one call to the system's
 * generator per 4,096 seals instead of one per seal (a twelfth of a sealed import's CPU time).
 */
const nonces = Buffer.alloc(IV_BYTES * 4096);
let nextNonce = nonces.length;

/** Seals `plain` with `key`: iv, ciphertext, tag. */
export function sealBytes(key: Buffer, plain: Uint8Array): Buffer {
  if (nextNonce === nonces.length) {
    randomFillSync(nonces);
    nextNonce = 0;
  }
  // Copied by createCipheriv and concat before the buffer is refilled (all synchronous).
  const iv = nonces.subarray(nextNonce, (nextNonce += IV_BYTES));
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  return Buffer.concat([iv, cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
}

/** Opens what `sealBytes` sealed with `key`; null when it does not authenticate (another key, or changed). */
export function openBytes(key: Buffer, data: Uint8Array): Buffer | null {
  if (data.length < IV_BYTES + TAG_BYTES) return null;
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, data.subarray(0, IV_BYTES));
    decipher.setAuthTag(data.subarray(data.length - TAG_BYTES));
    return Buffer.concat([decipher.update(data.subarray(IV_BYTES, data.length - TAG_BYTES)), decipher.final()]);
  } catch {
    return null;
  }
}
