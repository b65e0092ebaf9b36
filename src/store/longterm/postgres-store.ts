/**
 * Long-term memory in PostgreSQL (MEMORY_STORE=postgres): one row per record (migration 3 of
 * src/store/memory/migrations.ts), full-text search over the same analyzed terms the embedded store
 * ranks (a GIN-indexed tsvector, ranked by ts_rank_cd), entity names and aliases in an indexed
 * array. A write section is one transaction holding an advisory lock on the user, so fact dedupe
 * and supersede never race across processes. Names spelt alike are found with pg_trgm over a
 * trigram-indexed table of entity names (migration 6).
 */
import type { Pool, PoolClient } from 'pg';
import type { ConversationSummary, Entity, Episode, Fact, MemoryKind, StoredMessage } from '../../longterm/contract';
import { analyze, normalizeName } from '../../longterm/text';
import { applyMigrations } from '../memory/postgres-store';
import { inTransaction, openPool } from '../pg-pool';
import { indexTerms, sealAuditEntry, sealRecordData } from '../sealing/longterm-records';
import { PLAIN, type Sealer } from '../sealing/sealer';
import {
  searchableText,
  type DenseHit,
  type FactFilter,
  type LexicalHit,
  type LexicalKind,
  type LexicalQuery,
  type LongTermAuditEntry,
  type LongTermAuditFilter,
  type LongTermReader,
  type LongTermRecord,
  type LongTermStore,
  type LongTermWriter,
  type RecordVector,
  type SimilarEntity,
} from './store';

type Queryable = Pick<Pool | PoolClient, 'query'>;

/** Columns besides the record itself, for the lookups the service makes. */
function columnsOf(item: LongTermRecord): { names: string[]; subjectId: string | null; objectId: string | null; sessionId: string | null; sortAt: string | null } {
  const none = { names: [], subjectId: null, objectId: null, sessionId: null, sortAt: null };
  switch (item.kind) {
    case 'entity':
      return { ...none, names: [...new Set([item.record.name, ...item.record.aliases].map(normalizeName))] };
    case 'fact':
      return { ...none, subjectId: item.record.subjectId, objectId: item.record.objectId, sortAt: item.record.recordedAt };
    case 'summary':
      return { ...none, sessionId: item.record.sessionId, sortAt: item.record.at };
    case 'episode':
      return { ...none, sortAt: item.record.at };
    case 'message':
      return { ...none, sortAt: item.record.at };
  }
}

/** Terms as tsquery lexemes, quoted (terms are letters and digits only: see analyze). */
const lexemes = (terms: readonly string[]) => terms.map((t) => `'${t.replace(/'/g, "''")}'`);
/** Per term, the tsquery matching every form it may be stored in (sealed: its keyed hashes, and the term of rows from before). */
const termQueries = (sealer: Sealer, terms: readonly string[]) => (sealer.on ? terms.map((t) => `(${lexemes(sealer.queryTerms(t)).join(' | ')})`) : lexemes(terms));
/** Rows taken per query term before ranking (at least; 4 × the limit when that is more). */
const CANDIDATES_PER_TERM = 200;

class PostgresReader implements LongTermReader {
  constructor(
    private readonly db: Queryable,
    private readonly userId: string,
    private readonly sealer: Sealer,
  ) {}

  private async byIds<T>(kind: LongTermRecord['kind'], ids: readonly string[]): Promise<T[]> {
    if (ids.length === 0) return [];
    const { rows } = await this.db.query<{ id: string; data: T }>('SELECT id, data FROM longterm_records WHERE user_id = $1 AND kind = $2 AND id = ANY($3)', [this.userId, kind, [...ids]]);
    const found = new Map(rows.map((r) => [r.id, this.sealer.open<T>(r.data)]));
    return ids.flatMap((id) => (found.has(id) ? [found.get(id) as T] : []));
  }
  getMessages = (ids: readonly string[]) => this.byIds<StoredMessage>('message', ids);
  getFacts = (ids: readonly string[]) => this.byIds<Fact>('fact', ids);
  getEntities = (ids: readonly string[]) => this.byIds<Entity>('entity', ids);
  getEpisodes = (ids: readonly string[]) => this.byIds<Episode>('episode', ids);
  getSummaries = (ids: readonly string[]) => this.byIds<ConversationSummary>('summary', ids);

  async findEntities(names: readonly string[]): Promise<Entity[]> {
    if (names.length === 0) return [];
    const { rows } = await this.db.query<{ data: Entity }>("SELECT data FROM longterm_records WHERE user_id = $1 AND kind = 'entity' AND names && $2 ORDER BY id", [
      this.userId,
      names.flatMap((n) => this.sealer.queryTerms(n)),
    ]);
    return rows.map((r) => this.sealer.open<Entity>(r.data));
  }

  async listFacts(filter: FactFilter): Promise<Fact[]> {
    const where = ['user_id = $1', "kind = 'fact'"];
    const params: unknown[] = [this.userId];
    if (filter.entityIds) {
      params.push(filter.entityIds);
      where.push(`(subject_id = ANY($${params.length}) OR object_id = ANY($${params.length}))`);
    }
    if (filter.subjectIds) {
      params.push(filter.subjectIds);
      where.push(`subject_id = ANY($${params.length})`);
    }
    if (filter.openOnly) where.push("data->'validTo' = 'null'::jsonb");
    const limit = filter.limit === undefined ? '' : ` LIMIT ${Math.max(0, Math.floor(filter.limit))}`;
    const { rows } = await this.db.query<{ data: Fact }>(`SELECT data FROM longterm_records WHERE ${where.join(' AND ')} ORDER BY sort_at DESC, id DESC${limit}`, params);
    return rows.map((r) => this.sealer.open<Fact>(r.data));
  }

  async listEpisodes(limit: number): Promise<Episode[]> {
    const { rows } = await this.db.query<{ data: Episode }>("SELECT data FROM longterm_records WHERE user_id = $1 AND kind = 'episode' ORDER BY sort_at DESC, id DESC LIMIT $2", [this.userId, limit]);
    return rows.map((r) => this.sealer.open<Episode>(r.data));
  }

  async listSummaries(sessionId: string): Promise<ConversationSummary[]> {
    const { rows } = await this.db.query<{ data: ConversationSummary }>("SELECT data FROM longterm_records WHERE user_id = $1 AND kind = 'summary' AND session_id = $2 ORDER BY sort_at, id", [
      this.userId,
      sessionId,
    ]);
    return rows.map((r) => this.sealer.open<ConversationSummary>(r.data));
  }

  async listMessages(sessionId: string, limit: number): Promise<StoredMessage[]> {
    const { rows } = await this.db.query<{ data: StoredMessage }>(
      "SELECT data FROM longterm_records WHERE user_id = $1 AND kind = 'message' AND data->>'sessionId' = $2 ORDER BY data->>'at', id LIMIT $3",
      [this.userId, sessionId, limit],
    );
    return rows.map((r) => this.sealer.open<StoredMessage>(r.data));
  }

  /**
   * Ranks within a candidate set, not every row a common term matches (95,000 messages of common
   * words: ~180 ms a kind ranked whole, ~40 ms this way): the rows matching every term, then per
   * term up to `cap` rows matching it (all of a rare term's rows; an arbitrary `cap` of a common
   * one's, whose rows matching nothing rarer rank low anyway), ranked by ts_rank_cd.
   */
  async searchText(kind: LexicalKind, query: LexicalQuery, limit: number): Promise<LexicalHit[]> {
    const terms = [...new Set(query.terms)];
    if (terms.length === 0) return [];
    const cap = Math.max(CANDIDATES_PER_TERM, limit * 4);
    // One plan whatever the table's statistics say (a table never analyzed estimates a handful of
    // rows per user and would walk the primary key instead): `user_id || ''` keeps every scan on
    // the kind's GIN index, and each candidate is ranked where it is read, never looked up again.
    const { rows } = await this.db.query<{ id: string; score: number }>(
      `SELECT id, max(score) AS score FROM (
         SELECT c.id, c.score FROM unnest($3::text[]) AS t(term)
         CROSS JOIN LATERAL (SELECT id, ts_rank_cd(terms, to_tsquery('simple', $5), 1) AS score FROM longterm_records
                             WHERE kind = $2 AND terms @@ to_tsquery('simple', t.term) AND user_id || '' = $1 LIMIT $4) c
         UNION ALL
         SELECT id, ts_rank_cd(terms, to_tsquery('simple', $5), 1) FROM (SELECT id, terms FROM longterm_records
                             WHERE kind = $2 AND terms @@ to_tsquery('simple', $6) AND user_id || '' = $1 LIMIT $4) every_term
       ) candidates GROUP BY id ORDER BY score DESC, id LIMIT $7`,
      [this.userId, kind, termQueries(this.sealer, terms), cap, termQueries(this.sealer, terms).join(' | '), termQueries(this.sealer, terms).join(' & '), limit],
    );
    return rows.map((r) => ({ id: r.id, score: Number(r.score) }));
  }

  /** pg_trgm over the user's entity names: longterm_similar_entities of migration 6, through its trigram index. */
  async similarEntities(phrases: readonly string[], threshold: number, limit: number): Promise<SimilarEntity[]> {
    if (phrases.length === 0 || limit <= 0) return [];
    const { rows } = await this.db.query<{ data: Entity; similarity: number }>(
      `SELECT r.data, s.similarity FROM longterm_similar_entities($1, $2::text[], $3::real) s
       JOIN longterm_records r ON r.user_id = $1 AND r.kind = 'entity' AND r.id = s.entity_id
       ORDER BY s.similarity DESC, s.entity_id LIMIT $4`,
      [this.userId, [...phrases], threshold, limit],
    );
    return rows.map((r) => ({ entity: this.sealer.open<Entity>(r.data), similarity: Number(r.similarity) }));
  }

  /** Dot products (vectors are unit length) over the user's rows of those kinds, best `limit` per kind. */
  async nearest(kinds: readonly MemoryKind[], vector: Float32Array, limit: number): Promise<DenseHit[]> {
    if (kinds.length === 0 || vector.length === 0) return [];
    const { rows } = await this.db.query<{ kind: MemoryKind; id: string; score: number }>(
      `SELECT kind, id, score FROM (
         SELECT kind, id, score, row_number() OVER (PARTITION BY kind ORDER BY score DESC, id) AS n FROM (
           SELECT kind, id, (SELECT sum(a::float8 * b::float8) FROM unnest(embedding, $3::real[]) AS t(a, b)) AS score
           FROM longterm_records WHERE user_id = $1 AND kind = ANY($2) AND cardinality(embedding) = $4) scored) ranked
       WHERE n <= $5 ORDER BY kind, n`,
      [this.userId, [...kinds], Array.from(vector), vector.length, limit],
    );
    return rows.map((r) => ({ kind: r.kind, id: r.id, score: Number(r.score) }));
  }
}

export class PostgresLongTermStore implements LongTermStore {
  private readonly pool: Pool;
  private readonly sealer: Sealer;

  /** @param options.sealer seals records, vectors' rows' content and the audit (THREADLINE_ENCRYPTION_KEY); the full-text index holds keyed hashes then. @default PLAIN */
  constructor(connectionString: string, options: { sealer?: Sealer } = {}) {
    this.pool = openPool({ connectionString, max: 4 });
    this.sealer = options.sealer ?? PLAIN;
  }

  async setup(): Promise<void> {
    await this.sealer.ready();
    await this.transaction(applyMigrations);
  }

  async end(): Promise<void> {
    await this.pool.end();
  }

  reader(userId: string): LongTermReader {
    return new PostgresReader(this.pool, userId, this.sealer);
  }

  write<T>(userId: string, fn: (tx: LongTermWriter) => Promise<T>): Promise<T> {
    return this.transaction(async (db) => {
      await db.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`threadline.longterm:${userId}`]);
      const records: LongTermRecord[] = [];
      const audit: LongTermAuditEntry[] = [];
      const vectors: RecordVector[] = [];
      const reader = new PostgresReader(db, userId, this.sealer);
      const tx: LongTermWriter = {
        getMessages: (ids) => reader.getMessages(ids),
        getFacts: (ids) => reader.getFacts(ids),
        getEntities: (ids) => reader.getEntities(ids),
        getEpisodes: (ids) => reader.getEpisodes(ids),
        getSummaries: (ids) => reader.getSummaries(ids),
        findEntities: (names) => reader.findEntities(names),
        listFacts: (filter) => reader.listFacts(filter),
        listEpisodes: (limit) => reader.listEpisodes(limit),
        listSummaries: (sessionId) => reader.listSummaries(sessionId),
        listMessages: (sessionId, limit) => reader.listMessages(sessionId, limit),
        searchText: (kind, query, limit) => reader.searchText(kind, query, limit),
        nearest: (kinds, vector, limit) => reader.nearest(kinds, vector, limit),
        similarEntities: (phrases, threshold, limit) => reader.similarEntities(phrases, threshold, limit),
        put: (items) => void records.push(...structuredClone(items)),
        audit: (entry) => void audit.push(structuredClone(entry)),
        putVectors: (items) => void vectors.push(...structuredClone(items)),
      };
      const result = await fn(tx);
      for (const item of records) {
        const c = columnsOf(item);
        await db.query(
          `INSERT INTO longterm_records (user_id, kind, id, data, terms, names, subject_id, object_id, session_id, sort_at)
           VALUES ($1, $2, $3, $4, to_tsvector('simple', $5), $6, $7, $8, $9, $10)
           ON CONFLICT (user_id, kind, id) DO UPDATE SET data = EXCLUDED.data, terms = EXCLUDED.terms, names = EXCLUDED.names,
             subject_id = EXCLUDED.subject_id, object_id = EXCLUDED.object_id, session_id = EXCLUDED.session_id, sort_at = EXCLUDED.sort_at`,
          [
            userId,
            item.kind,
            item.record.id,
            JSON.stringify(sealRecordData(this.sealer, item)),
            indexTerms(this.sealer, analyze(searchableText(item))).join(' '),
            indexTerms(this.sealer, c.names),
            c.subjectId,
            c.objectId,
            c.sessionId,
            c.sortAt,
          ],
        );
      }
      for (const item of records) {
        if (item.kind !== 'entity') continue;
        await db.query('DELETE FROM longterm_entity_names WHERE user_id = $1 AND entity_id = $2', [userId, item.record.id]);
        await db.query('INSERT INTO longterm_entity_names (user_id, entity_id, name) SELECT $1, $2, unnest($3::text[])', [userId, item.record.id, columnsOf(item).names]);
      }
      // After the records: a vector lands on its row (the upsert above leaves an existing one alone).
      for (const v of vectors) {
        await db.query('UPDATE longterm_records SET embedding = $4::real[] WHERE user_id = $1 AND kind = $2 AND id = $3', [userId, v.kind, v.id, Array.from(v.vector)]);
      }
      for (const entry of audit) await db.query('INSERT INTO longterm_audit (user_id, entry) VALUES ($1, $2)', [userId, JSON.stringify(sealAuditEntry(this.sealer, entry))]);
      return result;
    });
  }

  async appendAudit(userId: string, entries: readonly LongTermAuditEntry[]): Promise<void> {
    if (entries.length === 0) return;
    await this.pool.query('INSERT INTO longterm_audit (user_id, entry) SELECT $1, e FROM unnest($2::jsonb[]) AS e', [userId, entries.map((e) => JSON.stringify(sealAuditEntry(this.sealer, e)))]);
  }

  async auditLog(userId: string, filter: LongTermAuditFilter = {}): Promise<LongTermAuditEntry[]> {
    // An entry without a kind is a write (written before reads were audited).
    const { rows } = await this.pool.query<{ entry: LongTermAuditEntry }>(
      `SELECT entry FROM longterm_audit WHERE user_id = $1
         AND ($2::text IS NULL OR COALESCE(entry->>'kind', 'write') = $2)
         AND ($3::text IS NULL OR entry->>'action' = $3)
         AND ($4::text IS NULL OR entry->>'runId' = $4)
         AND ($5::text IS NULL OR entry->>'at' >= $5)
         AND ($6::text IS NULL OR entry->>'at' <= $6)
       ORDER BY n DESC LIMIT $7`,
      [userId, filter.kind ?? null, filter.action ?? null, filter.runId ?? null, filter.since ?? null, filter.until ?? null, filter.limit ?? null],
    );
    return rows.map((r) => this.sealer.open<LongTermAuditEntry>(r.entry));
  }

  private transaction<T>(fn: (db: PoolClient) => Promise<T>): Promise<T> {
    return inTransaction(this.pool, fn);
  }
}
