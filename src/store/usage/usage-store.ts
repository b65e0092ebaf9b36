/**
 * Where usage records live, beside the memory (MEMORY_STORE): one JSON line per record in a file
 * per user under DATA_DIR/usage, a PostgreSQL table, or process memory for tests.
 */
import { appendFileSync, statSync } from 'node:fs';
import { mkdir, readFile, stat } from 'node:fs/promises';
import { LRUCache } from 'lru-cache';
import { JsonlTail } from '../memory/file-store';
import { PRIVATE_DIR, PRIVATE_FILE } from '../small-files';
import path from 'node:path';
import type { Pool } from 'pg';
import { z } from 'zod';
import { byBackend, type BackendConfig } from '../backend';
import { ensureTables, openPool } from '../pg-pool';
import { addUsage, noUsage, tokensOf, type Usage } from '../../usage/usage';
import { sameUser, userKey } from '../../text/user-key';

export const UsageRecordSchema = z.object({
  userId: z.string(),
  runId: z.string().nullable(),
  sessionId: z.string().nullable(),
  /** The activity and attempt the calls were made in. */
  source: z.string(),
  model: z.string(),
  at: z.string(),
  promptTokens: z.number().int().min(0),
  completionTokens: z.number().int().min(0),
  cachedTokens: z.number().int().min(0),
  calls: z.number().int().min(0),
});
export type UsageRecord = z.infer<typeof UsageRecordSchema>;

export interface UsageSummary {
  userId: string;
  since: string | null;
  total: Usage;
  runs: (Usage & { runId: string; sessionId: string | null })[];
  sessions: (Usage & { sessionId: string })[];
}

export interface UsageStore {
  setup(): Promise<void>;
  record(record: UsageRecord): Promise<void>;
  /** One user's records at or after `since`, oldest first. */
  records(userId: string, since?: Date): Promise<UsageRecord[]>;
  /**
   * Prompt and completion tokens of one user's records at or after `since` (the budget's check, made
   * at each model call): without reading the user's whole history each time.
   */
  tokensSince(userId: string, since: Date): Promise<number>;
  end(): Promise<void>;
}

const usageOf = (r: Usage): Usage => ({ promptTokens: r.promptTokens, completionTokens: r.completionTokens, cachedTokens: r.cachedTokens, calls: r.calls });

function bucket<V>(map: Map<string, V>, key: string, make: () => V): V {
  let value = map.get(key);
  if (value === undefined) map.set(key, (value = make()));
  return value;
}

/** Totals per user, run and session (pure). */
export function summarize(userId: string, records: UsageRecord[], since?: Date): UsageSummary {
  const total = noUsage();
  const runs = new Map<string, Usage & { runId: string; sessionId: string | null }>();
  const sessions = new Map<string, Usage & { sessionId: string }>();
  for (const r of records) {
    addUsage(total, usageOf(r));
    const { runId, sessionId } = r;
    if (runId)
      addUsage(
        bucket(runs, runId, () => ({ ...noUsage(), runId, sessionId })),
        usageOf(r),
      );
    if (sessionId)
      addUsage(
        bucket(sessions, sessionId, () => ({ ...noUsage(), sessionId })),
        usageOf(r),
      );
  }
  return { userId, since: since?.toISOString() ?? null, total, runs: [...runs.values()], sessions: [...sessions.values()] };
}

export class MemoryUsageStore implements UsageStore {
  readonly #records: UsageRecord[] = [];
  async setup(): Promise<void> {}
  async record(record: UsageRecord): Promise<void> {
    this.#records.push({ ...record });
  }
  async records(userId: string, since?: Date): Promise<UsageRecord[]> {
    return this.#records
      .filter((r) => sameUser(r.userId, userId) && (!since || Date.parse(r.at) >= since.getTime()))
      .sort((x, y) => Date.parse(x.at) - Date.parse(y.at))
      .map((r) => ({ ...r }));
  }
  async tokensSince(userId: string, since: Date): Promise<number> {
    let tokens = 0;
    for (const r of this.#records) if (sameUser(r.userId, userId) && Date.parse(r.at) >= since.getTime()) tokens += tokensOf(r);
    return tokens;
  }
  async end(): Promise<void> {}
}

/** What a process has tallied of one usage file since one time: the file read so far, and the tokens at or after that time. */
interface Tally {
  since: number;
  tail: JsonlTail<unknown>;
  tokens: number;
}

/** Users whose tallies a process keeps (each a few numbers). */
const TALLIED_FILES = 10_000;

/**
 * Appends of one short line are atomic (O_APPEND), so worker processes may write side by side. One per
 * model call, so synchronous (src/store/small-files.ts says why).
 */
export class FileUsageStore implements UsageStore {
  readonly #tallies = new LRUCache<string, Tally>({ max: TALLIED_FILES });
  constructor(private readonly dir: string) {}
  async setup(): Promise<void> {
    await mkdir(this.dir, PRIVATE_DIR);
  }
  /** The user's file: under the user's key (src/text/user-key.ts), so `Alice` and `alice` share one. */
  #file(userId: string): string {
    return path.join(this.dir, `${encodeURIComponent(userKey(userId))}.jsonl`);
  }
  async record(record: UsageRecord): Promise<void> {
    appendFileSync(this.#file(record.userId), `${JSON.stringify(record)}\n`, PRIVATE_FILE);
  }
  /** The user's files: theirs, and the file of this very spelling, written before ids were keyed by their lower case (unless a case-insensitive disk makes it the same file). */
  async #files(userId: string): Promise<string[]> {
    const files = [this.#file(userId)];
    const spelt = path.join(this.dir, `${encodeURIComponent(userId)}.jsonl`);
    if (spelt !== files[0]) {
      const [a, b] = await Promise.all([stat(files[0] as string).catch(() => null), stat(spelt).catch(() => null)]);
      if (b && !(a && a.ino === b.ino && a.dev === b.dev)) files.push(spelt);
    }
    return files;
  }
  /**
   * Read on from where this process last read each file: the records appended since (by any process)
   * are added to the tally. A new `since` (a new month) tallies the file once from its start.
   */
  async tokensSince(userId: string, since: Date): Promise<number> {
    let tokens = 0;
    for (const file of await this.#files(userId)) {
      let tally = this.#tallies.get(file);
      const stale = tally && (tally.since !== since.getTime() || (statSync(file, { throwIfNoEntry: false })?.size ?? 0) < tally.tail.offset); // a new month; a file replaced or cut
      if (!tally || stale) this.#tallies.set(file, (tally = { since: since.getTime(), tail: new JsonlTail(file), tokens: 0 }));
      // Whole lines only: a line being appended is read next time.
      for (const line of await tally.tail.read()) {
        const record = UsageRecordSchema.parse(line);
        if (Date.parse(record.at) >= tally.since) tally.tokens += tokensOf(record);
      }
      tokens += tally.tokens;
    }
    return tokens;
  }
  async records(userId: string, since?: Date): Promise<UsageRecord[]> {
    const files = await this.#files(userId);
    const texts = await Promise.all(
      files.map((file) =>
        readFile(file, 'utf8').catch((err: unknown) => {
          if ((err as NodeJS.ErrnoException).code === 'ENOENT') return '';
          throw err;
        }),
      ),
    );
    return texts
      .join('\n')
      .split('\n')
      .filter((line) => line.trim() !== '')
      .map((line) => UsageRecordSchema.parse(JSON.parse(line)))
      .filter((r) => !since || Date.parse(r.at) >= since.getTime())
      .sort((x, y) => Date.parse(x.at) - Date.parse(y.at));
  }
  async end(): Promise<void> {}
}

interface UsageRow {
  user_id: string;
  run_id: string | null;
  session_id: string | null;
  source: string;
  model: string;
  at: Date;
  prompt_tokens: number;
  completion_tokens: number;
  cached_tokens: number;
  calls: number;
}

export class PostgresUsageStore implements UsageStore {
  readonly #pool: Pool;
  constructor(connectionString: string) {
    this.#pool = openPool({ connectionString, max: 4 });
  }
  async setup(): Promise<void> {
    await ensureTables(this.#pool, [
      `CREATE TABLE IF NOT EXISTS threadline_usage (
      user_id text NOT NULL, run_id text, session_id text, source text NOT NULL, model text NOT NULL, at timestamptz NOT NULL,
      prompt_tokens integer NOT NULL, completion_tokens integer NOT NULL, cached_tokens integer NOT NULL, calls integer NOT NULL
    )`,
      'CREATE INDEX IF NOT EXISTS threadline_usage_user_at ON threadline_usage (user_id, at)',
    ]);
  }
  async record(r: UsageRecord): Promise<void> {
    await this.#pool.query(
      'INSERT INTO threadline_usage (user_id, run_id, session_id, source, model, at, prompt_tokens, completion_tokens, cached_tokens, calls) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)',
      [userKey(r.userId), r.runId, r.sessionId, r.source, r.model, r.at, r.promptTokens, r.completionTokens, r.cachedTokens, r.calls],
    );
  }
  async records(userId: string, since?: Date): Promise<UsageRecord[]> {
    const { rows } = await this.#pool.query<UsageRow>('SELECT * FROM threadline_usage WHERE user_id = ANY($1) AND at >= $2 ORDER BY at', [
      // Rows are keyed by the user's key (src/text/user-key.ts); and this spelling's, from before.
      [...new Set([userKey(userId), userId])],
      since ?? new Date(0),
    ]);
    return rows.map((r) => ({
      userId: r.user_id,
      runId: r.run_id,
      sessionId: r.session_id,
      source: r.source,
      model: r.model,
      at: r.at.toISOString(),
      promptTokens: r.prompt_tokens,
      completionTokens: r.completion_tokens,
      cachedTokens: r.cached_tokens,
      calls: r.calls,
    }));
  }
  async tokensSince(userId: string, since: Date): Promise<number> {
    const { rows } = await this.#pool.query<{ tokens: string }>(
      'SELECT COALESCE(SUM(prompt_tokens::bigint + completion_tokens), 0) AS tokens FROM threadline_usage WHERE user_id = ANY($1) AND at >= $2',
      [[...new Set([userKey(userId), userId])], since],
    );
    return Number(rows[0]?.tokens ?? 0);
  }
  async end(): Promise<void> {
    await this.#pool.end();
  }
}

/** The usage store beside the configured memory store. */
export function createUsageStore(config: BackendConfig): UsageStore {
  return byBackend<UsageStore>(config, {
    memory: () => new MemoryUsageStore(),
    postgres: (url) => new PostgresUsageStore(url),
    file: (dataDir) => new FileUsageStore(path.join(dataDir, 'usage')),
  });
}
