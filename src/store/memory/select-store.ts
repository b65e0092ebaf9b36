/**
 * Picks the memory storage backend from configuration. The caller runs
 * `await store.setup()` before use and `await store.end()` at shutdown.
 */
import path from 'node:path';
import type { MemoryStore } from '../memory-store';
import { FileMemoryStore } from './file-store';
import { InMemoryMemoryStore } from './in-memory-store';
import { PostgresMemoryStore } from './postgres-store';

export interface MemoryStoreConfig {
  /** @default 'file' */
  MEMORY_STORE?: 'memory' | 'file' | 'postgres';
  /** Required for 'postgres'. */
  DATABASE_URL?: string;
  /** The file store lives in `${dataDir}/memory`. */
  dataDir: string;
}

export function createMemoryStore(config: MemoryStoreConfig): MemoryStore {
  switch (config.MEMORY_STORE ?? 'file') {
    case 'memory':
      return new InMemoryMemoryStore();
    case 'postgres':
      if (!config.DATABASE_URL) throw new Error('MEMORY_STORE=postgres needs DATABASE_URL (e.g. postgres://postgres@127.0.0.1:5432/threadline)');
      return new PostgresMemoryStore(config.DATABASE_URL);
    case 'file':
      return new FileMemoryStore(path.join(config.dataDir, 'memory'));
  }
}
