/** The long-term conformance suite on the in-memory and the embedded file store. */
import { rm } from 'node:fs/promises';
import { FileLongTermStore } from '../../src/store/longterm/file-store';
import { InMemoryLongTermStore } from '../../src/store/longterm/in-memory-store';
import type { LongTermStore } from '../../src/store/longterm/store';
import { scratchDirs } from '../helpers/scratch-dirs';
import { longTermConformance } from './longterm.conformance';

const dir = scratchDirs('threadline-longterm-');

longTermConformance('memory', async () => ({ store: new InMemoryLongTermStore(), cleanup: async () => {} }));

longTermConformance('file', async () => {
  const where = dir();
  const opened: LongTermStore[] = [];
  const open = async () => {
    const store = new FileLongTermStore(where);
    await store.setup();
    opened.push(store);
    return store;
  };
  return {
    store: await open(),
    reopen: open,
    cleanup: async () => {
      await Promise.all(opened.map((s) => s.end()));
      await rm(where, { recursive: true, force: true });
    },
  };
});
