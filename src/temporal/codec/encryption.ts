/**
 * Payload encryption: with THREADLINE_ENCRYPTION_KEY set, every payload Temporal stores (workflow
 * and activity inputs and results, signals, updates, queries, memos, failure details) is sealed
 * with AES-256-GCM before it leaves the process. Each payload names the key that sealed it, so keys
 * can be rotated: the current key seals, older ones (THREADLINE_ENCRYPTION_OLD_KEYS) still open.
 *
 * A key's id is a name the operator gives it (`name:key`, else `default`), never derived from the
 * secret: an id that was a hash of the key (as before named keys) let anyone holding history test
 * passphrase guesses offline at the speed of SHA-256. Payloads sealed that way still open (legacy).
 */
import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes, scrypt } from 'node:crypto';
import { ValueError, type Payload, type PayloadCodec } from '@temporalio/common';
import { temporal } from '@temporalio/proto';

export const ENCRYPTED_ENCODING = 'binary/encrypted';
const CIPHER = 'AES-256-GCM';
const IV_BYTES = 12;
const TAG_BYTES = 16;
/** Marks a payload whose key id is a name; payloads without it carry a legacy id (a hash prefix of the key). */
const SCHEME = 'encryption-key-scheme';
const NAMED = 'named';
/** The id of a key given without a name. */
export const DEFAULT_KEY_NAME = 'default';
const KEY_NAME = /^([A-Za-z0-9][A-Za-z0-9._-]{0,31}):(.*)$/s;
/**
 * scrypt for passphrases: 64 MiB and ~0.2 s on a small server, once per key and process, in the
 * thread pool (never on the event loop, never per payload). Each guess costs an attacker the same.
 */
const SCRYPT = { N: 2 ** 16, r: 8, p: 1, maxmem: 128 * 1024 * 1024 } as const;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

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

/** Opens `data` (iv, ciphertext, tag) with `key`; null when it does not authenticate. */
function open(key: Buffer, data: Buffer): Payload | null {
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, data.subarray(0, IV_BYTES));
    decipher.setAuthTag(data.subarray(data.length - TAG_BYTES));
    const plain = Buffer.concat([decipher.update(data.subarray(IV_BYTES, data.length - TAG_BYTES)), decipher.final()]);
    return temporal.api.common.v1.Payload.decode(plain);
  } catch {
    return null;
  }
}

export class EncryptionCodec implements PayloadCodec {
  readonly #current: EncryptionKey;
  /** Keys by name; keys given without a name share `default`, and are tried in turn (GCM tells the right one). */
  readonly #named = new Map<string, Promise<Buffer>[]>();
  readonly #legacy = new Map<string, Buffer>();

  /** `current` seals; it and `older` open. */
  constructor(current: EncryptionKey, older: EncryptionKey[] = []) {
    this.#current = current;
    for (const k of [current, ...older]) {
      this.#named.set(k.id, [...(this.#named.get(k.id) ?? []), k.key]);
      for (const l of k.legacy) this.#legacy.set(l.id, l.key);
    }
  }

  async encode(payloads: Payload[]): Promise<Payload[]> {
    const key = await this.#current.key;
    return payloads.map((payload) => {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      const plain = temporal.api.common.v1.Payload.encode(payload).finish();
      const sealed = Buffer.concat([iv, cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
      return {
        metadata: {
          encoding: encoder.encode(ENCRYPTED_ENCODING),
          'encryption-cipher': encoder.encode(CIPHER),
          'encryption-key-id': encoder.encode(this.#current.id),
          [SCHEME]: encoder.encode(NAMED),
        },
        data: sealed,
      };
    });
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    return Promise.all(
      payloads.map(async (payload) => {
        const text = (key: string) => decoder.decode(payload.metadata?.[key] ?? new Uint8Array());
        if (text('encoding') !== ENCRYPTED_ENCODING) return payload; // written before encryption was on
        const keyId = text('encryption-key-id');
        const legacy = this.#legacy.get(keyId);
        const keys = text(SCHEME) === NAMED ? await Promise.all(this.#named.get(keyId) ?? []) : legacy ? [legacy] : [];
        if (keys.length === 0)
          throw new ValueError(`a payload is sealed with encryption key ${keyId || '(none)'}, which is not configured (THREADLINE_ENCRYPTION_KEY / THREADLINE_ENCRYPTION_OLD_KEYS)`);
        const data = Buffer.from(payload.data ?? new Uint8Array());
        if (data.length < IV_BYTES + TAG_BYTES) throw new ValueError('an encrypted payload is too short');
        for (const key of keys) {
          const opened = open(key, data);
          if (opened) return opened;
        }
        // GCM checks integrity: a payload changed after sealing (or a wrong key under the same id) ends here.
        throw new ValueError(`an encrypted payload (key ${keyId}) could not be opened: changed after sealing, or sealed with another key of that name`);
      }),
    );
  }
}
