/**
 * Which storage backend a store of Threadline lives in: the one MEMORY_STORE names, for memory
 * threads, API keys and usage alike — so a deployment has one place for its data.
 */
export interface BackendConfig {
  /** @default 'file' */
  MEMORY_STORE?: 'memory' | 'file' | 'postgres';
  /** Required for 'postgres'. */
  DATABASE_URL?: string | undefined;
  dataDir: string;
  /** Seal the stores' content at rest with these keys (src/store/sealing/sealer.ts); unset: stored as it is. */
  THREADLINE_ENCRYPTION_KEY?: string | undefined;
  THREADLINE_ENCRYPTION_OLD_KEYS?: string | undefined;
}

export function byBackend<T>(config: BackendConfig, make: { memory: () => T; file: (dataDir: string) => T; postgres: (databaseUrl: string) => T }): T {
  switch (config.MEMORY_STORE ?? 'file') {
    case 'memory':
      return make.memory();
    case 'postgres':
      if (!config.DATABASE_URL) throw new Error('MEMORY_STORE=postgres needs DATABASE_URL (e.g. postgres://postgres@127.0.0.1:5432/threadline)');
      return make.postgres(config.DATABASE_URL);
    case 'file':
      return make.file(config.dataDir);
  }
}
