/**
 * The storage of long-term memory (seed 002): the primitive, per-user operations a backend
 * provides (embedded: `file-store.ts`, in-process: `in-memory-store.ts`, PostgreSQL). Everything
 * takes the user id: a backend never answers across users. The rules — dedupe, supersede,
 * redaction, ranking — live once in the service (src/longterm/service.ts), not in backends.
 */
import type { ConversationSummary, Entity, Episode, Fact, MemoryKind, StoredMessage, WriteMeta } from '../../longterm/contract';

/** One stored record, tagged with its kind. A `put` of an id that exists replaces that record. */
export type LongTermRecord =
  | { kind: 'message'; record: StoredMessage }
  | { kind: 'fact'; record: Fact }
  | { kind: 'entity'; record: Entity }
  | { kind: 'episode'; record: Episode }
  | { kind: 'summary'; record: ConversationSummary };

/** What lexical search may look in: a memory kind, or entities (by name and aliases). */
export type LexicalKind = MemoryKind | 'entity';

/** A lexical query: the raw text (for backends with their own analysis) and its terms as `analyze` (src/longterm/text.ts) gives them. */
export interface LexicalQuery {
  text: string;
  /** Stemmed, stopword-free terms; the file and in-memory stores match on these. */
  terms: string[];
  /**
   * Terms of which a record counts only the best one it holds, added to what `terms` give it: the
   * instances of a category a question asks for (categories.ts). A turn naming one is an answer;
   * summed, a photo's caption naming four ranked above every turn naming one.
   */
  anyOf?: string[];
}

/** One lexical candidate: a record id and a BM25-class relevance score (higher is better; comparable only within one answer). */
export interface LexicalHit {
  id: string;
  score: number;
}

/** The text a record is found by, per kind (one definition for every backend's index). */
export function searchableText(item: LongTermRecord): string {
  switch (item.kind) {
    case 'message':
      return item.record.name ? `${item.record.name}: ${item.record.text}` : item.record.text;
    case 'fact':
      return `${item.record.text} ${item.record.subject} ${item.record.predicate} ${item.record.object}`;
    case 'entity':
      return [item.record.name, ...item.record.aliases].join(' ; ');
    case 'episode':
      return [item.record.goal, ...item.record.steps, item.record.outcome, ...item.record.lessons].join('\n');
    case 'summary':
      return item.record.text;
  }
}

/**
 * A record's dense vector (EMBEDDING_MODEL), unit length so that a dot product is the cosine.
 * Stored beside the record: a later `put` of the record keeps it.
 */
export interface RecordVector {
  kind: MemoryKind;
  id: string;
  vector: Float32Array;
}

/** An entity whose name or an alias is spelt like one of the phrases asked about. */
export interface SimilarEntity {
  entity: Entity;
  /** The best pg_trgm similarity of one of its names (as `normalizeName` gives them) to one of the phrases, 0 to 1. */
  similarity: number;
}

/** One dense candidate: its cosine similarity to the query vector. */
export interface DenseHit {
  kind: MemoryKind;
  id: string;
  score: number;
}

export interface FactFilter {
  /** Facts whose subject is one of these entities. */
  subjectIds?: string[];
  /** Facts whose subject or object is one of these entities. */
  entityIds?: string[];
  /** Only facts without an end of validity. */
  openOnly?: boolean;
  /** Only facts whose predicate has this base (`predicateKey(predicate).base`: "lives in" and "lived in" alike). */
  predicateBase?: string;
  /** Newest recorded first; at most this many. @default all */
  limit?: number;
}

/** One audited long-term write or read: who, why, what it touched, and what the observers changed. */
export interface LongTermAuditEntry {
  id: string;
  userId: string;
  at: string;
  /** A write changed memory, a read only looked (seed 001 audits both); entries written before reads were audited have none: writes. */
  kind?: LongTermAuditKind;
  /**
   * Writes: add_messages, record_fact, end_fact, record_episode, add_summary. Reads (LONGTERM_READ_ACTIONS):
   * search, context, list_facts, get_fact, fact_history, list_episodes, get_message, list_messages, list_summaries, entities.
   */
  action: string;
  /** Ids of the records written, or of those a read returned. */
  targetIds: string[];
  origin: WriteMeta['origin'];
  reason: string;
  runId?: string;
  sessionId?: string;
  /** Observer notes, e.g. "redact-secrets: redacted 1 secret(s)". */
  notes: string[];
  /** Small, action-specific facts (e.g. {outcome: 'superseded', previous: 'fact_…'}). */
  details?: Record<string, unknown>;
}

export const LONGTERM_AUDIT_KINDS = ['read', 'write'] as const;
export type LongTermAuditKind = (typeof LONGTERM_AUDIT_KINDS)[number];

/** Which audit entries to list; every field narrows. */
export interface LongTermAuditFilter {
  kind?: LongTermAuditKind;
  action?: string;
  runId?: string;
  /** ISO timestamps (UTC, as `toISOString` writes them), inclusive. */
  since?: string;
  until?: string;
  /** The newest this many. @default all */
  limit?: number;
}

/** Whether `entry` passes `filter` (the stores without a query language filter with it). */
export function auditEntryMatches(entry: LongTermAuditEntry, filter: LongTermAuditFilter): boolean {
  return (
    (filter.kind === undefined || (entry.kind ?? 'write') === filter.kind) &&
    (filter.action === undefined || entry.action === filter.action) &&
    (filter.runId === undefined || entry.runId === filter.runId) &&
    (filter.since === undefined || entry.at >= filter.since) &&
    (filter.until === undefined || entry.at <= filter.until)
  );
}

/** The reads every store answers for one user, inside and outside a write section. */
export interface LongTermReader {
  getMessages(ids: readonly string[]): Promise<StoredMessage[]>;
  getFacts(ids: readonly string[]): Promise<Fact[]>;
  getEntities(ids: readonly string[]): Promise<Entity[]>;
  getEpisodes(ids: readonly string[]): Promise<Episode[]>;
  getSummaries(ids: readonly string[]): Promise<ConversationSummary[]>;
  /** Entities whose name or an alias, as `normalizeName` gives it, is one of `names`. */
  findEntities(names: readonly string[]): Promise<Entity[]>;
  listFacts(filter: FactFilter): Promise<Fact[]>;
  /** Newest first. */
  listEpisodes(limit: number): Promise<Episode[]>;
  /** The session's summaries, oldest first. */
  listSummaries(sessionId: string): Promise<ConversationSummary[]>;
  /** The session's messages, oldest first, at most `limit`. */
  listMessages(sessionId: string, limit: number): Promise<StoredMessage[]>;
  /** Up to `limit` records of `kind` matching any of the query's terms, best first (BM25-class). */
  searchText(kind: LexicalKind, query: LexicalQuery, limit: number): Promise<LexicalHit[]>;
  /**
   * Up to `limit` entities with a name or alias (normalized) whose trigram similarity to one of
   * `phrases` (normalized) is at least `threshold`, most similar first (ties by id): pg_trgm's
   * `similarity()`, or `trigramSimilarity` of src/longterm/text.ts, its exact equal. `threshold`
   * at least 0.3: PostgreSQL finds candidates with pg_trgm's `%` at that cut.
   */
  similarEntities(phrases: readonly string[], threshold: number, limit: number): Promise<SimilarEntity[]>;
  /** Per kind of `kinds`, up to `limit` records whose vector is most similar to `vector` (same length only), best first. */
  nearest(kinds: readonly MemoryKind[], vector: Float32Array, limit: number): Promise<DenseHit[]>;
}

/**
 * A write section of one user: exclusive across processes (a lock, a transaction), so that
 * read-decide-write sequences (fact dedupe and supersede, message idempotency) never race.
 * Reads see what was committed before the section began; `put` and `audit` take effect
 * together when the section ends (the service never reads back what it put in the same section).
 */
export interface LongTermWriter extends LongTermReader {
  put(records: readonly LongTermRecord[]): void;
  /** Vectors of records (put in this section or before); stored with them. */
  putVectors(vectors: readonly RecordVector[]): void;
  audit(entry: LongTermAuditEntry): void;
}

export interface LongTermStore {
  /** Creates what the backend needs (directories, tables); idempotent. */
  setup(): Promise<void>;
  /** Releases files and connections. */
  end(): Promise<void>;
  /** The reads of one user's memory. */
  reader(userId: string): LongTermReader;
  /** Runs `fn` in a write section of `userId`'s memory; what it put and audited is stored when it returns (nothing when it throws). */
  write<T>(userId: string, fn: (tx: LongTermWriter) => Promise<T>): Promise<T>;
  /**
   * Appends audit entries outside a write section — records of reads, which change no record, so
   * they take no part in a section's all-or-nothing (an entry id already stored may be kept twice).
   */
  appendAudit(userId: string, entries: readonly LongTermAuditEntry[]): Promise<void>;
  /** The user's audit (writes and reads), newest first, narrowed by `filter`. */
  auditLog(userId: string, filter?: LongTermAuditFilter): Promise<LongTermAuditEntry[]>;
  /**
   * Moves what was stored under `from` to `to` when `to` has nothing yet (user-keyed.ts: memory a
   * user kept under `Alice` before ids were keyed by their lower case). Persistent backends only.
   */
  adoptUser?(from: string, to: string): Promise<void>;
}
