/**
 * Whose words a fact the agent stores holds (issue 32 §5), from the texts of the threads it may
 * have read them in: what the person said wins, then what a tool returned; a fact found in neither
 * is the model's own inference. Pure.
 */
import type { FactSource } from './contract';

const normal = (text: string) => text.toLowerCase().replace(/\s+/g, ' ').trim();

/** The stronger of two sources, for a fact stated again: the person's word outranks the model's, which outranks a tool's. */
export function strongerSource(a: FactSource | undefined, b: FactSource | undefined): FactSource | undefined {
  const rank = (s: FactSource | undefined) => (s === 'person' ? 3 : s === 'model' ? 2 : s === 'tool' ? 1 : 0);
  return rank(a) >= rank(b) ? a : b;
}

/**
 * `said`: the person's messages; `returned`: tool results, snapshots and recalled memory. The fact's
 * object (its words that carry the claim), or its whole sentence when the object is too short to tell.
 */
export function factSourceOf(fact: { object: string; text: string }, said: readonly string[], returned: readonly string[]): FactSource {
  const object = normal(fact.object);
  const needle = object.length >= 3 ? object : normal(fact.text);
  if (needle.length === 0) return 'model';
  if (said.some((t) => normal(t).includes(needle))) return 'person';
  if (returned.some((t) => normal(t).includes(needle))) return 'tool';
  return 'model';
}
