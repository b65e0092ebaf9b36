/**
 * Payload encryption: with THREADLINE_ENCRYPTION_KEY set, every payload Temporal stores (workflow
 * and activity inputs and results, signals, updates, queries, memos, failure details) is sealed
 * with AES-256-GCM before it leaves the process. Each payload names the key that sealed it, so keys
 * can be rotated: the current key seals, older ones (THREADLINE_ENCRYPTION_OLD_KEYS) still open.
 */
import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from 'node:crypto';
import { ValueError, type Payload, type PayloadCodec } from '@temporalio/common';
import { temporal } from '@temporalio/proto';

export const ENCRYPTED_ENCODING = 'binary/encrypted';
const CIPHER = 'AES-256-GCM';
const IV_BYTES = 12;
const TAG_BYTES = 16;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

export interface EncryptionKey {
  id: string;
  key: Buffer;
}

/**
 * A key from its text: 64 hex digits or base64 of 32 bytes is used as is (`openssl rand -base64 32`);
 * anything else is a passphrase, stretched with HKDF-SHA256. Its id is a hash of the key, never the key.
 */
export function parseKey(text: string): EncryptionKey {
  const trimmed = text.trim();
  if (trimmed === '') throw new Error('an encryption key is empty');
  let key: Buffer;
  if (/^[0-9a-f]{64}$/i.test(trimmed)) key = Buffer.from(trimmed, 'hex');
  else if (/^[A-Za-z0-9+/]{43}=$/.test(trimmed)) key = Buffer.from(trimmed, 'base64');
  else key = Buffer.from(hkdfSync('sha256', trimmed, 'threadline', 'payload encryption', 32));
  return { id: createHash('sha256').update(key).digest('hex').slice(0, 12), key };
}

export class EncryptionCodec implements PayloadCodec {
  readonly #current: EncryptionKey;
  readonly #keys: Map<string, Buffer>;

  /** `current` seals; it and `older` open. */
  constructor(current: EncryptionKey, older: EncryptionKey[] = []) {
    this.#current = current;
    this.#keys = new Map([current, ...older].map((k) => [k.id, k.key]));
  }

  async encode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', this.#current.key, iv);
      const plain = temporal.api.common.v1.Payload.encode(payload).finish();
      const sealed = Buffer.concat([iv, cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
      return {
        metadata: {
          encoding: encoder.encode(ENCRYPTED_ENCODING),
          'encryption-cipher': encoder.encode(CIPHER),
          'encryption-key-id': encoder.encode(this.#current.id),
        },
        data: sealed,
      };
    });
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => {
      const encoding = payload.metadata?.encoding;
      if (!encoding || decoder.decode(encoding) !== ENCRYPTED_ENCODING) return payload; // written before encryption was on
      const keyId = decoder.decode(payload.metadata?.['encryption-key-id'] ?? new Uint8Array());
      const key = this.#keys.get(keyId);
      if (!key) throw new ValueError(`a payload is sealed with encryption key ${keyId || '(none)'}, which is not configured (THREADLINE_ENCRYPTION_KEY / THREADLINE_ENCRYPTION_OLD_KEYS)`);
      const data = Buffer.from(payload.data ?? new Uint8Array());
      if (data.length < IV_BYTES + TAG_BYTES) throw new ValueError('an encrypted payload is too short');
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, data.subarray(0, IV_BYTES));
        decipher.setAuthTag(data.subarray(data.length - TAG_BYTES));
        const plain = Buffer.concat([decipher.update(data.subarray(IV_BYTES, data.length - TAG_BYTES)), decipher.final()]);
        return temporal.api.common.v1.Payload.decode(plain);
      } catch (err) {
        // GCM checks integrity: a payload changed after sealing (or a wrong key under the same id) ends here.
        throw new ValueError(`an encrypted payload (key ${keyId}) could not be opened: ${err instanceof Error ? err.message : String(err)}`);
      }
    });
  }
}
