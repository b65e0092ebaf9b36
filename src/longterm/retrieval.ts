/**
 * Hybrid retrieval over one user's long-term memory: several rankings fused by RRF (fusion.ts).
 *   - lexical: BM25 over stemmed terms, per kind (the store's full-text index);
 *   - graph: facts about the entities the query names (by name or alias; "I"/"my" name the
 *     user; a name spelt alike, "Norah" for "Nora", at lower weight), then facts about their neighbours (the other end of those facts): the neighbours
 *     reached through a fact that matches the query ("my sister" → Nora) in full, with the
 *     messages that name them, the others at half weight;
 *   - id: a message quoted by its id;
 *   - recency and the current conversation, as light tie-breakers;
 *   - dense: cosine to the query's vector, when an embedder is configured (embedder.ts).
 * In the fused top k a turn that repeats one ranked above it (withoutNearDuplicates) goes below the rest.
 * A question asking for a kind of thing ("What pets …", "Where has … traveled?") adds the turns naming its instances (categories.ts).
 * Validity: with `asOf`, only facts valid then and records from before then; without it, facts
 * that ended are kept (history questions need them) but ranked lower and say when they held.
 */
import type { ConversationSummary, Entity, Episode, Fact, MemoryKind, Provenance, SearchHit, SearchQuery, StoredMessage } from './contract';
import { MEMORY_KINDS } from './contract';
import { validAt } from './facts';
import { categoryTerms } from './categories';
import { fuse, type Ranking } from './fusion';
import { analyze, namePhrases, normalizeName, words } from './text';
import type { LexicalQuery, LongTermReader } from '../store/longterm/store';

/** Recency's weight in the fusion: a tie-breaker (RRF ranks lie close: more would reorder the words' best hits). */
const RECENCY_WEIGHT = 0.05;
/**
 * The weight of the turns naming an instance of a category the question asks for (categories.ts)
 * against the question's own words (1). Recall benchmark, file store, dev split: 0.5, 1, 1.5, 2, 3
 * gave multi-hop recall@10 0.448, 0.859, 0.937, 0.937, 0.937 and overall recall@5 0.789, 0.858,
 * 0.897, 0.901, 0.902: 2 is past the knee, and the question's own words still order the answers.
 */
const CATEGORY_WEIGHT = 2;
/** Candidates taken from each lexical ranking. */
const LEXICAL_DEPTH = 50;
/** Facts taken from the graph around the named entities. */
const GRAPH_DEPTH = 50;
/** Bridge entities whose messages are searched (see graphFacts). */
const MAX_BRIDGES = 5;
const SELF_WORDS = new Set(['i', 'me', 'my', 'mine', 'myself']);
/** The entity a user's own facts hang on ("I live in Lisbon": subject "user"). */
/**
 * The longest query retrieval looks at, in characters (the search API's limit too). A run's goal is
 * its query when it starts: a 400 kB goal analyzed whole (stemming every word, several times) held
 * the step's event loop for a second and more, past its heartbeat timeout at a few MB.
 */
export const MAX_QUERY_CHARS = 4000;

export const SELF_ENTITY = 'user';
/** Ids as Threadline writes them (msg_…, fact_…): a query may quote one. */
const QUOTED_ID = /\b[a-z]{2,8}_[a-z0-9]{6,}\b/g;

type AnyRecord = { kind: 'message'; record: StoredMessage } | { kind: 'fact'; record: Fact } | { kind: 'episode'; record: Episode } | { kind: 'summary'; record: ConversationSummary };

/** Dense similarity, when configured: ids of `kind` most similar to the query, best first. */
export type DenseRanker = (userId: string, query: string, kinds: readonly MemoryKind[], limit: number) => Promise<{ kind: MemoryKind; id: string }[]>;

export interface RetrievalOptions {
  now: Date;
  dense?: DenseRanker;
}

const key = (kind: MemoryKind, id: string) => `${kind}:${id}`;

export function lexicalQuery(text: string): LexicalQuery {
  return { text, terms: [...new Set(analyze(text))] };
}

/**
 * The least pg_trgm similarity at which a query phrase names an entity spelt alike: "Norah" for
 * "Nora" is 0.57, "Jon Smith" for "John Smith" 0.62; unrelated short names (Dario, Mario: 0.33)
 * stay below.
 */
export const SIMILAR_NAME_THRESHOLD = 0.5;
/** The weight of facts about an entity named only by spelling (exact names: 1). */
const SIMILAR_NAME_WEIGHT = 0.7;
/** Entities taken by spelling, at most. */
const MAX_SIMILAR = 5;

/** Whether every word of `name` is among `present` (a name without words is in nothing). */
function nameIn(name: string, present: ReadonlySet<string>): boolean {
  const nameWords = words(name);
  return nameWords.length > 0 && nameWords.every((w) => present.has(w));
}

/** The entities a query names: exactly (by name or alias), and by a phrase spelt like a name. */
export interface NamedEntities {
  exact: Entity[];
  /** Not among `exact`; most similar first. */
  similar: Entity[];
}

/**
 * Entities the query names. Exactly: a candidate by its words is kept when all words of one of its
 * names appear in the query. By spelling: the query's phrases (namePhrases) that are not words of
 * an exact match, against every name and alias by trigram similarity (SIMILAR_NAME_THRESHOLD).
 */
export async function entitiesNamed(reader: LongTermReader, query: string): Promise<NamedEntities> {
  const queryWords = new Set(words(query));
  const candidates = await reader.searchText('entity', lexicalQuery(query), 20);
  const exact = (await reader.getEntities(candidates.map((c) => c.id))).filter((e) => [e.name, ...e.aliases].some((name) => nameIn(name, queryWords)));
  if ([...queryWords].some((w) => SELF_WORDS.has(w))) exact.push(...(await reader.findEntities([SELF_ENTITY])));
  const exactIds = new Set(exact.map((e) => e.id));
  const named = new Set(exact.flatMap((e) => [e.name, ...e.aliases]).flatMap(words));
  const phrases = namePhrases(query).filter((p) => !p.split(' ').every((w) => named.has(w)));
  const similar = phrases.length ? await reader.similarEntities(phrases, SIMILAR_NAME_THRESHOLD, MAX_SIMILAR + exact.length) : [];
  return {
    exact,
    similar: similar
      .map((s) => s.entity)
      .filter((e) => !exactIds.has(e.id))
      .slice(0, MAX_SIMILAR),
  };
}

/**
 * Facts around `entities`: theirs first (those sharing more query terms first), then their
 * neighbours' (the other end of those facts). A neighbour reached through a fact that matches the
 * query is a bridge ("where does my sister live": user —sister→ Nora); the bridges' own facts
 * ("Nora moved to Porto") answer the question without sharing its words, so they form their own
 * ranking, ordered by how well the linking fact matched, and the bridges are returned so that
 * messages naming them can be searched too.
 */
async function graphFacts(reader: LongTermReader, entities: readonly Entity[], terms: ReadonlySet<string>): Promise<{ direct: Fact[]; bridged: Fact[]; neighbours: Fact[]; bridges: string[] }> {
  if (entities.length === 0) return { direct: [], bridged: [], neighbours: [], bridges: [] };
  const seeds = new Set(entities.map((e) => e.id));
  const overlaps = new Map<string, number>();
  const overlap = (f: Fact) => {
    let n = overlaps.get(f.id);
    if (n === undefined) overlaps.set(f.id, (n = analyze(`${f.text} ${f.predicate} ${f.object}`).filter((t) => terms.has(t)).length));
    return n;
  };
  const byRelevance = (a: Fact, b: Fact) => overlap(b) - overlap(a) || Number(a.validTo !== null) - Number(b.validTo !== null) || (a.recordedAt < b.recordedAt ? 1 : -1);
  const direct = (await reader.listFacts({ entityIds: [...seeds], limit: GRAPH_DEPTH * 4 })).sort(byRelevance).slice(0, GRAPH_DEPTH);
  // A link is judged by the query's other words: every fact of "Dario" says "Dario".
  const seedTerms = new Set(entities.flatMap((e) => [e.name, ...e.aliases]).flatMap((n) => analyze(n)));
  const linkTerms = [...terms].filter((t) => !seedTerms.has(t));
  const linkOverlap = (f: Fact) => (linkTerms.length ? analyze(`${f.text} ${f.predicate}`).filter((t) => linkTerms.includes(t) && !seedTerms.has(t)).length : 0);
  /** Neighbour entity → the best query overlap of a direct fact linking to it (0: linked, but not by what the query asks). */
  const link = new Map<string, number>();
  for (const f of direct) {
    const ends = [f.subjectId, f.objectId].filter((id): id is string => !!id && !seeds.has(id));
    if (ends.length === 0) continue;
    const n = linkOverlap(f);
    for (const id of ends) link.set(id, Math.max(link.get(id) ?? 0, n));
  }
  if (link.size === 0) return { direct, bridged: [], neighbours: [], bridges: [] };
  const directIds = new Set(direct.map((f) => f.id));
  const linkOf = (f: Fact) => Math.max(link.get(f.subjectId) ?? 0, f.objectId ? (link.get(f.objectId) ?? 0) : 0);
  const around = (await reader.listFacts({ entityIds: [...link.keys()], limit: GRAPH_DEPTH * 4 })).filter((f) => !directIds.has(f.id));
  const bridged = around
    .filter((f) => linkOf(f) > 0)
    .sort((a, b) => linkOf(b) - linkOf(a) || byRelevance(a, b))
    .slice(0, GRAPH_DEPTH);
  const neighbours = around
    .filter((f) => linkOf(f) === 0)
    .sort(byRelevance)
    .slice(0, GRAPH_DEPTH);
  // A bridge leads somewhere: an entity known only through the linking fact adds no second hop.
  const beyond = new Set(around.flatMap((f) => [f.subjectId, f.objectId]));
  const bridges = [...link]
    .filter(([id, n]) => n > 0 && beyond.has(id))
    .sort((a, b) => b[1] - a[1])
    .map(([id]) => id)
    .slice(0, MAX_BRIDGES);
  return { direct, bridged, neighbours, bridges };
}

/**
 * Messages that name one of `entityIds` (by name or alias), best first by BM25 over the names and
 * the query's terms: the messages behind a bridge entity, whatever words they use.
 */
async function messagesNaming(reader: LongTermReader, entityIds: readonly string[], query: LexicalQuery, limit: number): Promise<StoredMessage[]> {
  if (entityIds.length === 0) return [];
  const names = (await reader.getEntities(entityIds))
    .flatMap((e) => [e.name, ...e.aliases])
    .map(words)
    .filter((w) => w.length > 0);
  if (names.length === 0) return [];
  const nameTerms = names.flatMap((n) => analyze(n.join(' ')));
  const hits = await reader.searchText('message', { text: `${query.text} ${names.map((n) => n.join(' ')).join(' ')}`, terms: [...new Set([...nameTerms, ...query.terms])] }, limit);
  const messages = await reader.getMessages(hits.map((h) => h.id));
  return messages.filter((m) => {
    const present = new Set(words(m.name ? `${m.name} ${m.text}` : m.text));
    return names.some((n) => n.every((w) => present.has(w)));
  });
}

/** A kind's lexical ranking, and the ids its words matched (what other rankings need not add again). */
interface LexicalRanking {
  ranked: string[];
  matched: string[];
}
const plainLexical = (hits: readonly { id: string }[]): LexicalRanking => ({ ranked: hits.map((h) => h.id), matched: hits.map((h) => h.id) });

/** Lexical message hits read for their context (messagesInContext): more than are returned. */
const CONTEXT_POOL = 50;
/** The share of a turn's score its next turn, the one after, and the turn before receive. */
const NEXT_SHARE = 0.6;
const SECOND_NEXT_SHARE = 0.3;
const PREV_SHARE = 0.1;
/**
 * The factor for turns by a speaker the query names ("When did Maya …"). Recall benchmark, file
 * store, recall@10 with near-duplicates moved down, dev: 1.5, 2, 3 gave single 0.968, 0.992,
 * 1.000, multi-hop 0.227, 0.233, 0.239, overall 0.791, 0.805, 0.810; held-out overall 0.815,
 * 0.835, 0.835. 2: most of the gain, while a reply by the other person still counts.
 */
const SPEAKER_BOOST = 2;

/**
 * Messages by BM25 read in their conversation: an answer often shares no word with the question
 * but follows the turns that do ("I took a pottery class!" — "What did you make?" — "A blue
 * bowl"), so every hit passes a share of its score (normalised to the best hit's) to the next two
 * turns and the one before (StoredMessage.prevId/nextId, kept at import); turns by a speaker the
 * query names count more. The best `limit` ids, best first, and the ids the words matched.
 */
async function messagesInContext(reader: LongTermReader, lexical: LexicalQuery, queryText: string, limit: number): Promise<LexicalRanking> {
  const hits = await reader.searchText('message', lexical, Math.max(limit, CONTEXT_POOL));
  if (hits.length === 0) return { ranked: [], matched: [] };
  const best = hits[0]?.score || 1;
  const records = new Map<string, StoredMessage>();
  const fetch = async (ids: Iterable<string>) => {
    const wanted = [...new Set(ids)].filter((id) => !records.has(id));
    for (const m of await reader.getMessages(wanted)) records.set(m.id, m);
  };
  await fetch(hits.map((h) => h.id));
  await fetch(hits.flatMap((h) => [records.get(h.id)?.nextId, records.get(h.id)?.prevId]).filter((id): id is string => !!id));
  const scores = new Map<string, number>();
  const add = (id: string | undefined, score: number) => {
    if (id) scores.set(id, (scores.get(id) ?? 0) + score);
  };
  for (const h of hits) {
    const score = h.score / best;
    const m = records.get(h.id);
    add(h.id, score);
    if (!m) continue;
    add(m.nextId, NEXT_SHARE * score);
    add(m.prevId, PREV_SHARE * score);
    add(m.nextId ? records.get(m.nextId)?.nextId : undefined, SECOND_NEXT_SHARE * score);
  }
  await fetch(scores.keys());
  const queryWords = new Set(words(queryText));
  for (const [id, score] of scores) {
    const speaker = records.get(id)?.name;
    if (speaker !== undefined && nameIn(speaker, queryWords)) scores.set(id, score * SPEAKER_BOOST);
  }
  const ranked = [...scores]
    .filter(([id]) => records.has(id))
    .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
    .slice(0, limit)
    .map(([id]) => id);
  return { ranked, matched: hits.slice(0, limit).map((h) => h.id) };
}

/**
 * For a question asking for a kind of thing ("What pets does Maya have?"), the turns naming an
 * instance of it ("We adopted a kitten!"): by BM25 of the best instance term a turn holds
 * (LexicalQuery.anyOf: summed, a photo's caption naming four ranked above the turns naming one;
 * dev multi-hop recall@5 / @10 0.644 / 0.868 → 0.782 / 0.937), turns by a speaker the question names counting more
 * (SPEAKER_BOOST). The question's own words are left to its own ranking: here, with the instances,
 * "Maya: Hey you!" outranked the answers, and on PostgreSQL they read rows holding two of them.
 * Turns whose instance is only the speaker's name ("Jordan") are left out. Not read in context:
 * the turns after an answer are the other person's "What did you make?", and the speaker factor
 * lifted them above it.
 */
async function messagesNamingInstances(reader: LongTermReader, instances: readonly string[], queryText: string, limit: number): Promise<string[]> {
  const hits = await reader.searchText('message', { text: instances.join(' '), terms: [], anyOf: [...instances] }, Math.max(limit, CONTEXT_POOL));
  const records = new Map((await reader.getMessages(hits.map((h) => h.id))).map((m) => [m.id, m]));
  const wanted = new Set(instances);
  const queryWords = new Set(words(queryText));
  return hits
    .flatMap((h) => {
      const m = records.get(h.id);
      if (!m || !analyze(m.text).some((t) => wanted.has(t))) return [];
      return [{ id: h.id, score: m.name !== undefined && nameIn(m.name, queryWords) ? h.score * SPEAKER_BOOST : h.score }];
    })
    .sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : 1))
    .slice(0, limit)
    .map((h) => h.id);
}

async function load(reader: LongTermReader, keys: readonly string[]): Promise<Map<string, AnyRecord>> {
  const ids: Record<MemoryKind, string[]> = { message: [], fact: [], episode: [], summary: [] };
  for (const k of keys) {
    const at = k.indexOf(':');
    ids[k.slice(0, at) as MemoryKind].push(k.slice(at + 1));
  }
  const out = new Map<string, AnyRecord>();
  const [messages, facts, episodes, summaries] = await Promise.all([reader.getMessages(ids.message), reader.getFacts(ids.fact), reader.getEpisodes(ids.episode), reader.getSummaries(ids.summary)]);
  for (const record of messages) out.set(key('message', record.id), { kind: 'message', record });
  for (const record of facts) out.set(key('fact', record.id), { kind: 'fact', record });
  for (const record of episodes) out.set(key('episode', record.id), { kind: 'episode', record });
  for (const record of summaries) out.set(key('summary', record.id), { kind: 'summary', record });
  return out;
}

const atOf = (item: AnyRecord): string => (item.kind === 'fact' ? item.record.validFrom : item.record.at);

/** What a hit shows: an ended fact says when it held. */
function hitOf(item: AnyRecord, score: number): SearchHit {
  const rounded = Math.round(score * 1e6) / 1e6;
  switch (item.kind) {
    case 'message': {
      const m = item.record;
      return { kind: 'message', id: m.id, text: m.name ? `${m.name}: ${m.text}` : m.text, score: rounded, at: m.at, source: { sessionId: m.sessionId, messageIds: [m.id] } };
    }
    case 'fact': {
      const f = item.record;
      const text = f.validTo === null ? f.text : `${f.text} (from ${f.validFrom.slice(0, 10)} until ${f.validTo.slice(0, 10)})`;
      return { kind: 'fact', id: f.id, text, score: rounded, at: f.validFrom, source: copyProvenance(f.provenance) };
    }
    case 'episode': {
      const e = item.record;
      const text = [`Goal: ${e.goal}`, e.steps.length ? `Steps: ${e.steps.join('; ')}` : '', `Outcome: ${e.outcome}`, e.lessons.length ? `Lessons: ${e.lessons.join('; ')}` : '']
        .filter(Boolean)
        .join('\n');
      return { kind: 'episode', id: e.id, text, score: rounded, at: e.at, source: copyProvenance(e.provenance) };
    }
    case 'summary': {
      const s = item.record;
      return { kind: 'summary', id: s.id, text: s.text, score: rounded, at: s.at, source: copyProvenance({ ...s.provenance, sessionId: s.sessionId }) };
    }
  }
}

const copyProvenance = (p: Provenance): Provenance => ({ ...(p.sessionId ? { sessionId: p.sessionId } : {}), ...(p.runId ? { runId: p.runId } : {}), messageIds: [...p.messageIds] });

function sessionOf(item: AnyRecord): string | undefined {
  return item.kind === 'message' || item.kind === 'summary' ? item.record.sessionId : item.record.provenance.sessionId;
}

/** The fused, filtered top `k` of one user's memory for `query`. */
export async function retrieve(reader: LongTermReader, userId: string, query: SearchQuery, options: RetrievalOptions): Promise<SearchHit[]> {
  const k = query.k ?? 10;
  const kinds = new Set<MemoryKind>(query.kinds?.length ? query.kinds : MEMORY_KINDS);
  const lexical = lexicalQuery(query.query);
  const terms = new Set(lexical.terms);
  const rankings: Ranking[] = [];
  const depth = Math.max(LEXICAL_DEPTH, k * 3);

  // Each kind's words and the entities the query names (then the facts around them) are
  // independent reads: made at once (a PostgreSQL store answers them on several connections),
  // used in a fixed order.
  const withGraph = kinds.has('fact') || kinds.has('message');
  // A question asking for a kind of thing: the turns naming its instances, as one more ranking.
  const instances = kinds.has('message') ? categoryTerms(query.query) : [];
  const [lexicalRankings, around, byCategory] = await Promise.all([
    Promise.all(
      [...kinds].map(async (kind) => ({ kind, ...(kind === 'message' ? await messagesInContext(reader, lexical, query.query, depth) : plainLexical(await reader.searchText(kind, lexical, depth))) })),
    ),
    withGraph ? entitiesNamed(reader, query.query).then(async (named) => ({ named, graph: await graphFacts(reader, [...named.exact, ...named.similar], terms) })) : undefined,
    instances.length ? messagesNamingInstances(reader, instances, query.query, depth) : undefined,
  ]);
  const lexicalIds = new Set<string>();
  for (const { kind, ranked, matched } of lexicalRankings) {
    rankings.push({ ids: ranked.map((id) => key(kind, id)) });
    for (const id of matched) lexicalIds.add(key(kind, id));
  }
  if (byCategory) rankings.push({ ids: byCategory.map((id) => key('message', id)), weight: CATEGORY_WEIGHT });
  if (around) {
    const { named } = around;
    const { direct, bridged, neighbours, bridges } = around.graph;
    if (kinds.has('fact')) {
      // A name only spelt alike is likelier a mistake than one written out: its facts weigh less.
      const exactIds = new Set(named.exact.map((e) => e.id));
      const byExact = (f: Fact) => exactIds.has(f.subjectId) || (f.objectId !== null && exactIds.has(f.objectId));
      rankings.push(
        { ids: direct.filter(byExact).map((f) => key('fact', f.id)) },
        { ids: direct.filter((f) => !byExact(f)).map((f) => key('fact', f.id)), weight: SIMILAR_NAME_WEIGHT },
        { ids: bridged.map((f) => key('fact', f.id)) },
        { ids: neighbours.map((f) => key('fact', f.id)), weight: 0.5 },
      );
    }
    if (kinds.has('message') && bridges.length) {
      // What the words missed: the messages behind a bridge that lexical search did not find already.
      rankings.push({ ids: (await messagesNaming(reader, bridges, lexical, depth)).map((m) => key('message', m.id)).filter((id) => !lexicalIds.has(id)) });
    }
  }
  if (kinds.has('message')) {
    const quoted = (query.query.toLowerCase().match(QUOTED_ID) ?? []).slice(0, 10);
    if (quoted.length) rankings.push({ ids: (await reader.getMessages(quoted)).map((m) => key('message', m.id)), weight: 2 });
  }
  if (options.dense) {
    const dense = await options.dense(userId, query.query, [...kinds], depth);
    rankings.push({ ids: dense.map((d) => key(d.kind, d.id)) });
  }

  const candidates = [...new Set(rankings.flatMap((r) => r.ids))];
  const records = await load(reader, candidates);
  const asOf = query.asOf;
  const nowIso = options.now.toISOString();
  const kept = candidates.filter((c) => {
    const item = records.get(c);
    if (!item || !kinds.has(item.kind)) return false;
    if (asOf === undefined) return true;
    return item.kind === 'fact' ? validAt(item.record, asOf) : atOf(item) <= asOf;
  });
  const keptSet = new Set(kept);
  const byRecency = [...kept].sort((a, b) => (atOf(records.get(b) as AnyRecord) < atOf(records.get(a) as AnyRecord) ? -1 : 1));
  rankings.push({ ids: byRecency, weight: RECENCY_WEIGHT });
  if (query.sessionId) rankings.push({ ids: kept.filter((c) => sessionOf(records.get(c) as AnyRecord) === query.sessionId), weight: 0.3 });

  const hits: SearchHit[] = [];
  for (const { id, score } of fuse(rankings)) {
    if (!keptSet.has(id)) continue;
    const item = records.get(id) as AnyRecord;
    // Without asOf, a fact no longer valid counts half: it answers "before", not "now".
    const ended = asOf === undefined && item.kind === 'fact' && !validAt(item.record, nowIso);
    hits.push(hitOf(item, ended ? score / 2 : score));
  }
  return withoutNearDuplicates(
    hits.sort((a, b) => b.score - a.score),
    k,
    NEAR_DUPLICATE,
    new Set(instances),
  );
}

/**
 * Jaccard similarity of two messages' terms at which the lower one is a near-duplicate of the
 * higher: "Haha, work has been so busy lately …" said in ten sessions, or one turn said twice,
 * tells nothing the first did, and ten such lines filled the top 10 of a question sharing their
 * words. Measured on the recall set's dev split (issue 30): 0.4, 0.5, 0.6, 0.7, 0.9 gave
 * multi-hop recall@10 0.233, 0.227, 0.198, 0.187, 0.083 (none: 0.049) and overall 0.777, 0.791,
 * 0.781, 0.779, 0.761 (none: 0.746).
 */
export const NEAR_DUPLICATE = 0.5;

/**
 * The first `k` of `hits` (best first) with each message that is a near-duplicate
 * (NEAR_DUPLICATE) of a message kept above moved below the rest, in order, scored no higher than
 * the last hit kept (so scores still fall): what is left fills the top k when little else matched.
 * A message holding one of `asked` (the instances a question asks for) that the one above lacks is
 * no duplicate: "We adopted a rabbit! Meet Clover." after "We adopted a kitten! Meet Pepper." is
 * the second answer (recall set, dev split, multi-hop recall@5 / @10 0.695 / 0.851 → 0.782 /
 * 0.937). Other kinds are kept as they come.
 */
export function withoutNearDuplicates(hits: readonly SearchHit[], k: number, threshold = NEAR_DUPLICATE, asked: ReadonlySet<string> = new Set()): SearchHit[] {
  const kept: SearchHit[] = [];
  const moved: SearchHit[] = [];
  const seen: Set<string>[] = [];
  for (const hit of hits) {
    if (kept.length >= k) break;
    if (hit.kind !== 'message') {
      kept.push(hit);
      continue;
    }
    const terms = new Set(analyze(hit.text));
    const adds = (other: ReadonlySet<string>) => {
      if (asked.size > 0) for (const t of terms) if (asked.has(t) && !other.has(t)) return true;
      return false;
    };
    if (seen.some((other) => jaccard(other, terms) >= threshold && !adds(other))) moved.push(hit);
    else {
      kept.push(hit);
      seen.push(terms);
    }
  }
  const floor = kept.at(-1)?.score ?? Infinity;
  return [...kept, ...moved.map((h) => (h.score > floor ? { ...h, score: floor } : h))].slice(0, k);
}

/** Shared terms over the terms of either (0 for two empty sets). */
export function jaccard(a: ReadonlySet<string>, b: ReadonlySet<string>): number {
  let shared = 0;
  for (const t of a) if (b.has(t)) shared++;
  const union = a.size + b.size - shared;
  return union === 0 ? 0 : shared / union;
}

/** Whether a name is the user's own ("I", "me", "the user"). */
export function isSelf(name: string): boolean {
  const n = normalizeName(name);
  return SELF_WORDS.has(n) || n === SELF_ENTITY || n === `the ${SELF_ENTITY}`;
}
