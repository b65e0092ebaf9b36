/**
 * Where claim-checked payloads live: content-addressed blobs (the key is the SHA-256 of the bytes),
 * as files under DATA_DIR/blobs (embedded) or rows of a PostgreSQL table (production). A blob's
 * `used` time is when it was last written or read; the sweep deletes blobs unused for longer than
 * the retention.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, readdir, rename, rm, stat, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Pool } from 'pg';
import { byBackend, type BackendConfig } from '../backend';
import { ensureTables, openPool } from '../pg-pool';
import { PRIVATE_DIR, PRIVATE_FILE } from '../small-files';

export interface BlobStore {
  /** Stores `data` under `key` (a hex SHA-256); storing the same key again only marks it used. */
  put(key: string, data: Uint8Array): Promise<void>;
  /** The blob, or null when there is none (swept, or never stored here). */
  get(key: string): Promise<Uint8Array | null>;
  /** Deletes blobs neither written nor read since `before`; returns how many. */
  sweep(before: Date): Promise<number>;
  end(): Promise<void>;
}

const KEY = /^[0-9a-f]{64}$/;
function checkKey(key: string): string {
  if (!KEY.test(key)) throw new Error(`not a blob key: ${key.slice(0, 80)}`);
  return key;
}

export class MemoryBlobStore implements BlobStore {
  readonly #blobs = new Map<string, { data: Uint8Array; used: number }>();
  async put(key: string, data: Uint8Array): Promise<void> {
    this.#blobs.set(checkKey(key), { data, used: Date.now() });
  }
  async get(key: string): Promise<Uint8Array | null> {
    const blob = this.#blobs.get(checkKey(key));
    if (blob) blob.used = Date.now();
    return blob?.data ?? null;
  }
  async sweep(before: Date): Promise<number> {
    let n = 0;
    for (const [key, blob] of this.#blobs) if (blob.used < before.getTime() && this.#blobs.delete(key)) n++;
    return n;
  }
  async end(): Promise<void> {}
}

/** One file per blob, `<dir>/<first two hex digits>/<key>`, written atomically (temp file + rename); the file's mtime is its `used`. */
export class FileBlobStore implements BlobStore {
  constructor(private readonly dir: string) {}
  #path(key: string): string {
    return path.join(this.dir, checkKey(key).slice(0, 2), key);
  }
  async put(key: string, data: Uint8Array): Promise<void> {
    const file = this.#path(key);
    const now = new Date();
    try {
      await utimes(file, now, now); // already here: same key, same bytes
      return;
    } catch {
      // not stored yet
    }
    await mkdir(path.dirname(file), PRIVATE_DIR);
    const temp = `${file}.${randomBytes(6).toString('hex')}.tmp`;
    await writeFile(temp, data, PRIVATE_FILE);
    await rename(temp, file);
  }
  async get(key: string): Promise<Uint8Array | null> {
    const file = this.#path(key);
    try {
      const data = await readFile(file);
      const now = new Date();
      await utimes(file, now, now).catch(() => undefined);
      return data;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw err;
    }
  }
  async sweep(before: Date): Promise<number> {
    let n = 0;
    let shards: string[];
    try {
      shards = await readdir(this.dir);
    } catch {
      return 0;
    }
    for (const shard of shards) {
      for (const name of await readdir(path.join(this.dir, shard)).catch(() => [] as string[])) {
        const file = path.join(this.dir, shard, name);
        const info = await stat(file).catch(() => null);
        if (info && info.mtime < before) {
          await rm(file, { force: true });
          n++;
        }
      }
    }
    return n;
  }
  async end(): Promise<void> {}
}

export class PostgresBlobStore implements BlobStore {
  readonly #pool: Pool;
  #ready: Promise<void> | undefined;
  constructor(connectionString: string) {
    // The codec has no close hook in every process that uses it: idle connections must not keep a process alive.
    this.#pool = openPool({ connectionString, max: 4, allowExitOnIdle: true });
  }
  #setup(): Promise<void> {
    this.#ready ??= ensureTables(this.#pool, ['CREATE TABLE IF NOT EXISTS threadline_blobs (key text PRIMARY KEY, data bytea NOT NULL, used timestamptz NOT NULL DEFAULT now())']);
    return this.#ready;
  }
  async put(key: string, data: Uint8Array): Promise<void> {
    await this.#setup();
    await this.#pool.query('INSERT INTO threadline_blobs (key, data) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET used = now()', [checkKey(key), Buffer.from(data)]);
  }
  async get(key: string): Promise<Uint8Array | null> {
    await this.#setup();
    const { rows } = await this.#pool.query<{ data: Buffer }>('UPDATE threadline_blobs SET used = now() WHERE key = $1 RETURNING data', [checkKey(key)]);
    return rows[0]?.data ?? null;
  }
  async sweep(before: Date): Promise<number> {
    await this.#setup();
    const { rowCount } = await this.#pool.query('DELETE FROM threadline_blobs WHERE used < $1', [before]);
    return rowCount ?? 0;
  }
  async end(): Promise<void> {
    await this.#pool.end();
  }
}

/** The blob store beside the configured memory store. */
export function createBlobStore(config: BackendConfig): BlobStore {
  return byBackend<BlobStore>(config, {
    memory: () => new MemoryBlobStore(),
    postgres: (url) => new PostgresBlobStore(url),
    file: (dataDir) => new FileBlobStore(path.join(dataDir, 'blobs')),
  });
}

const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * The worker's garbage collection of blobs: at start and then daily, blobs unused (neither written
 * nor read) for `retentionDays` are deleted. A run's blobs are read whenever it is replayed or
 * inspected, so only blobs of runs gone from Temporal (past the namespace's retention) age out —
 * keep `retentionDays` above that retention. Returns what stops the sweeps.
 */
export function startBlobSweeps(config: BackendConfig & { CLAIM_CHECK_RETENTION_DAYS: number }, log: (message: string) => void): () => Promise<void> {
  const blobs = createBlobStore(config);
  const sweep = () =>
    blobs
      .sweep(new Date(Date.now() - config.CLAIM_CHECK_RETENTION_DAYS * DAY_MS))
      .then((n) => n > 0 && log(`blob sweep: ${n} blobs unused for ${config.CLAIM_CHECK_RETENTION_DAYS} days deleted`))
      .catch((err: unknown) => log(`blob sweep failed: ${err instanceof Error ? err.message : String(err)}`));
  void sweep(); // fire-and-forget: a failed sweep is logged and retried tomorrow
  const timer = setInterval(() => void sweep(), DAY_MS);
  timer.unref();
  return async () => {
    clearInterval(timer);
    await blobs.end();
  };
}
