/**
 * Opens the configured long-term store (MEMORY_STORE, like the memory threads) and the
 * LongTermService over it, with the same observers as memory threads — the same way in the API
 * and the worker, so both see one long-term memory — with dense vectors when EMBEDDING_MODEL is set.
 */
import path from 'node:path';
import type { Config } from '../../config';
import { embedderFromConfig, type EmbeddingConfig } from '../../longterm/embedder';
import { LongTermService } from '../../longterm/service';
import { redactSecrets } from '../../memory/observers';
import { byBackend, type BackendConfig } from '../backend';
import { sealerFor } from '../sealing/sealer';
import { FileLongTermStore } from './file-store';
import { InMemoryLongTermStore } from './in-memory-store';
import { PostgresLongTermStore } from './postgres-store';
import type { LongTermStore } from './store';
import { keyedByUser } from './user-keyed';

export function createLongTermStore(config: BackendConfig & Partial<Pick<Config, 'LONGTERM_CACHED_USERS'>>): LongTermStore {
  // Every backend keys a user by one form: ids differing only in case are one user.
  return keyedByUser(
    byBackend<LongTermStore>(config, {
      memory: () => new InMemoryLongTermStore(),
      postgres: (url) => new PostgresLongTermStore(url, { sealer: sealerFor(config) }),
      file: (dataDir) =>
        new FileLongTermStore(path.join(dataDir, 'longterm'), { sealer: sealerFor(config), ...(config.LONGTERM_CACHED_USERS !== undefined ? { maxUsers: config.LONGTERM_CACHED_USERS } : {}) }),
    }),
  );
}

export interface OpenLongTerm {
  longterm: LongTermService;
  store: LongTermStore;
  close(): Promise<void>;
}

export interface OpenLongTermOptions {
  /** Where failed embeddings are reported (the process log). @default console.warn */
  warn?: (message: string, details: Record<string, unknown>) => void;
}

export async function openLongTerm(config: Parameters<typeof createLongTermStore>[0] & Partial<EmbeddingConfig>, options: OpenLongTermOptions = {}): Promise<OpenLongTerm> {
  const store = createLongTermStore(config);
  await store.setup();
  const embedder = embedderFromConfig(config);
  // Secrets never enter long-term memory, whoever writes it.
  const longterm = new LongTermService({ store, observers: [redactSecrets], ...(embedder ? { embedder } : {}), ...(options.warn ? { warn: options.warn } : {}) });
  return {
    longterm,
    store,
    close: async () => {
      await longterm.flushReads(); // the reads recorded last, before the store goes
      await store.end();
    },
  };
}
