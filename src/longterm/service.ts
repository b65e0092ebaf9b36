/**
 * The long-term memory of every user (seed 002), implemented once over a LongTermStore: texts
 * pass the memory observers (secret redaction), every write and every read is audited in the
 * store, fact dedupe and supersede happen inside the user's write section, and retrieval is hybrid
 * (retrieval.ts). With an embedder (EMBEDDING_MODEL), every message, fact, episode and summary
 * gets a dense vector when written — computed before the write section, so no lock waits on the
 * embeddings server — and the query's vector joins the fusion. An embedding that fails leaves the
 * record without a vector (logged), never unwritten.
 */
import { randomBytes } from 'node:crypto';
import { randomIds } from '../memory/ids';
import type { MemoryObserver } from '../memory/observers';
import { searchableText, type LongTermAuditEntry, type LongTermAuditFilter, type LongTermReader, type LongTermRecord, type LongTermStore, type RecordVector } from '../store/longterm/store';
import { ReadAudit, type ReadAuditOptions } from '../store/read-audit';
import type {
  ConversationSummary,
  Entity,
  Episode,
  EpisodeInput,
  Fact,
  FactInput,
  MemoryKind,
  InvocationContext,
  LongTermMemory,
  Provenance,
  ReadMeta,
  RecordedFact,
  SearchHit,
  SearchQuery,
  StoredMessage,
  WriteMeta,
} from './contract';
import type { Embedder } from './embedder';
import { chainOf, decide, isAliasPredicate, predicateKey, strengthened, validAt } from './facts';
import { screenTexts } from './redact';
import { entitiesNamed, isSelf, MAX_QUERY_CHARS, retrieve, SELF_ENTITY, type DenseRanker } from './retrieval';
import { normalizeName, words } from './text';
import { strongerSource } from './fact-source';
import type { LongTermReadAction } from './audit-actions';

/** Confidence of a fact stated once: by a person, or inferred by the agent. */
const FIRST_CONFIDENCE = { person: 0.9, agent: 0.6, system: 0.6 } as const;
/** Objects this short are things (entities) the graph can link through; longer ones are descriptions. */
const MAX_ENTITY_WORDS = 6;

export interface LongTermServiceOptions {
  store: LongTermStore;
  /** Run over every text written (redactSecrets in production). @default none */
  observers?: readonly MemoryObserver[];
  /** @default () => new Date() */
  now?: () => Date;
  /** Dense similarity joins the fusion when given; by default the embedder's (below). */
  dense?: DenseRanker;
  /** Embeds what is written and what is searched (EMBEDDING_MODEL). @default none: no vectors */
  embedder?: Embedder;
  /** Where a failed embedding is reported (the record is stored without its vector). @default console.warn */
  warn?: (message: string, details: Record<string, unknown>) => void;
  /** Whether reads are recorded in the audit. @default true */
  auditReads?: boolean;
  /** Batching of recorded reads. */
  readAudit?: ReadAuditOptions;
}

/** A read record names at most this many of the records it returned (and how many there were). */
const MAX_AUDITED_IDS = 100;
/** Query texts are kept in the audit up to this many characters. */
const clip = (text: string) => (text.length > 200 ? `${text.slice(0, 200)}…` : text);
const idOf = (record: { id: string } | null): string[] => (record ? [record.id] : []);
const idsOf = (records: readonly { id: string }[]): string[] => records.map((r) => r.id);
const dropUndefined = (o: Record<string, unknown>) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));

/** A conversation brought in by `importConversations` (the REST import's body). */
export interface ImportedConversation {
  sessionId?: string | undefined;
  title?: string | undefined;
  messages: { id?: string | undefined; role: 'user' | 'assistant'; name?: string | undefined; text: string; at?: string | undefined }[];
}

const newId = (prefix: string) => `${prefix}_${randomBytes(8).toString('hex')}`;
const unique = <T>(items: Iterable<T>) => [...new Set(items)];

/** `provenance` with `source` when there is one (older records have none). */
const withSource = (provenance: Provenance, source: Provenance['source']): Provenance => (source ? { ...provenance, source } : provenance);

export class LongTermService implements LongTermMemory {
  private readonly store: LongTermStore;
  private readonly observers: readonly MemoryObserver[];
  private readonly now: () => Date;
  /** The last fact recording time given (ms since the epoch): see recordingTime. */
  private lastRecordedMs = 0;
  private readonly dense: DenseRanker | undefined;
  private readonly embedder: Embedder | undefined;
  private readonly warn: (message: string, details: Record<string, unknown>) => void;
  private readonly messageIds = randomIds();
  private readonly readAudit: ReadAudit<LongTermAuditEntry> | undefined;

  constructor(options: LongTermServiceOptions) {
    this.store = options.store;
    this.observers = options.observers ?? [];
    this.now = options.now ?? (() => new Date());
    this.embedder = options.embedder;
    this.warn = options.warn ?? ((message, details) => console.warn(message, details));
    this.dense = options.dense ?? (this.embedder ? (userId, query, kinds, limit) => this.nearest(userId, query, kinds, limit) : undefined);
    this.readAudit = (options.auditReads ?? true) ? new ReadAudit<LongTermAuditEntry>((batch) => this.writeReads(batch), options.readAudit) : undefined;
  }

  /** One batch of read records, per user. */
  private async writeReads(batch: readonly LongTermAuditEntry[]): Promise<void> {
    const byUser = new Map<string, LongTermAuditEntry[]>();
    for (const entry of batch) byUser.set(entry.userId, [...(byUser.get(entry.userId) ?? []), entry]);
    for (const [userId, entries] of byUser) await this.store.appendAudit(userId, entries);
  }

  /** Vectors of `items` (empty texts skipped); none when no embedder is configured or the call fails. */
  private async vectorsOf(userId: string, items: readonly { kind: MemoryKind; id: string; text: string }[]): Promise<RecordVector[]> {
    const wanted = items.filter((i) => i.text.trim() !== '');
    if (!this.embedder || wanted.length === 0) return [];
    try {
      const vectors = await this.embedder.embed(wanted.map((i) => i.text));
      return wanted.map((i, n) => ({ kind: i.kind, id: i.id, vector: vectors[n] as Float32Array }));
    } catch (err) {
      this.warn('long-term memory: embedding failed; records stored without vectors', {
        userId,
        records: wanted.length,
        kinds: [...new Set(wanted.map((i) => i.kind))],
        error: err instanceof Error ? err.message : String(err),
      });
      return [];
    }
  }

  /**
   * The dense ranking: the query embedded, the store's nearest vectors per kind, then one list by
   * cosine (comparable across kinds, unlike lexical scores), records with none in common (≤ 0)
   * left out. Empty when the embedder fails: lexical retrieval still answers.
   */
  private async nearest(userId: string, query: string, kinds: readonly MemoryKind[], limit: number): Promise<{ kind: MemoryKind; id: string }[]> {
    if (!this.embedder || !query.trim()) return [];
    let vector: Float32Array | undefined;
    try {
      vector = (await this.embedder.embed([query]))[0];
    } catch (err) {
      this.warn('long-term memory: query embedding failed; searching without dense vectors', { userId, error: err instanceof Error ? err.message : String(err) });
    }
    if (!vector) return [];
    const hits = await this.store.reader(userId).nearest(kinds, vector, limit);
    return hits
      .filter((h) => h.score > 0)
      .sort((a, b) => b.score - a.score)
      .map(({ kind, id }) => ({ kind, id }));
  }

  private auditEntry(userId: string, action: string, targetIds: string[], meta: WriteMeta | ReadMeta, notes: string[], details?: Record<string, unknown>): LongTermAuditEntry {
    return {
      id: newId('ltaudit'),
      userId,
      at: this.now().toISOString(),
      kind: 'write',
      action,
      targetIds,
      origin: meta.origin,
      reason: meta.reason,
      ...(meta.runId ? { runId: meta.runId } : {}),
      ...(meta.sessionId ? { sessionId: meta.sessionId } : {}),
      notes,
      ...(details ? { details } : {}),
    };
  }

  /**
   * A read, audited (seed 001: every read is): `read` runs, then its record — who (`who`, or the
   * system when the caller said nothing), what (`action`, `details`, the ids it returned) — is
   * queued for the audit. Queuing does no I/O and never fails the read (see ReadAudit).
   */
  private async audited<T>(userId: string, action: LongTermReadAction, who: ReadMeta | undefined, details: Record<string, unknown>, read: () => Promise<T>, ids: (result: T) => string[]): Promise<T> {
    const result = await read();
    if (this.readAudit) {
      const returned = ids(result);
      const entry = this.auditEntry(userId, action, returned.slice(0, MAX_AUDITED_IDS), who ?? { origin: 'system', reason: action }, [], { ...dropUndefined(details), returned: returned.length });
      this.readAudit.record({ ...entry, id: newId('ltread'), kind: 'read' });
    }
    return result;
  }

  /** Writes the reads recorded so far; call before the store closes. */
  flushReads(): Promise<void> {
    return this.readAudit?.flush() ?? Promise.resolve();
  }

  /** The user's audit of long-term memory, writes and reads, newest first, narrowed by `filter`. */
  async auditLog(userId: string, filter?: LongTermAuditFilter): Promise<LongTermAuditEntry[]> {
    await this.flushReads();
    return this.store.auditLog(userId, filter);
  }

  async addMessages(userId: string, messages: Omit<StoredMessage, 'userId'>[], meta: WriteMeta): Promise<number> {
    const byId = new Map<string, Omit<StoredMessage, 'userId'>>();
    for (const m of messages) if (!byId.has(m.id)) byId.set(m.id, m);
    const batch = [...byId.values()];
    if (batch.length === 0) return 0;
    const screened = screenTexts(
      this.observers,
      userId,
      batch.flatMap((m) => [m.text, m.name ?? '']),
      meta,
    );
    // Only messages not stored yet are embedded (a repeated import costs no embedding calls).
    const known = this.embedder ? new Set((await this.store.reader(userId).getMessages(batch.map((m) => m.id))).map((m) => m.id)) : new Set<string>();
    const vectors = await this.vectorsOf(
      userId,
      batch.flatMap((m, i) => {
        const name = screened.texts[2 * i + 1];
        return known.has(m.id) ? [] : [{ kind: 'message' as const, id: m.id, text: name ? `${name}: ${screened.texts[2 * i] ?? ''}` : (screened.texts[2 * i] ?? '') }];
      }),
    );
    return this.store.write(userId, async (tx) => {
      const existing = new Set((await tx.getMessages(batch.map((m) => m.id))).map((m) => m.id));
      const added: LongTermRecord[] = [];
      batch.forEach((m, i) => {
        if (existing.has(m.id)) return;
        const name = screened.texts[2 * i + 1];
        // Neighbouring turns of one session, as they came: search reads an answer's context through them.
        const prev = batch[i - 1]?.sessionId === m.sessionId ? batch[i - 1]?.id : undefined;
        const next = batch[i + 1]?.sessionId === m.sessionId ? batch[i + 1]?.id : undefined;
        added.push({
          kind: 'message',
          record: {
            id: m.id,
            userId,
            sessionId: m.sessionId,
            role: m.role,
            ...(name ? { name } : {}),
            text: screened.texts[2 * i] ?? '',
            at: m.at,
            ...(prev ? { prevId: prev } : {}),
            ...(next ? { nextId: next } : {}),
          },
        });
      });
      if (added.length === 0) return 0;
      tx.put(added);
      const addedIds = new Set(added.map((a) => a.record.id));
      tx.putVectors(vectors.filter((v) => addedIds.has(v.id)));
      tx.audit(
        this.auditEntry(
          userId,
          'add_messages',
          added.map((a) => a.record.id),
          meta,
          screened.notes,
          { count: added.length },
        ),
      );
      return added.length;
    });
  }

  /**
   * Brings conversations in (the REST import): given message ids and session ids are kept; a
   * conversation without one gets `newSessionId(userId)`, a message without a time gets one just
   * after the previous message's. Searchable when it returns.
   */
  async importConversations(
    userId: string,
    conversations: readonly ImportedConversation[],
    meta: WriteMeta,
    newSessionId: (userId: string) => string,
  ): Promise<{ imported: number; sessionIds: string[] }> {
    const sessionIds: string[] = [];
    const messages: Omit<StoredMessage, 'userId'>[] = [];
    let clock = this.now().getTime();
    for (const conversation of conversations) {
      const sessionId = conversation.sessionId ?? newSessionId(userId);
      sessionIds.push(sessionId);
      for (const m of conversation.messages) {
        const at = m.at ?? new Date(clock++).toISOString();
        messages.push({ id: m.id ?? this.messageIds('message'), sessionId, role: m.role, ...(m.name ? { name: m.name } : {}), text: m.text, at });
      }
    }
    const imported = await this.addMessages(userId, messages, meta);
    return { imported, sessionIds };
  }

  getMessage(userId: string, messageId: string, reader?: ReadMeta): Promise<StoredMessage | null> {
    return this.audited(userId, 'get_message', reader, { messageId }, async () => (await this.store.reader(userId).getMessages([messageId]))[0] ?? null, idOf);
  }

  /**
   * Now, as a new fact's recording time: later than the last this service gave, so facts recorded one
   * after another within a millisecond (a memory pass's) list newest first in the order they were
   * recorded, not by their random ids.
   */
  private recordingTime(): string {
    this.lastRecordedMs = Math.max(this.now().getTime(), this.lastRecordedMs + 1);
    return new Date(this.lastRecordedMs).toISOString();
  }

  async recordFact(userId: string, input: FactInput, provenance: Provenance, meta: WriteMeta): Promise<RecordedFact> {
    const screened = screenTexts(this.observers, userId, [input.subject, input.predicate, input.object, input.text], meta);
    const [subject = '', predicate = '', object = '', text = ''] = screened.texts;
    const notes = screened.notes;
    const now = this.now().toISOString();
    const validFrom = input.validFrom ? new Date(input.validFrom).toISOString() : now;
    // The fact's sentence is what it means; embedded before the section (a strengthened fact keeps its vector).
    const [embedded] = await this.vectorsOf(userId, [{ kind: 'fact', id: '', text: text || `${subject} ${predicate} ${object}` }]);
    const vectorOf = (fact: Fact): RecordVector[] => (embedded ? [{ ...embedded, id: fact.id }] : []);
    return this.store.write(userId, async (tx) => {
      const entities = new EntityResolver(tx, userId, now);
      const subjectEntity = await entities.resolve(isSelf(subject) ? SELF_ENTITY : subject);
      // "Robert goes by Bob": Bob is another name of Robert, not a second entity.
      const alias = isAliasPredicate(predicate);
      if (alias) entities.addAlias(subjectEntity, object);
      const objectEntity = !alias && words(object).length <= MAX_ENTITY_WORDS ? await entities.resolve(object) : null;
      // decide() compares the fact with its subject's open facts of the same predicate only.
      const known = await tx.listFacts({ subjectIds: [subjectEntity.id], openOnly: true, predicateBase: predicateKey(predicate).base });
      const decision = decide(known, { predicate, object, validFrom });
      const audit = (fact: Fact, details: Record<string, unknown>) => tx.audit(this.auditEntry(userId, 'record_fact', [fact.id], meta, notes, details));

      if (decision.action === 'strengthen') {
        const existing = decision.existing;
        const fact: Fact = {
          ...existing,
          confidence: strengthened(existing.confidence),
          mentions: existing.mentions + 1,
          provenance: withSource(
            { ...existing.provenance, messageIds: unique([...existing.provenance.messageIds, ...provenance.messageIds]) },
            strongerSource(existing.provenance.source, provenance.source),
          ),
        };
        tx.put([...entities.changed(), { kind: 'fact', record: fact }]);
        audit(fact, { outcome: 'strengthened' });
        return { fact, outcome: 'strengthened' };
      }

      const fact: Fact = {
        id: newId('fact'),
        userId,
        subjectId: subjectEntity.id,
        subject,
        predicate,
        objectId: objectEntity?.id ?? null,
        object,
        text,
        validFrom,
        validTo: null,
        recordedAt: this.recordingTime(),
        confidence: FIRST_CONFIDENCE[meta.origin],
        mentions: 1,
        supersedes: null,
        supersededBy: null,
        provenance: { ...provenance, messageIds: [...provenance.messageIds] },
      };
      if (decision.action === 'supersede') {
        // The old fact ends when the new one begins (never before it began itself).
        const end = decision.existing.validFrom > validFrom ? decision.existing.validFrom : validFrom;
        const previous: Fact = { ...decision.existing, validTo: end, supersededBy: fact.id };
        fact.supersedes = previous.id;
        tx.put([...entities.changed(), { kind: 'fact', record: previous }, { kind: 'fact', record: fact }]);
        tx.putVectors(vectorOf(fact));
        audit(fact, { outcome: 'superseded', previous: previous.id });
        return { fact, outcome: 'superseded', previous };
      }
      if (decision.action === 'precede') {
        // An older statement arriving late: it held until the known fact began, which follows it.
        fact.validTo = decision.existing.validFrom;
        fact.supersededBy = decision.existing.id;
        const later: LongTermRecord[] = decision.existing.supersedes === null ? [{ kind: 'fact', record: { ...decision.existing, supersedes: fact.id } }] : [];
        tx.put([...entities.changed(), { kind: 'fact', record: fact }, ...later]);
        tx.putVectors(vectorOf(fact));
        audit(fact, { outcome: 'added', before: decision.existing.id });
        return { fact, outcome: 'added' };
      }
      tx.put([...entities.changed(), { kind: 'fact', record: fact }]);
      tx.putVectors(vectorOf(fact));
      audit(fact, { outcome: 'added' });
      return { fact, outcome: 'added' };
    });
  }

  async endFact(userId: string, factId: string, meta: WriteMeta, at?: string): Promise<Fact | null> {
    return this.store.write(userId, async (tx) => {
      const fact = (await tx.getFacts([factId]))[0];
      if (!fact) return null;
      if (fact.validTo !== null) return fact;
      const end = at ? new Date(at).toISOString() : this.now().toISOString();
      const ended: Fact = { ...fact, validTo: end < fact.validFrom ? fact.validFrom : end };
      tx.put([{ kind: 'fact', record: ended }]);
      tx.audit(this.auditEntry(userId, 'end_fact', [fact.id], meta, []));
      return ended;
    });
  }

  getFact(userId: string, factId: string, reader?: ReadMeta): Promise<Fact | null> {
    return this.audited(userId, 'get_fact', reader, { factId }, async () => (await this.store.reader(userId).getFacts([factId]))[0] ?? null, idOf);
  }

  factHistory(userId: string, factId: string, who?: ReadMeta): Promise<Fact[]> {
    return this.audited(userId, 'fact_history', who, { factId }, () => this.readFactHistory(userId, factId), idsOf);
  }

  private async readFactHistory(userId: string, factId: string): Promise<Fact[]> {
    const reader = this.store.reader(userId);
    const start = (await reader.getFacts([factId]))[0];
    if (!start) return [];
    // Load the chain link by link, then order it with the pure chainOf.
    const loaded = new Map<string, Fact>([[start.id, start]]);
    const pending = [start.supersedes, start.supersededBy];
    while (pending.length) {
      const id = pending.pop();
      if (!id || loaded.has(id)) continue;
      const fact = (await reader.getFacts([id]))[0];
      if (!fact) continue;
      loaded.set(id, fact);
      pending.push(fact.supersedes, fact.supersededBy);
    }
    return chainOf(start, (id) => loaded.get(id));
  }

  listFacts(userId: string, filter: { q?: string; asOf?: string; includeInvalid?: boolean; limit?: number }, who?: ReadMeta): Promise<Fact[]> {
    return this.audited(userId, 'list_facts', who, { ...filter, ...(filter.q ? { q: clip(filter.q) } : {}) }, () => this.readFacts(userId, filter), idsOf);
  }

  private async readFacts(userId: string, filter: { q?: string; asOf?: string; includeInvalid?: boolean; limit?: number }): Promise<Fact[]> {
    const reader = this.store.reader(userId);
    const limit = filter.limit ?? 100;
    const at = filter.asOf ?? this.now().toISOString();
    const keep = (f: Fact) => filter.includeInvalid === true || validAt(f, at);
    if (!filter.q?.trim()) {
      // The newest facts first, as many as it takes: reading them all (a memory pass shows 40 after every
      // run) cost 10-25 ms in files and 165-355 ms in PostgreSQL at 20,000 facts.
      for (let n = limit * 2; ; n *= 4) {
        const newest = await reader.listFacts({ limit: n });
        const kept = newest.filter(keep);
        if (kept.length >= limit || newest.length < n) return kept.slice(0, limit);
      }
    }
    const hits = await retrieve(
      reader,
      userId,
      { query: filter.q, kinds: ['fact'], k: limit * 4, ...(filter.asOf && !filter.includeInvalid ? { asOf: filter.asOf } : {}) },
      { now: this.now(), ...(this.dense ? { dense: this.dense } : {}) },
    );
    return (await reader.getFacts(hits.map((h) => h.id))).filter(keep).slice(0, limit);
  }

  async recordEpisode(userId: string, input: EpisodeInput, scope: Episode['scope'], provenance: Provenance, meta: WriteMeta, extra: Pick<Episode, 'scheduled'> = {}): Promise<Episode> {
    const texts = [input.goal, input.outcome, ...input.steps, ...input.lessons];
    const { texts: out, notes } = screenTexts(this.observers, userId, texts, meta);
    const episode: Episode = {
      id: newId('episode'),
      userId,
      scope,
      goal: out[0] ?? '',
      outcome: out[1] ?? '',
      steps: out.slice(2, 2 + input.steps.length),
      lessons: out.slice(2 + input.steps.length),
      at: this.now().toISOString(),
      provenance: { ...provenance, messageIds: [...provenance.messageIds] },
      ...(extra.scheduled ? { scheduled: { ...extra.scheduled } } : {}),
    };
    const vectors = await this.vectorsOf(userId, [{ kind: 'episode', id: episode.id, text: searchableText({ kind: 'episode', record: episode }) }]);
    return this.store.write(userId, async (tx) => {
      tx.put([{ kind: 'episode', record: episode }]);
      tx.putVectors(vectors);
      tx.audit(this.auditEntry(userId, 'record_episode', [episode.id], meta, notes, { scope }));
      return episode;
    });
  }

  listEpisodes(userId: string, filter: { q?: string; limit?: number }, who?: ReadMeta): Promise<Episode[]> {
    return this.audited(userId, 'list_episodes', who, { ...filter, ...(filter.q ? { q: clip(filter.q) } : {}) }, () => this.readEpisodes(userId, filter), idsOf);
  }

  private async readEpisodes(userId: string, filter: { q?: string; limit?: number }): Promise<Episode[]> {
    const reader = this.store.reader(userId);
    const limit = filter.limit ?? 20;
    if (!filter.q?.trim()) return reader.listEpisodes(limit);
    const hits = await retrieve(reader, userId, { query: filter.q, kinds: ['episode'], k: limit }, { now: this.now(), ...(this.dense ? { dense: this.dense } : {}) });
    return reader.getEpisodes(hits.map((h) => h.id));
  }

  async addSummary(userId: string, sessionId: string, text: string, provenance: Provenance, meta: WriteMeta): Promise<ConversationSummary> {
    const { texts, notes } = screenTexts(this.observers, userId, [text], meta);
    const summary: ConversationSummary = {
      id: newId('summary'),
      userId,
      sessionId,
      text: texts[0] ?? '',
      at: this.now().toISOString(),
      provenance: { ...provenance, sessionId, messageIds: [...provenance.messageIds] },
    };
    const vectors = await this.vectorsOf(userId, [{ kind: 'summary', id: summary.id, text: summary.text }]);
    return this.store.write(userId, async (tx) => {
      tx.put([{ kind: 'summary', record: summary }]);
      tx.putVectors(vectors);
      tx.audit(this.auditEntry(userId, 'add_summary', [summary.id], meta, notes));
      return summary;
    });
  }

  listMessages(userId: string, sessionId: string, limit: number, who?: ReadMeta): Promise<StoredMessage[]> {
    return this.audited(userId, 'list_messages', who, { sessionId, limit }, () => this.store.reader(userId).listMessages(sessionId, limit), idsOf);
  }

  listSummaries(userId: string, sessionId: string, who?: ReadMeta): Promise<ConversationSummary[]> {
    return this.audited(userId, 'list_summaries', who, { sessionId }, () => this.store.reader(userId).listSummaries(sessionId), idsOf);
  }

  search(userId: string, query: SearchQuery, who?: ReadMeta): Promise<SearchHit[]> {
    return this.audited(
      userId,
      'search',
      who,
      { ...query, query: clip(query.query) },
      () => retrieve(this.store.reader(userId), userId, query, { now: this.now(), ...(this.dense ? { dense: this.dense } : {}) }),
      idsOf,
    );
  }

  contextFor(userId: string, goal: string, options: { sessionId?: string; maxFacts?: number; maxEpisodes?: number }, who?: ReadMeta): Promise<InvocationContext> {
    return this.audited(
      userId,
      'context',
      who,
      { query: clip(goal), ...options },
      () => this.readContext(userId, goal, options),
      (c) => [...idsOf(c.facts), ...idsOf(c.episodes), ...idsOf(c.summaries)],
    );
  }

  private async readContext(userId: string, goal: string, options: { sessionId?: string; maxFacts?: number; maxEpisodes?: number }): Promise<InvocationContext> {
    const query = goal.slice(0, MAX_QUERY_CHARS);
    const reader = this.store.reader(userId);
    const now = this.now();
    const retrieval = { now, ...(this.dense ? { dense: this.dense } : {}) };
    const session = options.sessionId ? { sessionId: options.sessionId } : {};
    // Only facts valid now go into a prompt: asOf now drops the ended ones.
    const factHits = await retrieve(reader, userId, { query, kinds: ['fact'], k: options.maxFacts ?? 12, asOf: now.toISOString(), ...session }, retrieval);
    const episodeHits = (options.maxEpisodes ?? 3) > 0 ? await retrieve(reader, userId, { query, kinds: ['episode'], k: options.maxEpisodes ?? 3, ...session }, retrieval) : [];
    const facts = await reader.getFacts(factHits.map((h) => h.id));
    const entityIds = unique(facts.flatMap((f) => (f.objectId ? [f.subjectId, f.objectId] : [f.subjectId])));
    return {
      facts,
      entities: await reader.getEntities(entityIds),
      episodes: await reader.getEpisodes(episodeHits.map((h) => h.id)),
      summaries: options.sessionId ? await reader.listSummaries(options.sessionId) : [],
    };
  }

  /** Entities the text names (by name or alias, then those spelt alike), for callers that show the graph. */
  entitiesIn(userId: string, text: string, who?: ReadMeta): Promise<Entity[]> {
    return this.audited(
      userId,
      'entities',
      who,
      { text: clip(text) },
      async () => {
        const { exact, similar } = await entitiesNamed(this.store.reader(userId), text);
        return [...exact, ...similar];
      },
      idsOf,
    );
  }
}

/** Finds or creates entities inside one write section, remembering what it created or changed. */
class EntityResolver {
  private readonly made = new Map<string, Entity>();
  private readonly touched = new Map<string, Entity>();
  constructor(
    private readonly tx: LongTermReader,
    private readonly userId: string,
    private readonly now: string,
  ) {}

  async resolve(name: string): Promise<Entity> {
    const key = normalizeName(name) || name.trim().toLowerCase();
    const local = this.made.get(key);
    if (local) return local;
    // The oldest entity of that name or alias is the one (names are not unique keys in every backend).
    const oldest = (await this.tx.findEntities([key])).sort((a, b) => (a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : a.id < b.id ? -1 : 1))[0];
    // A copy: what a store reads out may be its own object.
    const found = oldest ? { ...oldest, aliases: [...oldest.aliases] } : undefined;
    const entity: Entity = found ?? { id: newId('entity'), userId: this.userId, name: name.trim(), type: key === SELF_ENTITY ? 'person' : 'unknown', aliases: [], createdAt: this.now };
    if (!found) this.touched.set(entity.id, entity);
    this.made.set(key, entity);
    return entity;
  }

  addAlias(entity: Entity, alias: string): void {
    const key = normalizeName(alias);
    if (!key || [entity.name, ...entity.aliases].some((n) => normalizeName(n) === key)) return;
    entity.aliases = [...entity.aliases, alias.trim()];
    this.touched.set(entity.id, entity);
  }

  changed(): LongTermRecord[] {
    return [...this.touched.values()].map((record) => ({ kind: 'entity' as const, record }));
  }
}
