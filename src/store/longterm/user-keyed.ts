/**
 * A long-term store keyed by the user's key (src/text/user-key.ts): `Alice` and `alice` read and
 * write one memory on every backend — the file store's folder, PostgreSQL's rows, the in-memory map.
 * The records keep the id as it was spelt; only the store's key is folded. Memory stored under a
 * spelling before ids were keyed so (the folder `Alice`, rows of `Alice`) moves to the key the
 * first time this process meets that spelling, before its first read or write, when the key has
 * nothing yet: an upgrade loses no one's memory.
 */
import { userKey } from '../../text/user-key';
import type { LongTermReader, LongTermStore } from './store';

export function keyedByUser(store: LongTermStore): LongTermStore {
  const adopted = new Map<string, Promise<void>>();
  /** The user's key, once memory under this spelling (if any) has moved to it. */
  const keyed = (userId: string): { key: string; ready: Promise<void> } => {
    const key = userKey(userId);
    if (key === userId || !store.adoptUser) return { key, ready: Promise.resolve() };
    let ready = adopted.get(userId);
    if (!ready) {
      ready = store.adoptUser(userId, key);
      // A failed move is tried again by the next call.
      ready.catch(() => adopted.delete(userId));
      adopted.set(userId, ready);
    }
    return { key, ready };
  };
  const after = async <T>(userId: string, fn: (key: string) => Promise<T>): Promise<T> => {
    const { key, ready } = keyed(userId);
    await ready;
    return fn(key);
  };
  return {
    setup: () => store.setup(),
    end: () => store.end(),
    reader: (userId) => {
      const { key, ready } = keyed(userId);
      return afterReady(ready, store.reader(key));
    },
    write: (userId, fn) => after(userId, (key) => store.write(key, fn)),
    appendAudit: (userId, entries) => after(userId, (key) => store.appendAudit(key, entries)),
    auditLog: (userId, filter) => after(userId, (key) => store.auditLog(key, filter)),
  };
}

/** `reader` whose every read (all are async) waits for `ready` first. */
function afterReady(ready: Promise<void>, reader: LongTermReader): LongTermReader {
  return new Proxy(reader, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver);
      if (typeof value !== 'function') return value;
      return async (...args: unknown[]) => {
        await ready;
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}
