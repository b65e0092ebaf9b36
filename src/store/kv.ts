/**
 * A small durable key-value store for tool data (notes) and tool-run results.
 * The file backend keeps one JSON file per key under DATA_DIR and writes by
 * rename, so a crash never leaves a half-written value and concurrent writers
 * of one key never interleave (synchronous calls: see small-files.ts). With a sealer (encryption
 * on) each file holds its key and value sealed; files from before read as they are.
 */
import { createHash } from 'node:crypto';
import path from 'node:path';
import { PLAIN, type Sealer } from './sealing/sealer';
import { readJsonIfExists, writeByRename } from './small-files';

export interface KeyValueStore {
  get<T = unknown>(namespace: string, key: string): Promise<T | undefined>;
  put(namespace: string, key: string, value: unknown): Promise<void>;
}

export class MemoryKeyValueStore implements KeyValueStore {
  private readonly data = new Map<string, string>();
  async get<T>(namespace: string, key: string): Promise<T | undefined> {
    const raw = this.data.get(`${namespace}\u0000${key}`);
    return raw === undefined ? undefined : (JSON.parse(raw) as T);
  }
  async put(namespace: string, key: string, value: unknown): Promise<void> {
    this.data.set(`${namespace}\u0000${key}`, JSON.stringify(value));
  }
}

/** File names are hashes: any key (slashes, unicode) is safe, and namespaces stay readable. */
const fileName = (key: string) => `${createHash('sha256').update(key).digest('hex').slice(0, 40)}.json`;
// Dots are escaped too, so no namespace can name a parent directory.
const dirName = (namespace: string) => namespace.replace(/[^A-Za-z0-9_-]/g, (c) => `%${c.charCodeAt(0).toString(16)}`);

export class FileKeyValueStore implements KeyValueStore {
  /** Namespace directories made by this store (one mkdir each, not one per write). */
  private readonly dirs = new Set<string>();
  constructor(
    private readonly root: string,
    private readonly sealer: Sealer = PLAIN,
  ) {}

  private file(namespace: string, key: string): string {
    return path.join(this.root, dirName(namespace), fileName(key));
  }

  async get<T>(namespace: string, key: string): Promise<T | undefined> {
    await this.sealer.ready();
    const stored = readJsonIfExists(this.file(namespace, key));
    return stored === undefined ? undefined : this.sealer.open<{ key: string; value: T }>(stored).value;
  }

  async put(namespace: string, key: string, value: unknown): Promise<void> {
    await this.sealer.ready();
    writeByRename(this.file(namespace, key), JSON.stringify(this.sealer.seal({ key, value })), this.dirs);
  }
}
