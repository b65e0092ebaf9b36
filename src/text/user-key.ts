/**
 * The one form under which every store keys a user (issue 32): `Alice` and `alice` are one user —
 * the same long-term memory, notes, usage and budget, API keys and limits — on every backend, where
 * PostgreSQL and Temporal compared ids byte for byte and a file store on a case-insensitive disk
 * folded them. Requests and responses keep the id as it was spelt; only the stores' keys use this.
 */

/** The user's key in every store: Unicode NFC, then lower case. */
export function userKey(userId: string): string {
  return userId.normalize('NFC').toLowerCase();
}

/** Whether two spellings name one user. */
export const sameUser = (a: string, b: string): boolean => userKey(a) === userKey(b);
