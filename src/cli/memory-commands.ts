/**
 * The chat client's long-term memory commands (seed 002), answered by the client over the REST
 * API rather than sent to the session: `/remember <text>`, `/forget <fact id>`, `/memory <query>`.
 * Pure: parsing and printing; chat.ts makes the calls.
 */
import type { Fact, FactInput, RecordedFact, SearchHit } from '../longterm/contract';
import { plainFacts } from '../calls/memory-passes';

export type MemoryCommand = { kind: 'remember'; fact: FactInput } | { kind: 'forget'; factId: string } | { kind: 'memory'; query: string } | { kind: 'usage'; text: string };

export const MEMORY_HELP = [
  '/remember <text> — keep a fact about you in long-term memory (e.g. /remember my sister is Ana)',
  '/forget <fact id> — end a fact (it stays in its history, no longer believed)',
  '/memory <query> — search what is remembered: facts, episodes, summaries, messages',
].join('\n');

/** The command a line is, or null when it is not one of these (it goes to the session). */
export function parseMemoryCommand(line: string): MemoryCommand | null {
  const match = /^\/(remember|forget|memory)(?:\s+([\s\S]*))?$/i.exec(line.trim());
  if (!match) return null;
  const name = (match[1] ?? '').toLowerCase();
  const rest = (match[2] ?? '').trim();
  if (!rest) return { kind: 'usage', text: MEMORY_HELP.split('\n').find((l) => l.startsWith(`/${name}`)) ?? MEMORY_HELP };
  if (name === 'forget') return { kind: 'forget', factId: rest.split(/\s+/)[0] ?? rest };
  if (name === 'memory') return { kind: 'memory', query: rest };
  // "my sister is Ana" becomes (user, sister, Ana); anything else is kept as the person said it.
  const sentence = rest.length > 2000 ? rest.slice(0, 2000) : rest;
  const fact = plainFacts(sentence)[0] ?? { subject: 'user', predicate: 'noted', object: sentence.slice(0, 1000), text: sentence };
  return { kind: 'remember', fact };
}

/** What the lines below print of a fact (the API sends the whole of it). */
type FactLine = Pick<Fact, 'id' | 'text' | 'validTo'>;

export function rememberedLine(recorded: { outcome: RecordedFact['outcome']; fact: FactLine; previous?: FactLine }): string {
  const { fact, outcome, previous } = recorded;
  if (outcome === 'strengthened') return `Already known, now more certain: ${fact.text} (${fact.id})`;
  if (outcome === 'superseded' && previous) return `Remembered: ${fact.text} (${fact.id}) — replaces "${previous.text}" (${previous.id})`;
  return `Remembered: ${fact.text} (${fact.id})`;
}

export const forgottenLine = (fact: FactLine) => `Forgotten: ${fact.text} (${fact.id}; believed until ${fact.validTo ?? 'now'})`;

export function searchLines(results: readonly Pick<SearchHit, 'kind' | 'id' | 'text'>[]): string {
  if (results.length === 0) return 'Nothing remembered matches that.';
  return results.map((r, i) => `${i + 1}. [${r.kind}] ${r.text.replace(/\s+/g, ' ').slice(0, 200)}${r.kind === 'fact' ? ` (${r.id})` : ''}`).join('\n');
}
