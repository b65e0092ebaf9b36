/**
 * Rate-limit counters shared by every API process (MEMORY_STORE=postgres): express-rate-limit's
 * store interface over one PostgreSQL table (migration 8), so two APIs behind a load balancer
 * allow a user what one would, not twice as much. A counter's window starts at its first hit, as
 * in express-rate-limit's memory store, on the database's clock (one clock for every process); one
 * row per counter, started again when its window has passed. A
 * store package would bring its own copy of `pg` and its own migrations: the SQL is three lines.
 */
import type { IncrementResponse, Options, Store } from 'express-rate-limit';
import type { Pool } from 'pg';

export class PostgresRateLimitStore implements Store {
  /** Counters of different limits never meet: the name prefixes every key. */
  readonly prefix: string;
  /** Shared between processes: express-rate-limit must not assume only this one counts. */
  readonly localKeys = false;
  private windowMs = 60_000;

  constructor(
    private readonly pool: Pool,
    name: string,
  ) {
    this.prefix = `${name}:`;
  }

  init(options: Options): void {
    this.windowMs = options.windowMs;
  }

  async increment(key: string): Promise<IncrementResponse> {
    const { rows } = await this.pool.query<{ hits: number; window_start: Date }>(
      `INSERT INTO api_rate_limits AS r (key, window_start, hits) VALUES ($1, now(), 1)
       ON CONFLICT (key) DO UPDATE SET
         hits = CASE WHEN r.window_start + $2 * interval '1 millisecond' > now() THEN r.hits + 1 ELSE 1 END,
         window_start = CASE WHEN r.window_start + $2 * interval '1 millisecond' > now() THEN r.window_start ELSE now() END
       RETURNING hits, window_start`,
      [this.prefix + key, this.windowMs],
    );
    const row = rows[0] as { hits: number; window_start: Date };
    return { totalHits: row.hits, resetTime: new Date(row.window_start.getTime() + this.windowMs) };
  }

  async decrement(key: string): Promise<void> {
    await this.pool.query('UPDATE api_rate_limits SET hits = greatest(hits - 1, 0) WHERE key = $1', [this.prefix + key]);
  }

  async resetKey(key: string): Promise<void> {
    await this.pool.query('DELETE FROM api_rate_limits WHERE key = $1', [this.prefix + key]);
  }
}
