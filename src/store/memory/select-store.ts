/**
 * Picks the memory storage backend from configuration. The caller runs
 * `await store.setup()` before use and `await store.end()` at shutdown.
 */
import path from 'node:path';
import { byBackend, type BackendConfig } from '../backend';
import type { MemoryStore } from '../memory-store';
import { FileMemoryStore } from './file-store';
import { InMemoryMemoryStore } from './in-memory-store';
import { PostgresMemoryStore } from './postgres-store';
import { sealerFor } from '../sealing/sealer';

export type MemoryStoreConfig = BackendConfig;

export function createMemoryStore(config: MemoryStoreConfig): MemoryStore {
  return byBackend<MemoryStore>(config, {
    memory: () => new InMemoryMemoryStore(),
    postgres: (url) => new PostgresMemoryStore(url, { sealer: sealerFor(config) }),
    file: (dataDir) => new FileMemoryStore(path.join(dataDir, 'memory'), { sealer: sealerFor(config) }),
  });
}
