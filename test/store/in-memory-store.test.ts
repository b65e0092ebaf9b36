/** The conformance suite against the in-memory store (data lives only as long as the instance). */
import { InMemoryMemoryStore } from '../../src/store/memory/in-memory-store';
import { memoryStoreConformance } from './memory-store.conformance';

memoryStoreConformance(
  'in-memory',
  async () => {
    const store = new InMemoryMemoryStore();
    await store.setup();
    return { store, storedBytes: () => store.storedBytes(), cleanup: () => store.end() };
  },
  { persistent: false },
);
