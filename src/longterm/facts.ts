/**
 * What a newly stated fact does to the facts already known about the same subject (pure):
 * a duplicate strengthens the existing fact; a contradiction supersedes it (the old fact gets an
 * end of validity and a link to its successor; nothing is deleted); otherwise it is added.
 *
 * Predicates are compared by their stemmed words without negation ("lives in", "lived in" and
 * "Lives_In" are one predicate; "does not like" is "like", negated). A predicate is single-valued
 * ("lives in", "works at": a new object replaces the old one) unless its head word says several
 * objects can hold at once ("likes", "has", "speaks", "visited": a new object is added, and only
 * the same object with the opposite polarity contradicts).
 */
import type { Fact } from './contract';
import { analyze, normalizeName, words } from './text';

/** Words that negate a predicate ("does not like", "no longer lives in", "never visited"). */
const NEGATIONS = new Set(['not', 'no', 'never', 'nt', 'longer', 'don', 'doesn', 'didn', 'isn', 'wasn', 'aren', 'cannot']);
/** Predicate words that are themselves a negation of another (their opposite). */
const OPPOSITES: Record<string, string> = { dislik: 'like', hate: 'love', detest: 'love', unlik: 'like' };

/** Head words (stemmed) of predicates that may hold for several objects at once. */
const MULTI_VALUED = new Set(
  [
    'like',
    'love',
    'enjoy',
    'prefer',
    'hate',
    'dislike',
    'own',
    'have',
    'has',
    'know',
    'visit',
    'speak',
    'play',
    'read',
    'watch',
    'use',
    'collect',
    'friend',
    'child',
    'son',
    'daughter',
    'parent',
    'sibling',
    'brother',
    'sister',
    'member',
    'attend',
    'allergic',
    'interest',
    'hobby',
    'want',
    'need',
    'plan',
    'eat',
    'drink',
    'listen',
    'studi',
    'learn',
    'travel',
    'went',
    'go',
    'mention',
    'said',
    'ask',
    'bought',
    'buy',
    'tri',
    'favorit',
    'colleagu',
    'pet',
    'skill',
    'goal',
  ].map((w) => analyze(w).join(' ') || w),
);

/** Predicates that name their subject another way ("Robert goes by Bob"): the object becomes an alias. */
const ALIAS_PREDICATES = ['alias', 'nickname', 'known', 'goes by', 'called', 'named', 'name'].map((w) => analyze(w).join(' '));

export interface PredicateKey {
  /** The predicate's stemmed content words without negation, e.g. "live", "like". */
  base: string;
  negated: boolean;
  /** Only function words ("is", "has"): many things can be true at once. */
  generic: boolean;
}

/**
 * Keys of the predicates seen lately: a fact's recording compares its predicate with every open fact of
 * its subject, and stemming each of those again was most of a recording's time for a user with many
 * facts (≈ 25 of 30 ms at 20,000). A user's predicates are few and recur. Cleared when full.
 */
const predicateKeys = new Map<string, Readonly<PredicateKey>>();
const PREDICATE_KEYS = 10_000;

export function predicateKey(predicate: string): Readonly<PredicateKey> {
  let key = predicateKeys.get(predicate);
  if (key === undefined) {
    if (predicateKeys.size >= PREDICATE_KEYS) predicateKeys.clear();
    predicateKeys.set(predicate, (key = Object.freeze(keyOf(predicate))));
  }
  return key;
}

// PostgreSQL keeps each fact's `base` in a column (migration 14): what this gives changing needs a
// migration that sets predicate_base to NULL, for PostgresLongTermStore.setup to key the facts again.
function keyOf(predicate: string): PredicateKey {
  let negated = false;
  const kept: string[] = [];
  for (const word of words(predicate)) {
    if (NEGATIONS.has(word)) {
      negated = true; // "no longer", "does not": one negation however it is spelled
      continue;
    }
    const stemmed = analyze(word)[0];
    if (stemmed === undefined) continue;
    const opposite = OPPOSITES[stemmed];
    if (opposite) {
      negated = !negated;
      kept.push(opposite);
    } else kept.push(stemmed);
  }
  // Predicates made only of function words ("is", "is a", "has") keep their folded words and say little.
  return kept.length ? { base: kept.join(' '), negated, generic: false } : { base: normalizeName(predicate), negated, generic: true };
}

export function isMultiValued(key: PredicateKey): boolean {
  const [head = ''] = key.base.split(' ');
  return key.generic || MULTI_VALUED.has(key.base) || MULTI_VALUED.has(head);
}

/** Whether the fact names another name of its subject ("goes by", "is also known as", "nickname"). */
export function isAliasPredicate(predicate: string): boolean {
  const { base, negated } = predicateKey(predicate);
  return !negated && ALIAS_PREDICATES.some((p) => base === p || base.startsWith(`${p} `) || base.endsWith(` ${p}`));
}

/** Objects compared by their folded words ("Lisbon", "lisbon." and " Lisbon" are one object). */
export const objectKey = (object: string): string => normalizeName(object);

/** A fact about to be recorded, as `decide` sees it. */
export interface NewFact {
  predicate: string;
  object: string;
  validFrom: string;
}

export type FactDecision =
  /** The same fact again: strengthen `existing`. */
  | { action: 'strengthen'; existing: Fact }
  /** A contradiction of a fact that started earlier: `existing` ends when the new fact starts. */
  | { action: 'supersede'; existing: Fact }
  /** A contradiction of a fact that started later (an older statement arriving late): the new fact is recorded as ended when `existing` began. */
  | { action: 'precede'; existing: Fact }
  | { action: 'add' };

/**
 * @param known the subject's facts that are valid now (no end of validity), any predicate.
 */
export function decide(known: readonly Fact[], fact: NewFact): FactDecision {
  const key = predicateKey(fact.predicate);
  const object = objectKey(fact.object);
  const samePredicate = known.filter((f) => {
    const k = predicateKey(f.predicate);
    return k.base === key.base;
  });
  const duplicate = samePredicate.find((f) => predicateKey(f.predicate).negated === key.negated && objectKey(f.object) === object);
  if (duplicate) return { action: 'strengthen', existing: duplicate };
  const multi = isMultiValued(key);
  // Single-valued: any other object (or polarity) contradicts; multi-valued: only the same object with the opposite polarity.
  const contradicted = samePredicate.filter((f) => !multi || objectKey(f.object) === object).sort((a, b) => b.validFrom.localeCompare(a.validFrom))[0];
  if (!contradicted) return { action: 'add' };
  return Date.parse(fact.validFrom) >= Date.parse(contradicted.validFrom) ? { action: 'supersede', existing: contradicted } : { action: 'precede', existing: contradicted };
}

/** Confidence after one more mention: halfway to 1 each time (0.6 → 0.8 → 0.9 …). */
export const strengthened = (confidence: number): number => Math.min(1, confidence + (1 - confidence) / 2);

/** Whether a fact held at `at` (ISO): validFrom ≤ at < validTo. */
export function validAt(fact: Pick<Fact, 'validFrom' | 'validTo'>, at: string): boolean {
  const t = Date.parse(at);
  return Date.parse(fact.validFrom) <= t && (fact.validTo === null || t < Date.parse(fact.validTo));
}

/** The chain a fact belongs to, oldest first, following supersedes/supersededBy links through `byId`. */
export function chainOf(start: Fact, byId: (id: string) => Fact | undefined): Fact[] {
  const seen = new Set<string>([start.id]);
  const before: Fact[] = [];
  for (let f = start.supersedes ? byId(start.supersedes) : undefined; f && !seen.has(f.id); f = f.supersedes ? byId(f.supersedes) : undefined) {
    seen.add(f.id);
    before.unshift(f);
  }
  const after: Fact[] = [];
  for (let f = start.supersededBy ? byId(start.supersededBy) : undefined; f && !seen.has(f.id); f = f.supersededBy ? byId(f.supersededBy) : undefined) {
    seen.add(f.id);
    after.push(f);
  }
  return [...before, start, ...after];
}
