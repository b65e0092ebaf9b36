/**
 * One user's long-term records held in process, with a BM25 full-text index per kind
 * (bm25.ts, over the terms of src/longterm/text.ts) and the lookups the service needs
 * (entities by name and alias, facts by entity, summaries by session). The in-memory store is
 * one of these per user; the file store rebuilds one from the user's log and keeps it current.
 */
import type { ConversationSummary, Entity, Episode, Fact, MemoryKind, StoredMessage } from '../../longterm/contract';
import { predicateKey } from '../../longterm/facts';
import { normalizeName, trigrams } from '../../longterm/text';
import { nearestOf } from '../../longterm/vectors';
import { Bm25Index, type Bm25Snapshot } from './bm25';
import {
  searchableText,
  type DenseHit,
  type FactFilter,
  type LexicalHit,
  type LexicalKind,
  type LexicalQuery,
  type LongTermReader,
  type LongTermRecord,
  type RecordVector,
  type SimilarEntity,
} from './store';

/** A user's full-text indexes by kind, as arrays. */
export type TextSnapshot = Partial<Record<LexicalKind, Bm25Snapshot>>;

const subjectPredicate = (subjectId: string, base: string): string => `${subjectId}\u0000${base}`;

const addTo = <T>(map: Map<string, Set<T>>, key: string, value: T) => {
  let set = map.get(key);
  if (!set) map.set(key, (set = new Set()));
  set.add(value);
};

export class UserIndex implements LongTermReader {
  private readonly messages = new Map<string, StoredMessage>();
  private readonly facts = new Map<string, Fact>();
  private readonly entities = new Map<string, Entity>();
  private readonly episodes = new Map<string, Episode>();
  private readonly summaries = new Map<string, ConversationSummary>();
  private readonly text = new Map<LexicalKind, Bm25Index>();
  private readonly entitiesByName = new Map<string, Set<string>>();
  /** Trigram → the entity names holding it (pg_trgm's trigrams), with each name's trigram count: spelt-alike lookups touch only names sharing a trigram. */
  private readonly namesByTrigram = new Map<string, Set<string>>();
  private readonly trigramCount = new Map<string, number>();
  private readonly factsByEntity = new Map<string, Set<string>>();
  /** Subject and predicate base → facts: a fact's recording compares it with its subject's facts of its predicate only. */
  private readonly factsBySubjectPredicate = new Map<string, Set<string>>();
  private readonly summariesBySession = new Map<string, Set<string>>();
  /** Dense vectors by kind, then id (EMBEDDING_MODEL); searched brute force, one user at a time. */
  private readonly vectors = new Map<MemoryKind, Map<string, Float32Array>>();

  /**
   * Applies records in order: a record whose id exists replaces it. Without `indexText` their words are
   * not indexed: a restored full-text snapshot (`restoreText`) holds them already.
   */
  apply(records: readonly LongTermRecord[], indexText = true): void {
    for (const item of records) {
      const before = indexText ? this.recordOf(item.kind, item.record.id) : undefined;
      switch (item.kind) {
        case 'message':
          this.messages.set(item.record.id, item.record);
          break;
        case 'fact':
          this.facts.set(item.record.id, item.record);
          addTo(this.factsByEntity, item.record.subjectId, item.record.id);
          // A fact's subject and predicate never change once recorded (only its validity and weight do).
          addTo(this.factsBySubjectPredicate, subjectPredicate(item.record.subjectId, predicateKey(item.record.predicate).base), item.record.id);
          if (item.record.objectId) addTo(this.factsByEntity, item.record.objectId, item.record.id);
          break;
        case 'entity':
          this.entities.set(item.record.id, item.record);
          for (const name of [item.record.name, ...item.record.aliases]) {
            const normalized = normalizeName(name);
            addTo(this.entitiesByName, normalized, item.record.id);
            this.indexTrigrams(normalized);
          }
          break;
        case 'episode':
          this.episodes.set(item.record.id, item.record);
          break;
        case 'summary':
          this.summaries.set(item.record.id, item.record);
          addTo(this.summariesBySession, item.record.sessionId, item.record.id);
          break;
      }
      if (indexText) this.index(item, before);
    }
  }

  /** The full-text indexes, as arrays (file-store.ts keeps them beside the log). */
  textSnapshot(): TextSnapshot {
    return Object.fromEntries([...this.text].map(([kind, index]) => [kind, index.snapshot()]));
  }

  /** The full-text indexes a snapshot holds; undefined when it holds none that make sense (a damaged file). */
  static textIndexesOf(snapshot: TextSnapshot): ReadonlyMap<LexicalKind, Bm25Index> | undefined {
    try {
      return new Map((Object.entries(snapshot) as [LexicalKind, Bm25Snapshot][]).map(([kind, s]) => [kind, Bm25Index.restore(s)]));
    } catch {
      return undefined;
    }
  }

  /** Takes full-text indexes (`textIndexesOf`) in place of any it had. */
  restoreText(indexes: ReadonlyMap<LexicalKind, Bm25Index>): void {
    this.text.clear();
    for (const [kind, index] of indexes) this.text.set(kind, index);
  }

  /** The record of `kind` stored under `id`, if any. */
  private recordOf(kind: LongTermRecord['kind'], id: string): LongTermRecord | undefined {
    const record = this.recordsOf(kind).get(id);
    return record && ({ kind, record } as LongTermRecord);
  }

  private recordsOf(kind: LongTermRecord['kind']): ReadonlyMap<string, LongTermRecord['record']> {
    switch (kind) {
      case 'message':
        return this.messages;
      case 'fact':
        return this.facts;
      case 'entity':
        return this.entities;
      case 'episode':
        return this.episodes;
      case 'summary':
        return this.summaries;
    }
  }

  /** Stores vectors: a later one for the same record replaces it. */
  applyVectors(vectors: readonly RecordVector[]): void {
    for (const { kind, id, vector } of vectors) {
      let byId = this.vectors.get(kind);
      if (!byId) this.vectors.set(kind, (byId = new Map()));
      byId.set(id, vector);
    }
  }

  /** Indexes a record's words unless the record it replaces, `before`, had the same (e.g. a fact whose validity changed). */
  private index(item: LongTermRecord, before: LongTermRecord | undefined): void {
    const text = searchableText(item);
    if (before && searchableText(before) === text) return;
    let index = this.text.get(item.kind);
    if (!index) this.text.set(item.kind, (index = new Bm25Index()));
    index.set(item.record.id, text);
  }

  async getMessages(ids: readonly string[]) {
    return pick(this.messages, ids);
  }
  async getFacts(ids: readonly string[]) {
    return pick(this.facts, ids);
  }
  async getEntities(ids: readonly string[]) {
    return pick(this.entities, ids);
  }
  async getEpisodes(ids: readonly string[]) {
    return pick(this.episodes, ids);
  }
  async getSummaries(ids: readonly string[]) {
    return pick(this.summaries, ids);
  }

  async findEntities(names: readonly string[]) {
    const ids = new Set<string>();
    for (const name of names) for (const id of this.entitiesByName.get(name) ?? []) ids.add(id);
    return pick(this.entities, [...ids]);
  }

  async listFacts(filter: FactFilter) {
    let candidates: Iterable<Fact>;
    if (filter.subjectIds && !filter.entityIds && filter.predicateBase !== undefined) {
      const base = filter.predicateBase;
      candidates = pick(this.facts, [...new Set(filter.subjectIds.flatMap((id) => [...(this.factsBySubjectPredicate.get(subjectPredicate(id, base)) ?? [])]))]);
    } else if (filter.subjectIds || filter.entityIds) {
      const ids = new Set<string>();
      for (const entityId of filter.entityIds ?? filter.subjectIds ?? []) for (const id of this.factsByEntity.get(entityId) ?? []) ids.add(id);
      candidates = pick(this.facts, [...ids]);
    } else candidates = this.facts.values();
    const subjects = filter.subjectIds ? new Set(filter.subjectIds) : undefined;
    const out: Fact[] = [];
    for (const fact of candidates) {
      if (subjects && !subjects.has(fact.subjectId)) continue;
      if (filter.openOnly && fact.validTo !== null) continue;
      if (filter.predicateBase !== undefined && predicateKey(fact.predicate).base !== filter.predicateBase) continue;
      out.push(fact);
    }
    out.sort(newestRecorded);
    return filter.limit === undefined ? out : out.slice(0, filter.limit);
  }

  async listEpisodes(limit: number) {
    return [...this.episodes.values()].sort((a, b) => (a.at < b.at ? 1 : a.at > b.at ? -1 : 0)).slice(0, limit);
  }

  async listSummaries(sessionId: string) {
    return pick(this.summaries, [...(this.summariesBySession.get(sessionId) ?? [])]).sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0));
  }

  async listMessages(sessionId: string, limit: number) {
    const out: StoredMessage[] = [];
    for (const m of this.messages.values()) if (m.sessionId === sessionId) out.push(m);
    return out.sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : a.id < b.id ? -1 : 1)).slice(0, limit);
  }

  async searchText(kind: LexicalKind, query: LexicalQuery, limit: number): Promise<LexicalHit[]> {
    const index = this.text.get(kind);
    if (!index || query.terms.length + (query.anyOf?.length ?? 0) === 0) return [];
    return index.search(query.terms, limit, query.anyOf);
  }

  /** Every name of the user's entities against every phrase: a user's entities are few. */
  private indexTrigrams(name: string): void {
    if (this.trigramCount.has(name)) return;
    const own = trigrams(name);
    this.trigramCount.set(name, own.size);
    for (const t of own) addTo(this.namesByTrigram, t, name);
  }

  async similarEntities(phrases: readonly string[], threshold: number, limit: number): Promise<SimilarEntity[]> {
    if (phrases.length === 0 || limit <= 0) return [];
    const floor = Math.fround(threshold); // compared as pg_trgm does, in single precision
    const bestByName = new Map<string, number>();
    for (const phrase of phrases) {
      const asked = trigrams(phrase);
      if (asked.size === 0) continue;
      // Shared trigrams per name, from the names holding each of the phrase's trigrams.
      const shared = new Map<string, number>();
      for (const t of asked) for (const name of this.namesByTrigram.get(t) ?? []) shared.set(name, (shared.get(name) ?? 0) + 1);
      for (const [name, n] of shared) {
        const similarity = Math.fround(n / (asked.size + (this.trigramCount.get(name) ?? 0) - n));
        if (similarity >= floor && similarity > (bestByName.get(name) ?? 0)) bestByName.set(name, similarity);
      }
    }
    const best = new Map<string, number>();
    for (const [name, similarity] of bestByName) for (const id of this.entitiesByName.get(name) ?? []) best.set(id, Math.max(best.get(id) ?? 0, similarity));
    const out: SimilarEntity[] = [];
    for (const [id, similarity] of best) {
      const entity = this.entities.get(id);
      if (entity) out.push({ entity, similarity });
    }
    return out.sort((a, b) => b.similarity - a.similarity || (a.entity.id < b.entity.id ? -1 : 1)).slice(0, limit);
  }

  async nearest(kinds: readonly MemoryKind[], vector: Float32Array, limit: number): Promise<DenseHit[]> {
    // Each kind once, in the order asked, its best first.
    return [...new Set(kinds)].flatMap((kind) => nearestOf(vector, this.vectors.get(kind) ?? new Map(), limit).map((hit) => ({ kind, ...hit })));
  }
}

function pick<T>(map: ReadonlyMap<string, T>, ids: readonly string[]): T[] {
  const out: T[] = [];
  for (const id of ids) {
    const found = map.get(id);
    if (found !== undefined) out.push(found);
  }
  return out;
}

const newestRecorded = (a: Fact, b: Fact) => (a.recordedAt < b.recordedAt ? 1 : a.recordedAt > b.recordedAt ? -1 : a.id < b.id ? 1 : -1);
