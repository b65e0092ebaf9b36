/** The blob store's conformance spec on every backend: in-process, files under DATA_DIR/blobs, and PostgreSQL. */
import { FileBlobStore, MemoryBlobStore, PostgresBlobStore } from '../../src/store/blobs/blob-store';
import { blobStoreConformance } from './blob-store.conformance';
import { onEveryBackend } from './store-target';

onEveryBackend(blobStoreConformance, { memory: () => new MemoryBlobStore(), file: (dir) => new FileBlobStore(dir), postgres: (url) => new PostgresBlobStore(url) });
