/**
 * Opens the configured long-term store (MEMORY_STORE, like the memory threads) and the
 * LongTermService over it, with the same observers as memory threads — the same way in the API
 * and the worker, so both see one long-term memory.
 */
import path from 'node:path';
import { LongTermService } from '../../longterm/service';
import { redactSecrets } from '../../memory/observers';
import { byBackend, type BackendConfig } from '../backend';
import { FileLongTermStore } from './file-store';
import { InMemoryLongTermStore } from './in-memory-store';
import { PostgresLongTermStore } from './postgres-store';
import type { LongTermStore } from './store';

export function createLongTermStore(config: BackendConfig): LongTermStore {
  return byBackend<LongTermStore>(config, {
    memory: () => new InMemoryLongTermStore(),
    postgres: (url) => new PostgresLongTermStore(url),
    file: (dataDir) => new FileLongTermStore(path.join(dataDir, 'longterm')),
  });
}

export interface OpenLongTerm {
  longterm: LongTermService;
  store: LongTermStore;
  close(): Promise<void>;
}

export async function openLongTerm(config: BackendConfig): Promise<OpenLongTerm> {
  const store = createLongTermStore(config);
  await store.setup();
  // Secrets never enter long-term memory, whoever writes it.
  const longterm = new LongTermService({ store, observers: [redactSecrets] });
  return { longterm, store, close: () => store.end() };
}
