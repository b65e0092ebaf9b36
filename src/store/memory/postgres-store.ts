/**
 * The PostgreSQL MemoryStore for production. A commit is one transaction that
 * locks the thread row (SELECT … FOR UPDATE), so concurrent writers of a
 * thread — in any process — serialize on it; states are stored as deltas and
 * materialized states are cached by id (immutable, so the cache never goes stale).
 */
import { openChunk, openOperation, sealChunk, sealOperation } from '../sealing/memory-records';
import { PLAIN, type Sealer } from '../sealing/sealer';
import type { Pool, PoolClient, PoolConfig, QueryResultRow } from 'pg';
import type {
  Chunk,
  ChunkContent,
  ChunkType,
  MemoryState,
  MemoryThread,
  Operation,
  OperationKind,
  OperationRecord,
  Origin,
  Provenance,
  ReadRecord,
  ReadTarget,
  RetentionClass,
  TokenLimits,
} from '../../memory/model';
import { encodeState, fromStoredState, LruCache, materialize, toStoredState, type Materialized, type Splice, type StoredState } from '../../memory/state-delta';
import {
  HeadMovedError,
  type Checkpoint,
  type CommitInput,
  type CommitResult,
  type MemoryStore,
  type MessageHit,
  type NewOperationRecord,
  type OperationFilter,
  type ReadFilter,
  type StateSummary,
} from '../memory-store';
import { cloneCommitInput, DEFAULT_OPERATION_LIMIT, DEFAULT_THREAD_LIMIT, jsonClone, ThreadExistsError, UnknownThreadError } from './in-memory-store';
import { MIGRATION_LOCK_KEY, MIGRATIONS, MIGRATIONS_TABLE_SQL } from './migrations';
import { inTransaction, openPool } from '../pg-pool';
import { userKey } from '../../text/user-key';

type Queryable = Pool | PoolClient;

/**
 * The WHERE clause of an audit listing (operations or reads) of one thread: the filters both share
 * (origin, run, time window), then `extra` ones, each `?` a parameter; absent values are no filter.
 */
function filterSql(
  threadId: string,
  filter: { origin?: string; runId?: string; since?: string; until?: string; limit?: number },
  extra: [string, unknown][],
): { where: string; values: unknown[]; limit: string } {
  const where = ['thread_id = $1'];
  const values: unknown[] = [threadId];
  const clauses: [string, unknown][] = [['origin = ?', filter.origin], ['run_id = ?', filter.runId], ['at >= ?::timestamptz', filter.since], ['at <= ?::timestamptz', filter.until], ...extra];
  for (const [sql, value] of clauses) {
    if (value === undefined) continue;
    values.push(value);
    where.push(sql.replace('?', `$${values.length}`));
  }
  values.push(filter.limit ?? DEFAULT_OPERATION_LIMIT);
  return { where: where.join(' AND '), values, limit: `$${values.length}` };
}

/** Named, so each connection parses and plans the statements of the commit path once. */
const prepared = <R extends QueryResultRow>(db: Queryable, name: string, text: string, values: unknown[]) => db.query<R>({ name: `threadline_${name}`, text, values });

interface ThreadRow {
  id: string;
  user_id: string;
  head_state_id: string;
  last_seq: number;
  limits: TokenLimits;
  forked_from: MemoryThread['forkedFrom'];
  created_at: Date;
}

interface StateRow {
  id: string;
  thread_id: string;
  parent_state_id: string | null;
  seq: number;
  tokens: number;
  operation_id: string | null;
  created_at: Date;
  snapshot: string[] | null;
  splice: Splice | null;
}

interface ChunkRow {
  id: string;
  type: ChunkType;
  content: ChunkContent;
  priority: number;
  retention: RetentionClass;
  agent_modifiable: boolean;
  parent_chunk_id: string | null;
  provenance: Provenance;
  message_id: string | null;
  tokens: number;
  created_at: Date;
}

interface OperationRow {
  id: string;
  thread_id: string;
  seq: number;
  kind: OperationKind;
  origin: Origin;
  reason: string;
  trigger_event: string;
  run_id: string | null;
  step_id: string | null;
  operation: Operation | null;
  details: Record<string, unknown> | null;
  from_state_id: string | null;
  to_state_id: string;
  new_chunk_ids: string[];
  at: Date;
}

interface ReadRow {
  id: string;
  thread_id: string;
  target: ReadTarget;
  origin: Origin;
  reason: string;
  trigger_event: string;
  run_id: string | null;
  step_id: string | null;
  state_id: string;
  details: Record<string, unknown> | null;
  at: Date;
}

const toRead = (r: ReadRow): ReadRecord => ({
  id: r.id,
  threadId: r.thread_id,
  kind: 'read',
  target: r.target,
  origin: r.origin,
  reason: r.reason,
  trigger: r.trigger_event,
  ...(r.run_id !== null ? { runId: r.run_id } : {}),
  ...(r.step_id !== null ? { stepId: r.step_id } : {}),
  stateId: r.state_id,
  details: r.details,
  at: r.at.toISOString(),
});

/** A batch of reads in one statement; reads of threads that do not exist are left out, ids already stored kept once. */
const APPEND_READS = `
INSERT INTO memory_reads (id, thread_id, target, origin, reason, trigger_event, run_id, step_id, state_id, details, at)
SELECT r->>'id', r->>'threadId', r->>'target', r->>'origin', r->>'reason', r->>'trigger', r->>'runId', r->>'stepId', r->>'stateId',
       nullif(r->'details', 'null'::jsonb), (r->>'at')::timestamptz
FROM jsonb_array_elements($1::jsonb) AS r
WHERE EXISTS (SELECT 1 FROM memory_threads t WHERE t.id = r->>'threadId')
ON CONFLICT (id) DO NOTHING`;

/** One user's threads, newest first (served by the index memory_threads_by_user_key). */
export const USER_THREADS = 'SELECT * FROM memory_threads WHERE lower(user_id) = $1 ORDER BY created_at DESC, n DESC LIMIT $2';

const toThread = (r: ThreadRow): MemoryThread => ({
  id: r.id,
  userId: r.user_id,
  headStateId: r.head_state_id,
  limits: r.limits,
  forkedFrom: r.forked_from,
  createdAt: r.created_at.toISOString(),
});

const toStored = (r: StateRow): StoredState => ({
  id: r.id,
  threadId: r.thread_id,
  parentStateId: r.parent_state_id,
  seq: r.seq,
  tokens: r.tokens,
  operationId: r.operation_id,
  createdAt: r.created_at.toISOString(),
  snapshot: r.snapshot,
  splice: r.splice,
});

const toChunk = (r: ChunkRow): Chunk => ({
  id: r.id,
  type: r.type,
  content: r.content,
  priority: r.priority,
  retention: r.retention,
  agentModifiable: r.agent_modifiable,
  parentChunkId: r.parent_chunk_id,
  provenance: r.provenance,
  messageId: r.message_id,
  tokens: r.tokens,
  createdAt: r.created_at.toISOString(),
});

const toRecord = (r: OperationRow): OperationRecord => ({
  id: r.id,
  threadId: r.thread_id,
  seq: r.seq,
  kind: r.kind,
  origin: r.origin,
  reason: r.reason,
  trigger: r.trigger_event,
  ...(r.run_id !== null ? { runId: r.run_id } : {}),
  ...(r.step_id !== null ? { stepId: r.step_id } : {}),
  operation: r.operation,
  details: r.details,
  fromStateId: r.from_state_id,
  toStateId: r.to_state_id,
  newChunkIds: r.new_chunk_ids,
  at: r.at.toISOString(),
});

/** jsonb parameters go in as JSON text; pg would turn a JS array into a Postgres array instead. */
const json = (value: unknown) => (value === null || value === undefined ? null : JSON.stringify(value));

/**
 * Everything one commit writes, in one statement (one round trip): new chunks (shared ones
 * already stored are kept), the state ($3: [] or [state]), the record ($4), the checkpoint
 * ($5: name or null) and the thread's new head and last seq.
 */
const WRITE_COMMIT = `
WITH new_chunks AS (
  INSERT INTO memory_chunks (id, thread_id, type, content, priority, retention, agent_modifiable, parent_chunk_id, provenance, message_id, tokens, created_at)
  SELECT c->>'id', $1, c->>'type', c->'content', (c->>'priority')::int, c->>'retention', (c->>'agentModifiable')::boolean,
         c->>'parentChunkId', coalesce(c->'provenance', '{}'::jsonb), c->>'messageId', (c->>'tokens')::int, (c->>'createdAt')::timestamptz
  FROM jsonb_array_elements($2::jsonb) AS c
  ON CONFLICT (id) DO NOTHING
), new_state AS (
  INSERT INTO memory_states (id, thread_id, parent_state_id, seq, tokens, operation_id, created_at, snapshot, splice)
  SELECT s->>'id', $1, s->>'parentStateId', (s->>'seq')::int, (s->>'tokens')::int, s->>'operationId', (s->>'createdAt')::timestamptz,
         nullif(s->'snapshot', 'null'::jsonb), nullif(s->'splice', 'null'::jsonb)
  FROM jsonb_array_elements($3::jsonb) AS s
), new_record AS (
  INSERT INTO memory_operations (id, thread_id, seq, kind, origin, reason, trigger_event, run_id, step_id, operation, details, from_state_id, to_state_id, new_chunk_ids, at)
  SELECT r->>'id', $1, (r->>'seq')::int, r->>'kind', r->>'origin', r->>'reason', r->>'trigger', r->>'runId', r->>'stepId',
         nullif(r->'operation', 'null'::jsonb), nullif(r->'details', 'null'::jsonb), r->>'fromStateId', r->>'toStateId',
         ARRAY(SELECT jsonb_array_elements_text(r->'newChunkIds')), (r->>'at')::timestamptz
  FROM (SELECT $4::jsonb AS r) AS input
), new_checkpoint AS (
  INSERT INTO memory_checkpoints (operation_id, thread_id, name, state_id, at)
  SELECT $4::jsonb->>'id', $1, $5::text, $4::jsonb->>'toStateId', ($4::jsonb->>'at')::timestamptz
  WHERE $5::text IS NOT NULL
)
UPDATE memory_threads SET head_state_id = $4::jsonb->>'toStateId', last_seq = ($4::jsonb->>'seq')::int WHERE id = $1`;

/** Locks the thread row (writers of a thread queue here) and says whether the record is already stored. */
const LOCK_THREAD = `
SELECT head_state_id, last_seq, EXISTS (SELECT 1 FROM memory_operations WHERE id = $2) AS done
FROM memory_threads WHERE id = $1 FOR UPDATE`;

/**
 * A state and its ancestors back to a snapshot, oldest first — or back to an ancestor
 * this process has cached ($2), whose materialized list the chain continues from.
 */
const STATE_CHAIN = `
WITH RECURSIVE chain AS (
  SELECT s.*, 0 AS depth FROM memory_states s WHERE s.id = $1
  UNION ALL
  SELECT p.*, c.depth + 1 FROM chain c JOIN memory_states p ON p.id = c.parent_state_id
  WHERE c.snapshot IS NULL AND NOT (c.parent_state_id = ANY ($2::text[]))
)
SELECT id, thread_id, parent_state_id, seq, tokens, operation_id, created_at, snapshot, splice FROM chain ORDER BY depth DESC`;

interface CachedState {
  stored: StoredState;
  materialized: Materialized;
}

/**
 * Brings a database to the newest schema, once even when several processes start together (an
 * advisory lock inside the caller's transaction). Shared by every PostgreSQL store of Threadline.
 */
export async function applyMigrations(db: PoolClient): Promise<void> {
  await db.query('SELECT pg_advisory_xact_lock(hashtext($1))', [MIGRATION_LOCK_KEY]);
  await db.query(MIGRATIONS_TABLE_SQL);
  const applied = new Set((await db.query<{ version: number }>('SELECT version FROM memory_migrations')).rows.map((r) => r.version));
  for (const migration of MIGRATIONS) {
    if (applied.has(migration.version)) continue;
    await db.query(migration.sql);
    await db.query('INSERT INTO memory_migrations (version, name) VALUES ($1, $2)', [migration.version, migration.name]);
  }
}

export class PostgresMemoryStore implements MemoryStore {
  readonly kind = 'postgres' as const;
  private readonly pool: Pool;
  private readonly states = new LruCache<CachedState>(256);
  private readonly chunks = new LruCache<Chunk>(20_000);
  private ended = false;
  private readonly sealer: Sealer;

  /**
   * @param connection a connection string (postgres://user@host:port/db) or pg pool options.
   * @param options.sealer seals chunk content and operations in their rows (THREADLINE_ENCRYPTION_KEY). @default PLAIN
   */
  constructor(connection: string | PoolConfig, options: { sealer?: Sealer } = {}) {
    this.pool = openPool(typeof connection === 'string' ? { connectionString: connection } : connection);
    this.sealer = options.sealer ?? PLAIN;
  }

  async setup(): Promise<void> {
    await this.sealer.ready();
    await this.transaction(applyMigrations);
  }

  async end(): Promise<void> {
    if (this.ended) return;
    this.ended = true;
    await this.pool.end();
  }

  private transaction<T>(fn: (db: PoolClient) => Promise<T>): Promise<T> {
    return inTransaction(this.pool, fn);
  }

  async createThread(input: { thread: MemoryThread; state: MemoryState; chunks: Chunk[]; record: NewOperationRecord }): Promise<OperationRecord> {
    const { thread, state, chunks } = cloneCommitInput(input);
    const record: OperationRecord = { ...jsonClone(input.record), threadId: thread.id, seq: 1, toStateId: state.id };
    const encoded = encodeState(null, state.chunkIds);
    await this.transaction(async (db) => {
      const inserted = await db.query(
        `INSERT INTO memory_threads (id, user_id, head_state_id, last_seq, limits, forked_from, created_at)
         VALUES ($1, $2, $3, 1, $4::jsonb, $5::jsonb, $6) ON CONFLICT (id) DO NOTHING RETURNING id`,
        [thread.id, thread.userId, state.id, json(thread.limits), json(thread.forkedFrom), thread.createdAt],
      );
      if (inserted.rows.length === 0) throw new ThreadExistsError(thread.id);
      await this.writeCommit(db, thread.id, chunks, toStoredState(state, encoded), record, null);
    });
    this.remember(state, encoded.materialized, encoded);
    return jsonClone(record);
  }

  private async writeCommit(db: Queryable, threadId: string, chunks: Chunk[], state: StoredState | null, record: OperationRecord, checkpoint: { name: string } | null): Promise<void> {
    const sealedChunks = chunks.map((c) => sealChunk(this.sealer, c));
    const sealedRecord = sealOperation(this.sealer, record);
    await prepared(db, 'write_commit', WRITE_COMMIT, [threadId, JSON.stringify(sealedChunks), JSON.stringify(state ? [state] : []), JSON.stringify(sealedRecord), checkpoint?.name ?? null]);
  }

  private remember(state: MemoryState, materialized: Materialized, delta: Pick<StoredState, 'snapshot' | 'splice'>): void {
    const { chunkIds: _ids, ...meta } = state;
    void _ids;
    this.states.set(state.id, { stored: { ...meta, snapshot: delta.snapshot, splice: delta.splice }, materialized });
  }

  async getThread(threadId: string): Promise<MemoryThread | undefined> {
    const { rows } = await this.pool.query<ThreadRow>('SELECT * FROM memory_threads WHERE id = $1', [threadId]);
    return rows[0] && toThread(rows[0]);
  }

  async listThreads(filter: { userId?: string; limit?: number }): Promise<MemoryThread[]> {
    const limit = filter.limit ?? DEFAULT_THREAD_LIMIT;
    const { rows } =
      filter.userId === undefined
        ? await this.pool.query<ThreadRow>('SELECT * FROM memory_threads ORDER BY created_at DESC, n DESC LIMIT $1', [limit])
        : // One user whatever the case of the id (src/text/user-key.ts).
          await this.pool.query<ThreadRow>(USER_THREADS, [userKey(filter.userId), limit]);
    return rows.map(toThread);
  }

  /** A state's stored form and materialized ids, from the cache or by walking its chain. */
  private async load(db: Queryable, stateId: string): Promise<CachedState | undefined> {
    const hit = this.states.get(stateId);
    if (hit) return hit;
    for (const stopAt of [this.states.keys(), []]) {
      const rows = (await prepared<StateRow>(db, 'state_chain', STATE_CHAIN, [stateId, stopAt])).rows.map(toStored);
      const first = rows[0];
      const last = rows.at(-1);
      if (!first || !last) return undefined;
      // The chain stopped at a cached ancestor; it may have been evicted meanwhile, then walk to the snapshot.
      const base = first.snapshot ? undefined : first.parentStateId !== null ? this.states.get(first.parentStateId) : undefined;
      if (!first.snapshot && !base) continue;
      const entry = { stored: last, materialized: materialize(rows, base?.materialized) };
      this.states.set(stateId, entry);
      return entry;
    }
    throw new Error(`state ${stateId}: its chain does not reach a snapshot`);
  }

  async getState(stateId: string): Promise<MemoryState | undefined> {
    const entry = await this.load(this.pool, stateId);
    return entry && fromStoredState(entry.stored, entry.materialized.chunkIds);
  }

  async listStates(threadId: string): Promise<StateSummary[]> {
    const { rows } = await this.pool.query<Pick<StateRow, 'id' | 'parent_state_id' | 'seq' | 'operation_id' | 'created_at'>>(
      'SELECT id, parent_state_id, seq, operation_id, created_at FROM memory_states WHERE thread_id = $1 ORDER BY n',
      [threadId],
    );
    return rows.map((r) => ({ stateId: r.id, parentStateId: r.parent_state_id, seq: r.seq, operationId: r.operation_id, at: r.created_at.toISOString() }));
  }

  async getChunks(chunkIds: readonly string[]): Promise<Chunk[]> {
    const found = new Map<string, Chunk>();
    const missing: string[] = [];
    for (const id of new Set(chunkIds)) {
      const hit = this.chunks.get(id);
      if (hit) found.set(id, hit);
      else missing.push(id);
    }
    if (missing.length > 0) {
      const { rows } = await this.pool.query<ChunkRow>('SELECT * FROM memory_chunks WHERE id = ANY ($1::text[])', [missing]);
      for (const row of rows) {
        const chunk = openChunk(this.sealer, toChunk(row));
        found.set(chunk.id, chunk);
        this.chunks.set(chunk.id, chunk);
      }
    }
    return jsonClone(chunkIds.flatMap((id) => found.get(id) ?? []));
  }

  async findChunkByMessageId(messageId: string): Promise<MessageHit | undefined> {
    const { rows } = await this.pool.query<ChunkRow & { thread_id: string }>('SELECT * FROM memory_chunks WHERE message_id = $1 ORDER BY n DESC LIMIT 1', [messageId]);
    return rows[0] && { threadId: rows[0].thread_id, chunk: openChunk(this.sealer, toChunk(rows[0])) };
  }

  async commit(input: CommitInput): Promise<CommitResult> {
    const copy = cloneCommitInput(input);
    let committed: { state: MemoryState; materialized: Materialized; delta: Pick<StoredState, 'snapshot' | 'splice'> } | undefined;
    const result = await this.transaction(async (db): Promise<CommitResult> => {
      const locked = await prepared<Pick<ThreadRow, 'head_state_id' | 'last_seq'> & { done: boolean }>(db, 'lock_thread', LOCK_THREAD, [copy.threadId, copy.record.id]);
      const thread = locked.rows[0];
      if (!thread) throw new UnknownThreadError(copy.threadId);
      // The duplicate check goes first, and is repeated after the lock wait before reporting a moved head:
      // a concurrent commit of the same record that we waited for is visible only to a new statement.
      if (thread.done || thread.head_state_id !== copy.expectedHeadStateId) {
        const done = await db.query<OperationRow>('SELECT * FROM memory_operations WHERE id = $1', [copy.record.id]);
        if (done.rows[0]) return { status: 'duplicate', record: openOperation(this.sealer, toRecord(done.rows[0])) };
        throw new HeadMovedError(copy.threadId, copy.expectedHeadStateId, thread.head_state_id);
      }
      const head = thread.head_state_id;
      const record: OperationRecord = { ...copy.record, threadId: copy.threadId, seq: thread.last_seq + 1, toStateId: copy.state ? copy.state.id : head };
      let state: StoredState | null = null;
      if (copy.state) {
        if (copy.state.threadId !== copy.threadId) throw new Error(`state ${copy.state.id} belongs to thread ${copy.state.threadId}, not ${copy.threadId}`);
        const parent = copy.state.parentStateId !== null ? await this.load(db, copy.state.parentStateId) : undefined;
        const base = parent && parent.stored.threadId === copy.threadId ? parent.materialized : null;
        const encoded = encodeState(base, copy.state.chunkIds);
        state = toStoredState(copy.state, encoded);
        committed = { state: copy.state, materialized: encoded.materialized, delta: encoded };
      }
      await this.writeCommit(db, copy.threadId, copy.chunks, state, record, copy.checkpoint ?? null);
      return { status: 'committed', record };
    });
    // Only after COMMIT: a rolled-back state must never be served from the cache.
    if (result.status === 'committed' && committed) this.remember(committed.state, committed.materialized, committed.delta);
    return jsonClone(result);
  }

  async listOperations(threadId: string, filter: OperationFilter = {}): Promise<OperationRecord[]> {
    const { where, values, limit } = filterSql(threadId, filter, [
      ['kind = ?', filter.kind],
      ['seq > ?', filter.afterSeq],
    ]);
    const { rows } = await this.pool.query<OperationRow>(`SELECT * FROM memory_operations WHERE ${where} ORDER BY seq LIMIT ${limit}`, values);
    return rows.map((r) => openOperation(this.sealer, toRecord(r)));
  }

  async listCheckpoints(threadId: string): Promise<Checkpoint[]> {
    const { rows } = await this.pool.query<{ name: string; state_id: string; at: Date }>(
      'SELECT c.name, c.state_id, c.at FROM memory_checkpoints c JOIN memory_operations o ON o.id = c.operation_id WHERE c.thread_id = $1 ORDER BY o.seq',
      [threadId],
    );
    return rows.map((r) => ({ name: r.name, stateId: r.state_id, at: r.at.toISOString() }));
  }

  async appendReads(records: readonly ReadRecord[]): Promise<void> {
    if (records.length === 0) return;
    await prepared(this.pool, 'append_reads', APPEND_READS, [JSON.stringify(records)]);
  }

  async listReads(threadId: string, filter: ReadFilter = {}): Promise<ReadRecord[]> {
    const { where, values, limit } = filterSql(threadId, filter, [['target = ?', filter.target]]);
    const { rows } = await this.pool.query<ReadRow>(`SELECT * FROM memory_reads WHERE ${where} ORDER BY at, n LIMIT ${limit}`, values);
    return rows.map(toRead);
  }

  /** Bytes of the rows stored for one thread (or all), as Postgres sizes them; for benchmarks and tests. */
  async storedBytes(threadId?: string): Promise<number> {
    let total = 0;
    for (const table of ['memory_threads', 'memory_states', 'memory_chunks', 'memory_operations', 'memory_checkpoints', 'memory_reads']) {
      const column = table === 'memory_threads' ? 'id' : 'thread_id';
      const { rows } = await this.pool.query<{ bytes: string | null }>(
        `SELECT sum(pg_column_size(t.*)) AS bytes FROM ${table} t ${threadId === undefined ? '' : `WHERE t.${column} = $1`}`,
        threadId === undefined ? [] : [threadId],
      );
      total += Number(rows[0]?.bytes ?? 0);
    }
    return total;
  }
}
