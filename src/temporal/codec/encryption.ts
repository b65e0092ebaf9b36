/**
 * Payload encryption: with THREADLINE_ENCRYPTION_KEY set, every payload Temporal stores (workflow
 * and activity inputs and results, signals, updates, queries, memos, failure details) is sealed
 * with AES-256-GCM before it leaves the process. Each payload names the key that sealed it, so keys
 * can be rotated: the current key seals, older ones (THREADLINE_ENCRYPTION_OLD_KEYS) still open.
 *
 * A key's id is a name the operator gives it (`name:key`, else `default`), never derived from the
 * secret (src/store/sealing/keys.ts, which the stores' sealing shares). Payloads sealed with the
 * hash-prefix ids of the release before named keys still open (legacy).
 */
import { ValueError, type Payload, type PayloadCodec } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { IV_BYTES, openBytes, sealBytes, TAG_BYTES, type EncryptionKey } from '../../store/sealing/keys';

export { DEFAULT_KEY_NAME, parseKey, type EncryptionKey } from '../../store/sealing/keys';

export const ENCRYPTED_ENCODING = 'binary/encrypted';
const CIPHER = 'AES-256-GCM';
/** Marks a payload whose key id is a name; payloads without it carry a legacy id (a hash prefix of the key). */
const SCHEME = 'encryption-key-scheme';
const NAMED = 'named';
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Opens `data` (iv, ciphertext, tag) with `key`; null when it does not authenticate. */
function open(key: Buffer, data: Buffer): Payload | null {
  const plain = openBytes(key, data);
  return plain && temporal.api.common.v1.Payload.decode(plain);
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
      const sealed = sealBytes(key, temporal.api.common.v1.Payload.encode(payload).finish());
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
