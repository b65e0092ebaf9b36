/**
 * The store of large tool results a worker uses (src/tools/large-results.ts): the blob store beside
 * the memory store, its contents sealed with the payload codecs' encryption key when one is set.
 */
import type { Config } from '../config';
import { createBlobStore } from '../store/blobs/blob-store';
import { ToolResultStore } from '../tools/large-results';
import { payloadCodecs } from './data-converter';

/** The store `config` asks for: the blob store beside the memory store, sealing with the payload encryption key when set. */
export function toolResultStoreFor(config: Config): ToolResultStore {
  return new ToolResultStore(createBlobStore(config), payloadCodecs({ ...config, CLAIM_CHECK_THRESHOLD: 0 }));
}

/** The whole result a bounded record names (for tests and tools; opens and closes its own store). */
export async function readToolResult(config: Config, ref: string): Promise<string | null> {
  const store = toolResultStoreFor(config);
  try {
    return await store.get(ref);
  } finally {
    await store.end();
  }
}
