/** File long-term stores a test file opens, each with its service, closed after the file's tests. */
import { after } from 'node:test';
import { LongTermService } from '../../src/longterm/service';
import { FileLongTermStore, type FileLongTermStoreOptions } from '../../src/store/longterm/file-store';

export interface OpenedFileStore {
  store: FileLongTermStore;
  svc: LongTermService;
}

/**
 * Registers an `after` hook that flushes each opened service's reads, then ends its store; returns the
 * opener. Call it before `scratchDirs`, so the stores close before their directories go.
 */
export function fileLongTermStores(): (where: string, options?: FileLongTermStoreOptions) => Promise<OpenedFileStore> {
  const opened: OpenedFileStore[] = [];
  after(async () => {
    for (const { store, svc } of opened) {
      await svc.flushReads();
      await store.end();
    }
  });
  return async (where, options = {}) => {
    const store = new FileLongTermStore(where, options);
    await store.setup();
    const svc = new LongTermService({ store });
    opened.push({ store, svc });
    return { store, svc };
  };
}
