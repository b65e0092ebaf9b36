/**
 * Where API keys are kept: beside the memory (MEMORY_STORE) — one JSON file per key under
 * DATA_DIR/auth/keys, a PostgreSQL table, or process memory for tests. No caching: a revoked key
 * fails on the very next request.
 */
import { mkdir, readdir, readFile, rename, writeFile } from 'node:fs/promises';
import { PRIVATE_DIR, PRIVATE_FILE } from '../small-files';
import path from 'node:path';
import type { Pool } from 'pg';
import { byBackend, type BackendConfig } from '../backend';
import { ensureTables, openPool } from '../pg-pool';
import { ApiKeyRecordSchema, type ApiKeyRecord } from '../../auth/keys';
import { sameUser, userKey } from '../../text/user-key';

export interface ApiKeyStore {
  setup(): Promise<void>;
  create(record: ApiKeyRecord): Promise<void>;
  get(keyId: string): Promise<ApiKeyRecord | undefined>;
  /** Newest first; one user's keys, or every key. */
  list(userId?: string): Promise<ApiKeyRecord[]>;
  /** Marks the key revoked; false when there is no such key. */
  revoke(keyId: string, at: Date): Promise<boolean>;
  end(): Promise<void>;
}

const newestFirst = (a: ApiKeyRecord, b: ApiKeyRecord) => b.createdAt.localeCompare(a.createdAt) || a.keyId.localeCompare(b.keyId);

export class MemoryApiKeyStore implements ApiKeyStore {
  readonly #keys = new Map<string, ApiKeyRecord>();
  async setup(): Promise<void> {}
  async create(record: ApiKeyRecord): Promise<void> {
    this.#keys.set(record.keyId, { ...record });
  }
  async get(keyId: string): Promise<ApiKeyRecord | undefined> {
    const r = this.#keys.get(keyId);
    return r ? { ...r } : undefined;
  }
  async list(userId?: string): Promise<ApiKeyRecord[]> {
    return [...this.#keys.values()]
      .filter((r) => userId === undefined || sameUser(r.userId, userId))
      .map((r) => ({ ...r }))
      .sort(newestFirst);
  }
  async revoke(keyId: string, at: Date): Promise<boolean> {
    const r = this.#keys.get(keyId);
    if (!r) return false;
    this.#keys.set(keyId, { ...r, revokedAt: r.revokedAt ?? at.toISOString() });
    return true;
  }
  async end(): Promise<void> {}
}

const KEY_ID = /^[0-9a-f]{16}$/;

export class FileApiKeyStore implements ApiKeyStore {
  constructor(private readonly dir: string) {}
  async setup(): Promise<void> {
    await mkdir(this.dir, PRIVATE_DIR);
  }
  #file(keyId: string): string {
    if (!KEY_ID.test(keyId)) throw new Error(`not a key id: ${keyId}`);
    return path.join(this.dir, `${keyId}.json`);
  }
  /** Whole-file replace (write, then rename), so a reader never sees half a record. */
  async #write(record: ApiKeyRecord): Promise<void> {
    const file = this.#file(record.keyId);
    await writeFile(`${file}.tmp`, JSON.stringify(record), PRIVATE_FILE);
    await rename(`${file}.tmp`, file);
  }
  async create(record: ApiKeyRecord): Promise<void> {
    await this.#write(record);
  }
  async get(keyId: string): Promise<ApiKeyRecord | undefined> {
    if (!KEY_ID.test(keyId)) return undefined;
    try {
      return ApiKeyRecordSchema.parse(JSON.parse(await readFile(this.#file(keyId), 'utf8')));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
  }
  async list(userId?: string): Promise<ApiKeyRecord[]> {
    const names = (await readdir(this.dir)).filter((n) => n.endsWith('.json'));
    const records = await Promise.all(names.map((n) => this.get(n.slice(0, -'.json'.length))));
    return records.filter((r): r is ApiKeyRecord => r !== undefined && (userId === undefined || sameUser(r.userId, userId))).sort(newestFirst);
  }
  async revoke(keyId: string, at: Date): Promise<boolean> {
    const r = await this.get(keyId);
    if (!r) return false;
    if (!r.revokedAt) await this.#write({ ...r, revokedAt: at.toISOString() });
    return true;
  }
  async end(): Promise<void> {}
}

interface KeyRow {
  key_id: string;
  user_id: string;
  role: string;
  hash: string;
  created_at: Date;
  expires_at: Date | null;
  revoked_at: Date | null;
}

const fromRow = (r: KeyRow): ApiKeyRecord =>
  ApiKeyRecordSchema.parse({
    keyId: r.key_id,
    userId: r.user_id,
    role: r.role,
    hash: r.hash,
    createdAt: r.created_at.toISOString(),
    expiresAt: r.expires_at?.toISOString() ?? null,
    revokedAt: r.revoked_at?.toISOString() ?? null,
  });

export class PostgresApiKeyStore implements ApiKeyStore {
  readonly #pool: Pool;
  constructor(connectionString: string) {
    this.#pool = openPool({ connectionString, max: 4 });
  }
  async setup(): Promise<void> {
    await ensureTables(this.#pool, [
      `CREATE TABLE IF NOT EXISTS threadline_api_keys (
      key_id text PRIMARY KEY,
      user_id text NOT NULL,
      role text NOT NULL,
      hash text NOT NULL,
      created_at timestamptz NOT NULL,
      expires_at timestamptz,
      revoked_at timestamptz
    )`,
      'CREATE INDEX IF NOT EXISTS threadline_api_keys_user ON threadline_api_keys (user_id)',
    ]);
  }
  async create(r: ApiKeyRecord): Promise<void> {
    await this.#pool.query('INSERT INTO threadline_api_keys (key_id, user_id, role, hash, created_at, expires_at, revoked_at) VALUES ($1, $2, $3, $4, $5, $6, $7)', [
      r.keyId,
      r.userId,
      r.role,
      r.hash,
      r.createdAt,
      r.expiresAt,
      r.revokedAt,
    ]);
  }
  async get(keyId: string): Promise<ApiKeyRecord | undefined> {
    const { rows } = await this.#pool.query<KeyRow>('SELECT * FROM threadline_api_keys WHERE key_id = $1', [keyId]);
    return rows[0] ? fromRow(rows[0]) : undefined;
  }
  async list(userId?: string): Promise<ApiKeyRecord[]> {
    const { rows } = await this.#pool.query<KeyRow>('SELECT * FROM threadline_api_keys WHERE $1::text IS NULL OR lower(user_id) = $1', [userId === undefined ? null : userKey(userId)]);
    return rows.map(fromRow).sort(newestFirst);
  }
  async revoke(keyId: string, at: Date): Promise<boolean> {
    const { rowCount } = await this.#pool.query('UPDATE threadline_api_keys SET revoked_at = COALESCE(revoked_at, $2) WHERE key_id = $1', [keyId, at.toISOString()]);
    return (rowCount ?? 0) > 0;
  }
  async end(): Promise<void> {
    await this.#pool.end();
  }
}

/** The key store beside the configured memory store. */
export function createKeyStore(config: BackendConfig): ApiKeyStore {
  return byBackend<ApiKeyStore>(config, {
    memory: () => new MemoryApiKeyStore(),
    postgres: (url) => new PostgresApiKeyStore(url),
    file: (dataDir) => new FileApiKeyStore(path.join(dataDir, 'auth', 'keys')),
  });
}
