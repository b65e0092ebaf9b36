/** The usage store's conformance spec on every backend: in-process, files under DATA_DIR, and PostgreSQL. */
import { FileUsageStore, MemoryUsageStore, PostgresUsageStore } from '../../src/store/usage/usage-store';
import { onEveryBackend } from './store-target';
import { usageStoreConformance } from './usage-store.conformance';

onEveryBackend(usageStoreConformance, { memory: () => new MemoryUsageStore(), file: (dir) => new FileUsageStore(dir), postgres: (url) => new PostgresUsageStore(url) });
