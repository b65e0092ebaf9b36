/**
 * Long-term memory (seed 002): the contract between its storage and retrieval
 * (stores under src/store/longterm/, the service) and what uses it (the
 * react_mem loop, the memory tools, the REST API). Everything is scoped to one
 * user: no method takes a query that can reach another user's memory.
 */
import type { EpisodeInput, FactInput } from '../planning/memory-schemas';

export type MemoryKind = 'message' | 'fact' | 'episode' | 'summary';
export const MEMORY_KINDS = ['message', 'fact', 'episode', 'summary'] as const satisfies readonly MemoryKind[];

/**
 * Whose words a record holds (issue 32 §5): the person said it, a tool returned it (so it is shown
 * marked, and cannot pass for the person's), or the model inferred it. Absent on older records.
 */
export const FACT_SOURCES = ['person', 'tool', 'model'] as const;
export type FactSource = (typeof FACT_SOURCES)[number];

/** Where a long-term record came from. `messageIds` are the ids of the conversation messages (given ids when imported). */
export interface Provenance {
  sessionId?: string;
  runId?: string;
  messageIds: string[];
  source?: FactSource;
}

/** Who wrote a long-term record and why: recorded in the audit, as for a memory-thread operation. */
export interface WriteMeta {
  origin: 'agent' | 'person' | 'system';
  reason: string;
  runId?: string;
  sessionId?: string;
}

/**
 * Who reads long-term memory and why: recorded in the audit (seed 001 audits reads as well as
 * writes). A read whose caller gives none is recorded as the system's, named by what it read.
 */
export type ReadMeta = WriteMeta;

export interface Entity {
  id: string;
  userId: string;
  name: string;
  /** e.g. person, place, organization, thing, preference; 'unknown' when no one said. */
  type: string;
  aliases: string[];
  createdAt: string;
}

export interface Fact {
  id: string;
  userId: string;
  subjectId: string;
  subject: string;
  predicate: string;
  objectId: string | null;
  object: string;
  /** The fact as a sentence ("Alice lives in Lisbon"). */
  text: string;
  /** When it became true (ISO); defaults to when it was recorded. */
  validFrom: string;
  /** When it stopped being true (ISO): set when superseded or ended; null while valid. */
  validTo: string | null;
  recordedAt: string;
  /** 0..1; a duplicate raises it instead of adding a copy. */
  confidence: number;
  /** How many times it was stated (1 + duplicates merged into it). */
  mentions: number;
  supersedes: string | null;
  supersededBy: string | null;
  provenance: Provenance;
}

export interface Episode {
  id: string;
  userId: string;
  /** One task-like invocation, or a whole conversation (promotion). */
  scope: 'invocation' | 'conversation';
  goal: string;
  steps: string[];
  outcome: string;
  lessons: string[];
  at: string;
  provenance: Provenance;
  /** The invocation was a run a schedule started, not a person's message (issue 33): which, and when it was due. */
  scheduled?: { scheduleId: string; dueAt: string };
}

/** Conversation memory: one summary per invocation, appended to its session. */
export interface ConversationSummary {
  id: string;
  userId: string;
  sessionId: string;
  text: string;
  at: string;
  provenance: Provenance;
}

/** Recall memory: every conversation message, searchable by text and by id. */
export interface StoredMessage {
  id: string;
  userId: string;
  sessionId: string;
  role: 'user' | 'assistant';
  name?: string;
  text: string;
  at: string;
  /** The turns before and after this one in its session, when they came in the same write (an import). */
  prevId?: string;
  nextId?: string;
}

export interface SearchHit {
  kind: MemoryKind;
  id: string;
  text: string;
  score: number;
  at?: string;
  source: Provenance;
}

export interface SearchQuery {
  query: string;
  /** @default 10 */
  k?: number;
  /** @default every kind */
  kinds?: MemoryKind[];
  /** Facts as they were believed at this moment (ISO); other kinds recorded after it are left out. */
  asOf?: string;
  /** Prefer (not restrict to) this conversation's records. */
  sessionId?: string;
}

/** What the react_mem loop puts into a run's prompt at invocation start. */
export interface InvocationContext {
  facts: Fact[];
  /** The entities the facts name, with their aliases. */
  entities: Entity[];
  episodes: Episode[];
  /** This conversation's summaries, oldest first. */
  summaries: ConversationSummary[];
}

// The wire shapes of facts and episodes (planning/), and the memory passes' replies (with their calls).
export { EpisodeInputSchema, FactInputSchema } from '../planning/memory-schemas';
export type { EpisodeInput, FactInput } from '../planning/memory-schemas';
export { MemoryExtractionSchema, MemoryPromotionSchema } from '../calls/memory-passes';
export type { MemoryExtraction, MemoryPromotion } from '../calls/memory-passes';

export interface RecordedFact {
  fact: Fact;
  /** added: new; strengthened: a duplicate of `fact`; superseded: `fact` replaced `previous`, which now has an end of validity. */
  outcome: 'added' | 'strengthened' | 'superseded';
  previous?: Fact;
}

/**
 * The long-term memory of every user. Implemented once over a store (embedded under DATA_DIR,
 * PostgreSQL); writes are idempotent where they carry an id (messages), run through observers
 * (secret redaction) and are audited; every read is audited too, by whom the `reader` names.
 */
export interface LongTermMemory {
  /** Adds conversation messages; a message whose id the user already has is left as it is. */
  addMessages(userId: string, messages: Omit<StoredMessage, 'userId'>[], meta: WriteMeta): Promise<number>;
  getMessage(userId: string, messageId: string, reader?: ReadMeta): Promise<StoredMessage | null>;

  /** Records a fact: a duplicate strengthens the existing one, a contradiction supersedes it (never deletes). */
  recordFact(userId: string, input: FactInput, provenance: Provenance, meta: WriteMeta): Promise<RecordedFact>;
  /** Ends a fact's validity (recorded, not erased); null when the user has no such fact. */
  endFact(userId: string, factId: string, meta: WriteMeta, at?: string): Promise<Fact | null>;
  getFact(userId: string, factId: string, reader?: ReadMeta): Promise<Fact | null>;
  /** The chain of facts a fact belongs to (what it superseded and what superseded it), oldest first. */
  factHistory(userId: string, factId: string, reader?: ReadMeta): Promise<Fact[]>;
  /** Facts matching `q` (all when absent), valid at `asOf` (now when absent) unless `includeInvalid`. */
  listFacts(userId: string, filter: { q?: string; asOf?: string; includeInvalid?: boolean; limit?: number }, reader?: ReadMeta): Promise<Fact[]>;

  recordEpisode(userId: string, input: EpisodeInput, scope: Episode['scope'], provenance: Provenance, meta: WriteMeta, extra?: Pick<Episode, 'scheduled'>): Promise<Episode>;
  listEpisodes(userId: string, filter: { q?: string; limit?: number }, reader?: ReadMeta): Promise<Episode[]>;

  addSummary(userId: string, sessionId: string, text: string, provenance: Provenance, meta: WriteMeta): Promise<ConversationSummary>;
  listSummaries(userId: string, sessionId: string, reader?: ReadMeta): Promise<ConversationSummary[]>;
  /** A conversation's messages (recall memory), oldest first, at most `limit`. */
  listMessages(userId: string, sessionId: string, limit: number, reader?: ReadMeta): Promise<StoredMessage[]>;

  /** Hybrid retrieval (lexical with stemming, entities and aliases, validity and recency, dense vectors when configured), fused. */
  search(userId: string, query: SearchQuery, reader?: ReadMeta): Promise<SearchHit[]>;
  /** What an invocation starts with: relevant facts with their entities, similar episodes, this conversation's summaries. */
  contextFor(userId: string, query: string, options: { sessionId?: string; maxFacts?: number; maxEpisodes?: number }, reader?: ReadMeta): Promise<InvocationContext>;
}
