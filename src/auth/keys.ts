/**
 * API keys: `tl_<keyId>_<secret>`. Only a SHA-256 of the secret is stored; the id in the key finds
 * its record, and the hashes are compared in constant time. A key is shown once, when created.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import { ROLES, type Role } from './roles';

export const ApiKeyRecordSchema = z.object({
  keyId: z.string().regex(/^[0-9a-f]{16}$/),
  userId: z.string().min(1),
  role: z.enum(ROLES),
  /** SHA-256 of the secret, hex. */
  hash: z.string().regex(/^[0-9a-f]{64}$/),
  createdAt: z.string(),
  expiresAt: z.string().nullable(),
  revokedAt: z.string().nullable(),
});
export type ApiKeyRecord = z.infer<typeof ApiKeyRecordSchema>;

/** What listings show: never the hash. */
export type ApiKeyInfo = Omit<ApiKeyRecord, 'hash'>;
export const publicInfo = ({ hash: _hash, ...info }: ApiKeyRecord): ApiKeyInfo => info;

const KEY_PATTERN = /^tl_([0-9a-f]{16})_([A-Za-z0-9_-]{43})$/;
const sha256 = (text: string): Buffer => createHash('sha256').update(text).digest();

/** A new key and the record that stores it. */
export function generateKey(input: { userId: string; role?: Role; expiresAt?: string | null }, now: Date): { key: string; record: ApiKeyRecord } {
  const keyId = randomBytes(8).toString('hex');
  const secret = randomBytes(32).toString('base64url');
  return {
    key: `tl_${keyId}_${secret}`,
    record: {
      keyId,
      userId: input.userId,
      role: input.role ?? 'user',
      hash: sha256(secret).toString('hex'),
      createdAt: now.toISOString(),
      expiresAt: input.expiresAt ?? null,
      revokedAt: null,
    },
  };
}

/** The id and secret of a presented key, or null when it is not shaped like one. */
export function parseKey(key: string): { keyId: string; secret: string } | null {
  const m = KEY_PATTERN.exec(key);
  return m?.[1] && m[2] ? { keyId: m[1], secret: m[2] } : null;
}

/** Constant-time comparison of two strings through their hashes (equal lengths, whatever the inputs). */
export function sameSecret(presented: string, storedHashHex: string): boolean {
  return timingSafeEqual(sha256(presented), Buffer.from(storedHashHex, 'hex'));
}

/** Why a stored key may not be used now, or null when it may. */
export function unusable(record: ApiKeyRecord, now: Date): string | null {
  if (record.revokedAt) return 'the API key was revoked';
  if (record.expiresAt && Date.parse(record.expiresAt) <= now.getTime()) return 'the API key has expired';
  return null;
}

/** The bootstrap admin key (THREADLINE_ADMIN_KEY) compared in constant time. */
export function isAdminKey(presented: string, adminKey: string | undefined): boolean {
  return adminKey !== undefined && adminKey !== '' && sameSecret(presented, sha256(adminKey).toString('hex'));
}
