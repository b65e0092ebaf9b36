/**
 * A backend as the conformance specs of the small stores (keys, usage, blobs) see it: a fresh place
 * for data per test, any number of instances opened on it, and whether its data outlives an
 * instance. Each backend's initializer is one `Backend` value; the spec opens and closes the stores.
 */
import { after, before } from 'node:test';
import { scratchDirs } from '../helpers/scratch-dirs';
import { createDatabase, dropDatabases } from '../helpers/scratch-postgres';

export interface Backend<S> {
  /** Whether data outlives a store instance (file, PostgreSQL): the tests that need a second instance are registered only then. */
  persistent: boolean;
  /** A fresh place for data (a directory, or a database shared by tests with their own ids); each call of what it returns opens one more instance on it. */
  place: () => () => S;
}

export interface StoreTarget<S> {
  store: S;
  /** Another instance on the same data: a restarted process, or a second process beside this one. */
  reopen: () => Promise<S>;
}

type Store = { end(): Promise<void>; setup?: () => Promise<void> };

/** Runs `body` on a store of `backend` at a fresh place (set up when the store has a setup), and ends every instance opened. */
export async function withStore<S extends Store>(backend: Backend<S>, body: (target: StoreTarget<S>) => Promise<void>): Promise<void> {
  const open = backend.place();
  const opened: S[] = [];
  const instance = async () => {
    const store = open();
    opened.push(store);
    await store.setup?.();
    return store;
  };
  try {
    await body({ store: await instance(), reopen: instance });
  } finally {
    await Promise.all(opened.map((s) => s.end()));
  }
}

/**
 * Registers `spec` on the three backends of a store: in process, files in a fresh directory per
 * test, and PostgreSQL in a scratch database made for this file (dropped at its end).
 */
export function onEveryBackend<S>(spec: (name: string, backend: Backend<S>) => void, make: { memory: () => S; file: (dir: string) => S; postgres: (url: string) => S }): void {
  let databaseUrl = '';
  before(async () => {
    databaseUrl = await createDatabase();
  });
  after(dropDatabases);
  const dir = scratchDirs('threadline-store-');
  spec('memory', { persistent: false, place: () => make.memory });
  spec('file', {
    persistent: true,
    place: () => {
      const where = dir();
      return () => make.file(where);
    },
  });
  spec('postgres', { persistent: true, place: () => () => make.postgres(databaseUrl) });
}
