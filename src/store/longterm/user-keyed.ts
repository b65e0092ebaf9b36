/**
 * A long-term store keyed by the user's key (src/text/user-key.ts): `Alice` and `alice` read and
 * write one memory on every backend — the file store's folder, PostgreSQL's rows, the in-memory map.
 * The records keep the id as it was spelt; only the store's key is folded.
 */
import { userKey } from '../../text/user-key';
import type { LongTermStore } from './store';

export function keyedByUser(store: LongTermStore): LongTermStore {
  return {
    setup: () => store.setup(),
    end: () => store.end(),
    reader: (userId) => store.reader(userKey(userId)),
    write: (userId, fn) => store.write(userKey(userId), fn),
    appendAudit: (userId, entries) => store.appendAudit(userKey(userId), entries),
    auditLog: (userId, filter) => store.auditLog(userKey(userId), filter),
  };
}
