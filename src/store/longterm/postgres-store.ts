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
import { B, bm25Idf, K1 } from './bm25';
import { predicateKey } from '../../longterm/facts';
import { inTransaction, openPool } from '../pg-pool';
import { indexTerms, sealAuditEntry, sealRecordData } from '../sealing/longterm-records';
import { PLAIN, type Sealer } from '../sealing/sealer';
import { VectorCache } from './vector-cache';
import { nearestOf } from '../../longterm/vectors';
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

interface RecordColumns {
  names: string[];
  subjectId: string | null;
  objectId: string | null;
  sessionId: string | null;
  sortAt: string | null;
  /** Facts: their predicate's key's base (migration 14), before indexTerm. */
  predicateBase: string | null;
}

/** Columns besides the record itself, for the lookups the service makes. */
function columnsOf(item: LongTermRecord): RecordColumns {
  const none = { names: [], subjectId: null, objectId: null, sessionId: null, sortAt: null, predicateBase: null };
  switch (item.kind) {
    case 'entity':
      return { ...none, names: [...new Set([item.record.name, ...item.record.aliases].map(normalizeName))] };
    case 'fact':
      return { ...none, subjectId: item.record.subjectId, objectId: item.record.objectId, sortAt: item.record.recordedAt, predicateBase: predicateKey(item.record.predicate).base };
    case 'summary':
      return { ...none, sessionId: item.record.sessionId, sortAt: item.record.at };
    case 'episode':
      return { ...none, sortAt: item.record.at };
    case 'message':
      return { ...none, sortAt: item.record.at };
  }
}

/**
 * Rows a search ranks at most, taken from its rarest terms (see searchText): the smallest that keeps
 * evidence recall on the recall benchmark's set as it was (300 lost one answer of the dev split);
 * at 600 a search of common words read twice the rows (issue 30).
 */
const CANDIDATE_BUDGET = 320;
/**
 * A row of longterm_lexical_candidates (migrations 10 and 11), `n` the search of a batch it answers: first
 * the statistics (id null; the terms some row holds, rarest first, as positions in the query's
 * terms, and their record counts), then the candidates, with whether they hold each of those terms
 * and their record as text. bigint columns arrive as text.
 */
interface CandidateRow {
  n: number;
  id: string | null;
  len: number | null;
  holds: boolean[] | null;
  docs: string | null;
  total_terms: string | null;
  /** The query term (its position) each entry of `dfs`, and of a candidate's `holds`, stands for. */
  term_index: number[] | null;
  dfs: string[] | null;
  data: string | null;
}

/**
 * The rarest of `terms` (by the records holding each) while those records together stay within
 * `budget`, and always the rarest; ties by term, so one input gives one answer.
 */
export function rarestWithin(terms: readonly { term: string; df: number }[], budget: number): string[] {
  const out: string[] = [];
  let spent = 0;
  for (const { term, df } of [...terms].filter((t) => t.df > 0).sort((a, b) => a.df - b.df || (a.term < b.term ? -1 : a.term > b.term ? 1 : 0))) {
    if (out.length > 0 && spent + df > budget) break;
    out.push(term);
    spent += df;
  }
  return out;
}

/** A lexical search waiting for its batch's statement. */
interface LexicalRequest {
  kind: LexicalKind;
  /** Per term, its forms: the query's terms, then those counted only at their best (LexicalQuery.anyOf). */
  forms: string[][];
  /** How many of `forms` are the query's terms. */
  summed: number;
  limit: number;
  resolve: (hits: LexicalHit[]) => void;
  reject: (err: unknown) => void;
}

/**
 * Takes the rows' terms out of the BM25 statistics (migration 7): each term's record count, and
 * the kind's record and term counts, from the tsvectors as stored, before the rows are replaced.
 */
async function removeTermCounts(db: Queryable, userId: string, kinds: readonly string[], ids: readonly string[]): Promise<void> {
  await db.query(
    `WITH r AS (SELECT kind, terms FROM longterm_records WHERE user_id = $1 AND (kind, id) IN (SELECT * FROM unnest($2::text[], $3::text[]))),
     t AS (INSERT INTO longterm_term_stats (user_id, kind, term, df)
           SELECT $1, r.kind, term, -count(*) FROM r, unnest(tsvector_to_array(r.terms)) AS term GROUP BY r.kind, term
           ON CONFLICT (user_id, kind, term) DO UPDATE SET df = longterm_term_stats.df + EXCLUDED.df)
     INSERT INTO longterm_kind_stats (user_id, kind, docs, terms)
       SELECT $1, kind, -count(*), -coalesce(sum(length(terms)), 0) FROM r GROUP BY kind
     ON CONFLICT (user_id, kind) DO UPDATE SET docs = longterm_kind_stats.docs + EXCLUDED.docs, terms = longterm_kind_stats.terms + EXCLUDED.terms`,
    [userId, [...kinds], [...ids]],
  );
}

/** Adds rows' terms (each row's distinct index terms, as its tsvector holds them) to the BM25 statistics. */
async function addTermCounts(db: Queryable, userId: string, kinds: readonly string[], termsOf: readonly (readonly string[])[]): Promise<void> {
  const df = new Map<string, number>();
  const perKind = new Map<string, { docs: number; terms: number }>();
  termsOf.forEach((terms, i) => {
    const kind = kinds[i] as string;
    const k = perKind.get(kind) ?? { docs: 0, terms: 0 };
    perKind.set(kind, { docs: k.docs + 1, terms: k.terms + terms.length });
    for (const t of terms) df.set(`${kind} ${t}`, (df.get(`${kind} ${t}`) ?? 0) + 1);
  });
  const entries = [...df].map(([key, n]) => [key.slice(0, key.indexOf(' ')), key.slice(key.indexOf(' ') + 1), n] as const);
  await db.query(
    `WITH t AS (INSERT INTO longterm_term_stats (user_id, kind, term, df) SELECT $1, k, t, n FROM unnest($2::text[], $3::text[], $4::int[]) AS x(k, t, n)
                ON CONFLICT (user_id, kind, term) DO UPDATE SET df = longterm_term_stats.df + EXCLUDED.df)
     INSERT INTO longterm_kind_stats (user_id, kind, docs, terms) SELECT $1, k, d, n FROM unnest($5::text[], $6::bigint[], $7::bigint[]) AS y(k, d, n)
     ON CONFLICT (user_id, kind) DO UPDATE SET docs = longterm_kind_stats.docs + EXCLUDED.docs, terms = longterm_kind_stats.terms + EXCLUDED.terms`,
    [userId, entries.map((e) => e[0]), entries.map((e) => e[1]), entries.map((e) => e[2]), [...perKind.keys()], [...perKind.values()].map((k) => k.docs), [...perKind.values()].map((k) => k.terms)],
  );
}

/**
 * One user's reads. A reader serves one request (the service takes a new one per call; a write
 * section's sees what was committed before it began): a record read by id or in a list is kept for
 * the reader's later reads by id, so a search reads (and opens) each record once, not again when
 * it loads its results.
 */
class PostgresReader implements LongTermReader {
  private readonly known = new Map<string, unknown>();
  /** Records as text, from the lexical candidates a search ranked first: parsed and opened when read. */
  private readonly unread = new Map<string, string>();
  /** Lexical searches asked for in the current turn of the event loop: one statement answers them all. */
  private lexical: LexicalRequest[] | undefined;

  constructor(
    private readonly db: Queryable,
    private readonly userId: string,
    private readonly sealer: Sealer,
    private readonly vectors: VectorCache,
  ) {}

  /** Opens `data` and keeps it as the record `kind`:`id` for later reads by id. */
  private opened<T>(kind: LongTermRecord['kind'], id: string, data: unknown): T {
    const record = this.sealer.open<T>(data);
    this.known.set(`${kind}:${id}`, record);
    return record;
  }

  private async byIds<T>(kind: LongTermRecord['kind'], ids: readonly string[]): Promise<T[]> {
    for (const id of ids) {
      const text = this.unread.get(`${kind}:${id}`);
      if (text === undefined) continue;
      this.unread.delete(`${kind}:${id}`);
      this.opened(kind, id, JSON.parse(text));
    }
    const wanted = [...new Set(ids)].filter((id) => !this.known.has(`${kind}:${id}`));
    if (wanted.length > 0) {
      // One primary-key lookup per id, whatever the statistics say: right after a bulk import (not
      // analyzed yet) `id = ANY(...)`, or this lateral join without its OFFSET 0 fence, was planned
      // as a scan of every row of the user and kind.
      const { rows } = await this.db.query<{ id: string; data: unknown }>(
        'SELECT r.id, r.data FROM unnest($3::text[]) AS i(id) CROSS JOIN LATERAL (SELECT id, data FROM longterm_records WHERE user_id = $1 AND kind = $2 AND id = i.id OFFSET 0) r',
        [this.userId, kind, wanted],
      );
      for (const r of rows) this.opened(kind, r.id, r.data);
    }
    return ids.flatMap((id) => {
      const record = this.known.get(`${kind}:${id}`);
      return record === undefined ? [] : [record as T];
    });
  }
  getMessages = (ids: readonly string[]) => this.byIds<StoredMessage>('message', ids);
  getFacts = (ids: readonly string[]) => this.byIds<Fact>('fact', ids);
  getEntities = (ids: readonly string[]) => this.byIds<Entity>('entity', ids);
  getEpisodes = (ids: readonly string[]) => this.byIds<Episode>('episode', ids);
  getSummaries = (ids: readonly string[]) => this.byIds<ConversationSummary>('summary', ids);

  async findEntities(names: readonly string[]): Promise<Entity[]> {
    if (names.length === 0) return [];
    const { rows } = await this.db.query<{ id: string; data: unknown }>("SELECT id, data FROM longterm_records WHERE user_id = $1 AND kind = 'entity' AND names && $2 ORDER BY id", [
      this.userId,
      names.flatMap((n) => this.sealer.queryTerms(n)),
    ]);
    return rows.map((r) => this.opened<Entity>('entity', r.id, r.data));
  }

  /**
   * Facts of given entities are read through the subject and object indexes, one fenced probe per
   * entity (as byIds does): without statistics `subject_id = ANY(...) OR object_id = ANY(...)` was
   * planned as a scan of all the user's facts (5 ms at 5,000 facts, twice per search naming one).
   * A predicate's base narrows by its column (migration 14; facts not keyed yet are read too), and
   * again after the rows: a keyed hash may collide.
   */
  async listFacts(filter: FactFilter): Promise<Fact[]> {
    const params: unknown[] = [this.userId];
    const where: string[] = [];
    let base: number | undefined;
    if (filter.predicateBase !== undefined) {
      params.push(this.sealer.queryTerms(filter.predicateBase));
      base = params.length;
      where.push(`(r.predicate_base = ANY($${base}) OR r.predicate_base IS NULL)`);
    }
    const columns = 'id, data, sort_at, subject_id, predicate_base';
    // With a base, an entity's probe is two: the facts keyed with one of its forms, and those not
    // keyed yet. A form at a time: as `= ANY(...)`, unanalyzed rows had the index filter every fact
    // of the subject (13 ms at 20,000).
    const probe = (column: string) => {
      const one = (narrow: string) => `(SELECT ${columns} FROM longterm_records WHERE user_id = $1 AND kind = 'fact' AND ${column} = e.id${narrow} OFFSET 0)`;
      if (base === undefined) return one('');
      const keyed = `(SELECT k.* FROM unnest($${base}::text[]) AS b(form) CROSS JOIN LATERAL ${one(' AND predicate_base = b.form')} k)`;
      return `${keyed} UNION ALL ${one(' AND predicate_base IS NULL')}`;
    };
    let from = `(SELECT ${columns} FROM longterm_records WHERE user_id = $1 AND kind = 'fact') r`;
    if (filter.entityIds || filter.subjectIds) {
      params.push([...new Set(filter.entityIds ?? filter.subjectIds)]);
      const probes = filter.entityIds ? `${probe('subject_id')} UNION ALL ${probe('object_id')}` : probe('subject_id');
      from = `(SELECT DISTINCT ON (f.id) f.* FROM unnest($${params.length}::text[]) AS e(id) CROSS JOIN LATERAL (${probes}) f) r`;
    }
    if (filter.entityIds && filter.subjectIds) {
      params.push(filter.subjectIds);
      where.push(`r.subject_id = ANY($${params.length})`);
    }
    if (filter.openOnly) where.push("r.data->'validTo' = 'null'::jsonb");
    const limit = filter.limit === undefined ? '' : ` LIMIT ${Math.max(0, Math.floor(filter.limit))}`;
    const { rows } = await this.db.query<{ id: string; data: unknown }>(
      `SELECT r.id, r.data FROM ${from}${where.length ? ` WHERE ${where.join(' AND ')}` : ''} ORDER BY r.sort_at DESC, r.id DESC${limit}`,
      params,
    );
    const facts = rows.map((r) => this.opened<Fact>('fact', r.id, r.data));
    const wanted = filter.predicateBase;
    return wanted === undefined ? facts : facts.filter((f) => predicateKey(f.predicate).base === wanted);
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
   * BM25 over the kind's rows (k1 1.2, b 0.75, as the embedded index ranks), its statistics from
   * longterm_term_stats / longterm_kind_stats (migration 7; a record's length is its distinct
   * terms, and a term counts once in it: records are short). The candidates come from one call of
   * longterm_lexical_candidates (migrations 10 and 11): rows with the query's rarest terms while their rows
   * together stay within CANDIDATE_BUDGET (always the rarest one), and from pairs of the other terms
   * expected in few rows: a row holding one common term only ranks low anyway, and reading every row
   * of a common term is most of a search's time. Scored here, with the statistics it returns.
   * Searches asked for in one turn of the event loop share one statement (searchBatch).
   */
  async searchText(kind: LexicalKind, query: LexicalQuery, limit: number): Promise<LexicalHit[]> {
    const terms = [...new Set(query.terms)];
    const anyOf = [...new Set(query.anyOf ?? [])].filter((t) => !terms.includes(t));
    if (terms.length + anyOf.length === 0 || limit <= 0) return [];
    // Without anyOf nothing is awaited before enqueue: the search joins this turn's batch.
    const kept = anyOf.length ? await this.rarestOf(kind, anyOf) : [];
    if (terms.length + kept.length === 0) return [];
    return this.enqueue(kind, terms, kept, limit);
  }

  /**
   * Of `anyOf` (a category's instances, hundreds of terms), those the user's rows hold, the rarest
   * while their rows together stay within CANDIDATE_BUDGET (always the rarest). Sent whole,
   * longterm_lexical_candidates paired the common ones two by two: 40 instances present at 95,000
   * messages made a tsquery of hundreds of pairs, and a search took 2–3 s. A row holding only a
   * common instance ranks low anyway (its best term counts, not their sum).
   */
  private async rarestOf(kind: LexicalKind, anyOf: readonly string[]): Promise<string[]> {
    const forms = anyOf.map((t) => this.sealer.queryTerms(t));
    const { rows } = await this.db.query<{ t: number; df: string }>(
      `SELECT f.t, sum(c.df)::bigint AS df FROM unnest($3::text[], $4::int[]) AS f(form, t)
         CROSS JOIN LATERAL (SELECT s.df FROM longterm_term_stats s WHERE s.user_id = $1 AND s.kind = $2 AND s.term = f.form AND s.df > 0 OFFSET 0) c
        GROUP BY f.t`,
      [this.userId, kind, forms.flat(), forms.flatMap((f, i) => f.map(() => i))],
    );
    return rarestWithin(
      rows.map((r) => ({ term: anyOf[r.t] as string, df: Number(r.df) })),
      CANDIDATE_BUDGET,
    );
  }

  private enqueue(kind: LexicalKind, terms: readonly string[], anyOf: readonly string[], limit: number): Promise<LexicalHit[]> {
    return new Promise((resolve, reject) => {
      if (!this.lexical) {
        this.lexical = [];
        queueMicrotask(() => void this.searchBatch());
      }
      this.lexical.push({ kind, forms: [...terms, ...anyOf].map((t) => this.sealer.queryTerms(t)), summed: terms.length, limit, resolve, reject });
    });
  }

  /**
   * The lexical searches of one turn (a search asks for every kind, and the entities named, at
   * once) in one statement, each scored by BM25; the records of each one's hits are kept unread.
   */
  private async searchBatch(): Promise<void> {
    const requests = this.lexical ?? [];
    this.lexical = undefined;
    try {
      const { rows } = await this.db.query<CandidateRow>(
        `SELECT k.n, c.id, c.len, c.holds, c.docs, c.total_terms, c.term_index, c.dfs, c.data
           FROM jsonb_to_recordset($2::jsonb) AS k(n int, kind text, forms text[], form_terms int[], wanted int)
           CROSS JOIN LATERAL longterm_lexical_candidates($1, k.kind, k.forms, k.form_terms, $3, $4, k.wanted) WITH ORDINALITY AS c
          ORDER BY k.n, c.ordinality`,
        [
          this.userId,
          JSON.stringify(requests.map((r, n) => ({ n, kind: r.kind, forms: r.forms.flat(), form_terms: r.forms.flatMap((f, i) => f.map(() => i)), wanted: r.limit }))),
          CANDIDATE_BUDGET,
          CANDIDATE_BUDGET * 3,
        ],
      );
      const answers = requests.map((): CandidateRow[] => []);
      for (const row of rows) answers[row.n]?.push(row);
      requests.forEach((r, n) => r.resolve(this.ranked(r, answers[n] ?? [])));
    } catch (err) {
      for (const r of requests) r.reject(err);
    }
  }

  /** One search's candidates by BM25, best `limit` first; their records kept unread. */
  private ranked(request: LexicalRequest, rows: readonly CandidateRow[]): LexicalHit[] {
    const stats = rows[0];
    if (!stats || stats.id !== null) return [];
    const [docs, length] = [Number(stats.docs), Number(stats.total_terms)];
    const idf = (stats.dfs ?? []).map((df) => bm25Idf(docs, Number(df)));
    const grouped = (stats.term_index ?? []).map((t) => t >= request.summed);
    const avgdl = length / docs || 1;
    const scored = rows.slice(1).map((r) => {
      const norm = (K1 + 1) / (1 + K1 * (1 - B + (B * (r.len ?? 0)) / avgdl));
      let score = 0;
      let best = 0;
      (r.holds ?? []).forEach((held, i) => {
        if (!held) return;
        if (grouped[i]) best = Math.max(best, (idf[i] ?? 0) * norm);
        else score += (idf[i] ?? 0) * norm;
      });
      return { id: r.id as string, score: score + best, data: r.data };
    });
    const best = scored.sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)).slice(0, request.limit);
    for (const hit of best) {
      const key = `${request.kind}:${hit.id}`;
      if (hit.data !== null && !this.known.has(key)) this.unread.set(key, hit.data);
    }
    return best.map((hit) => ({ id: hit.id, score: hit.score }));
  }

  /**
   * pg_trgm over the user's entity names: longterm_similar_entities of migrations 6 and 10, through
   * its trigram index; each entity by its key (a fenced probe: unanalyzed, the join hashed every
   * entity of the user).
   */
  async similarEntities(phrases: readonly string[], threshold: number, limit: number): Promise<SimilarEntity[]> {
    if (phrases.length === 0 || limit <= 0) return [];
    const { rows } = await this.db.query<{ entity_id: string; data: unknown; similarity: number }>(
      `SELECT s.entity_id, r.data, s.similarity FROM longterm_similar_entities($1, $2::text[], $3::real) s
       CROSS JOIN LATERAL (SELECT data FROM longterm_records WHERE user_id = $1 AND kind = 'entity' AND id = s.entity_id OFFSET 0) r
       ORDER BY s.similarity DESC, s.entity_id LIMIT $4`,
      [this.userId, [...phrases], threshold, limit],
    );
    return rows.map((r) => ({ entity: this.opened<Entity>('entity', r.entity_id, r.data), similarity: Number(r.similarity) }));
  }

  /**
   * Dot products (vectors are unit length) with the user's vectors of those kinds, best `limit` per
   * kind: in the process, from the vectors it keeps (./vector-cache.ts), or in SQL for a kind with more
   * vectors than it keeps.
   */
  async nearest(kinds: readonly MemoryKind[], vector: Float32Array, limit: number): Promise<DenseHit[]> {
    if (kinds.length === 0 || vector.length === 0) return [];
    const hits: DenseHit[] = [];
    const inSql: MemoryKind[] = [];
    const held = await this.vectors.read(this.db, this.userId, kinds);
    for (const kind of [...new Set(kinds)].sort()) {
      const vectors = held.get(kind);
      if (vectors) hits.push(...nearestOf(vector, vectors, limit).map((hit) => ({ kind, ...hit })));
      else inSql.push(kind);
    }
    return inSql.length === 0 ? hits : [...hits, ...(await this.nearestInSql(inSql, vector, limit))];
  }

  private async nearestInSql(kinds: readonly MemoryKind[], vector: Float32Array, limit: number): Promise<DenseHit[]> {
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
  private readonly vectors: VectorCache;

  /**
   * @param options.sealer seals records, vectors' rows' content and the audit (THREADLINE_ENCRYPTION_KEY); the full-text index holds keyed hashes then. @default PLAIN
   * @param options.vectorCacheFloats the floats of dense vectors the process keeps (./vector-cache.ts). @default VECTOR_CACHE_FLOATS
   */
  constructor(connectionString: string, options: { sealer?: Sealer; vectorCacheFloats?: number } = {}) {
    this.pool = openPool({ connectionString, max: 4 });
    this.sealer = options.sealer ?? PLAIN;
    this.vectors = new VectorCache(options.vectorCacheFloats);
  }

  async setup(): Promise<void> {
    await this.sealer.ready();
    await this.transaction(applyMigrations);
    await this.keyFacts();
  }

  /**
   * Keys the facts stored before migration 14 by their predicate's base, a batch at a time (a
   * deployment's first start after it; later ones find none). A fact that cannot be opened (its key
   * is gone) stays unkeyed: found as before, and failing as before when read. Processes starting
   * together key the same rows alike; a row a write keyed meanwhile is left as it was written.
   */
  private async keyFacts(): Promise<void> {
    let after = ['', ''];
    for (;;) {
      const { rows } = await this.pool.query<{ user_id: string; id: string; data: unknown }>(
        "SELECT user_id, id, data FROM longterm_records WHERE kind = 'fact' AND predicate_base IS NULL AND (user_id, id) > ($1, $2) ORDER BY user_id, id LIMIT 1000",
        after,
      );
      const last = rows.at(-1);
      if (!last) return;
      after = [last.user_id, last.id];
      const keyed = rows.flatMap((r) => {
        try {
          return [{ user: r.user_id, id: r.id, base: this.sealer.indexTerm(predicateKey(this.sealer.open<Fact>(r.data).predicate).base) }];
        } catch {
          return [];
        }
      });
      await this.pool.query(
        `UPDATE longterm_records r SET predicate_base = k.base FROM unnest($1::text[], $2::text[], $3::text[]) AS k(user_id, id, base)
          WHERE r.user_id = k.user_id AND r.kind = 'fact' AND r.id = k.id AND r.predicate_base IS NULL`,
        [keyed.map((k) => k.user), keyed.map((k) => k.id), keyed.map((k) => k.base)],
      );
    }
  }

  async end(): Promise<void> {
    await this.pool.end();
  }

  reader(userId: string): LongTermReader {
    return new PostgresReader(this.pool, userId, this.sealer, this.vectors);
  }

  write<T>(userId: string, fn: (tx: LongTermWriter) => Promise<T>): Promise<T> {
    return this.transaction(async (db) => {
      await db.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`threadline.longterm:${userId}`]);
      const records: LongTermRecord[] = [];
      const audit: LongTermAuditEntry[] = [];
      const vectors: RecordVector[] = [];
      const reader = new PostgresReader(db, userId, this.sealer, this.vectors);
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
      // One statement for the batch (an import's thousand messages), the BM25 statistics moved by
      // what the rows held before and hold after; a record put twice in one section is put once, as last given.
      const batch = [...new Map(records.map((item) => [`${item.kind}:${item.record.id}`, item])).values()];
      if (batch.length > 0) {
        const kinds = batch.map((item) => item.kind);
        const ids = batch.map((item) => item.record.id);
        await removeTermCounts(db, userId, kinds, ids);
        const columns = batch.map(columnsOf);
        const termsOf = batch.map((item) => [...new Set(indexTerms(this.sealer, analyze(searchableText(item))))]);
        await db.query(
          `INSERT INTO longterm_records (user_id, kind, id, data, terms, names, subject_id, object_id, session_id, sort_at, predicate_base)
           SELECT $1, r.kind, r.id, r.data, array_to_tsvector(string_to_array(r.terms, ' ')), ARRAY(SELECT jsonb_array_elements_text(r.names)), r.subject_id, r.object_id, r.session_id, r.sort_at, r.predicate_base
             FROM unnest($2::text[], $3::text[], $4::jsonb[], $5::text[], $6::jsonb[], $7::text[], $8::text[], $9::text[], $10::text[], $11::text[])
                  AS r(kind, id, data, terms, names, subject_id, object_id, session_id, sort_at, predicate_base)
           ON CONFLICT (user_id, kind, id) DO UPDATE SET data = EXCLUDED.data, terms = EXCLUDED.terms, names = EXCLUDED.names,
             subject_id = EXCLUDED.subject_id, object_id = EXCLUDED.object_id, session_id = EXCLUDED.session_id, sort_at = EXCLUDED.sort_at,
             predicate_base = EXCLUDED.predicate_base`,
          [
            userId,
            kinds,
            ids,
            batch.map((item) => JSON.stringify(sealRecordData(this.sealer, item))),
            termsOf.map((terms) => terms.join(' ')),
            columns.map((c) => JSON.stringify(indexTerms(this.sealer, c.names))),
            columns.map((c) => c.subjectId),
            columns.map((c) => c.objectId),
            columns.map((c) => c.sessionId),
            columns.map((c) => c.sortAt),
            columns.map((c) => (c.predicateBase === null ? null : this.sealer.indexTerm(c.predicateBase))),
          ],
        );
        await addTermCounts(db, userId, kinds, termsOf);
      }
      for (const item of records) {
        if (item.kind !== 'entity') continue;
        await db.query('DELETE FROM longterm_entity_names WHERE user_id = $1 AND entity_id = $2', [userId, item.record.id]);
        await db.query('INSERT INTO longterm_entity_names (user_id, entity_id, name) SELECT $1, $2, unnest($3::text[])', [userId, item.record.id, columnsOf(item).names]);
      }
      // After the records: a vector lands on its row (the upsert above leaves an existing one alone).
      // One statement for the section's vectors (an import's thousand), the last given for a record.
      const landed = [...new Map(vectors.map((v) => [`${v.kind}:${v.id}`, v])).values()];
      if (landed.length > 0) {
        await db.query(
          `UPDATE longterm_records r SET embedding = v.vector::real[], vector_n = nextval('longterm_vector_seq')
             FROM unnest($2::text[], $3::text[], $4::text[]) AS v(kind, id, vector) WHERE r.user_id = $1 AND r.kind = v.kind AND r.id = v.id`,
          [userId, landed.map((v) => v.kind), landed.map((v) => v.id), landed.map((v) => `{${Array.from(v.vector).join(',')}}`)],
        );
      }
      await this.appendAuditIn(db, userId, audit);
      return result;
    });
  }

  /** Rows of `from` become rows of `to` when `to` has no record yet, in one transaction under `to`'s write lock. */
  async adoptUser(from: string, to: string): Promise<void> {
    if (from === to) return;
    await this.transaction(async (db) => {
      await db.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`threadline.longterm:${to}`]);
      const { rowCount } = await db.query('SELECT 1 FROM longterm_records WHERE user_id = $1 LIMIT 1', [to]);
      if (rowCount) return;
      for (const table of ['longterm_records', 'longterm_audit', 'longterm_term_stats', 'longterm_kind_stats', 'longterm_entity_names']) {
        await db.query(`UPDATE ${table} SET user_id = $2 WHERE user_id = $1`, [from, to]);
      }
    });
    this.vectors.forget(from);
    this.vectors.forget(to);
  }

  appendAudit(userId: string, entries: readonly LongTermAuditEntry[]): Promise<void> {
    return this.appendAuditIn(this.pool, userId, entries);
  }

  /** Entries in one statement, numbered in their order. */
  private async appendAuditIn(db: Queryable, userId: string, entries: readonly LongTermAuditEntry[]): Promise<void> {
    if (entries.length === 0) return;
    await db.query('INSERT INTO longterm_audit (user_id, entry) SELECT $1, e FROM unnest($2::jsonb[]) WITH ORDINALITY AS x(e, i) ORDER BY i', [
      userId,
      entries.map((e) => JSON.stringify(sealAuditEntry(this.sealer, e))),
    ]);
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
