/**
 * Long-term memory's two model passes (seed 002): `memory_extraction` after a burst of invocations
 * (one summary, new facts, an episode when the work was task-like) and `memory_promotion` at a
 * conversation's end (what of the whole conversation is worth keeping). Their replies, prompts and
 * the demo model's answer. Pure: the activities (src/activities/memory-activities.ts) gather the
 * transcript and write the reply.
 */
import { z } from 'zod';
import type { ChatMessage } from '../text/chat-message';
import { EpisodeInputSchema, FactInputSchema } from '../planning/memory-schemas';
import { clip, oneLine } from '../text/clip';
import { modelCall, type ContextKind } from './call';
import type { MemoryPassName } from './names';

/** Reply of the post-invocation extraction pass (wire name `memory_extraction`, DESIGN.md). */
export const MemoryExtractionSchema = z.object({
  summary: z.string(),
  facts: z.array(FactInputSchema),
  episode: EpisodeInputSchema.nullable(),
});
export type MemoryExtraction = z.infer<typeof MemoryExtractionSchema>;

/** Reply of promotion at conversation end (wire name `memory_promotion`). */
export const MemoryPromotionSchema = z.object({
  facts: z.array(FactInputSchema),
  episode: EpisodeInputSchema.nullable(),
});
export type MemoryPromotion = z.infer<typeof MemoryPromotionSchema>;

/** What a long-term memory pass is made from. Offline providers read it instead of prose. */
export interface MemoryPassContext {
  call: MemoryPassName;
  /** The invocations' goals (extraction), or the conversation's first request (promotion). */
  goals: string[];
  /** What happened, oldest first: the person's and the agent's words, tool calls and results. */
  transcript: { role: 'user' | 'assistant' | 'tool'; text: string }[];
  /** Facts already known about the person, as sentences (so the model adds only what is new). */
  known: string[];
}

/** Tells a long-term memory pass's context from the others. */
export function isMemoryPassContext(context: { call: string }): context is MemoryPassContext {
  return (context.call === 'memory_extraction' || context.call === 'memory_promotion') && 'transcript' in context;
}

/** Characters of one transcript line a prompt shows (a tool's 100 kB result is not memory). */
export const LINE_CHARS = 1_500;
/** Lines of transcript one pass reads, newest kept. */
export const MAX_LINES = 200;

const FACT_RULES = `Facts: durable statements about the person and their world (names, relations, places, preferences, plans with dates, decisions) as
{"subject", "predicate", "object", "text"} with "text" the fact as one sentence; add "validFrom" (ISO 8601) only when the conversation says when it became true.
Use the person's own names for things; the person is "user". Leave out what is already known, small talk, and live values (balances, prices, the time).`;

const EXTRACTION = `You maintain an AI agent's long-term memory of one person.
Read what happened in the invocations below and reply with JSON only:
{"summary": "...", "facts": [...], "episode": {...} | null}
Summary: one or two sentences — the user asked X, the agent did Y, the result was Z.
${FACT_RULES}
Episode: when the work was a task (tools used, several steps), {"goal", "steps": [short lines], "outcome", "lessons": [what to do the same or differently next time]}; otherwise null.`;

const PROMOTION = `You maintain an AI agent's long-term memory of one person. This conversation has ended.
Read it and reply with JSON only: {"facts": [...], "episode": {...} | null}
${FACT_RULES}
Episode: the conversation as one episode when it pursued a goal ({"goal", "steps", "outcome", "lessons"}); null for small talk.`;

function transcriptText(context: MemoryPassContext): string {
  const lines = context.transcript.slice(-MAX_LINES).map((l) => `${l.role}: ${l.text.length > LINE_CHARS ? `${l.text.slice(0, LINE_CHARS)} […]` : l.text}`);
  const known = context.known.length > 0 ? `\n\nAlready known:\n${context.known.map((k) => `- ${k}`).join('\n')}` : '';
  return `${lines.join('\n')}${known}`;
}

/** The messages of a pass. The `Goal:` line names the invocation (or conversation), as every request of a run does. */
export function memoryPassMessages(context: MemoryPassContext): ChatMessage[] {
  const goal = context.goals[0] ?? '';
  const what = context.call === 'memory_extraction' ? `Invocations: ${context.goals.length}` : 'The whole conversation';
  return [
    { role: 'system', content: context.call === 'memory_extraction' ? EXTRACTION : PROMOTION },
    { role: 'user', content: `Goal: ${goal}\n${what}\n\n${transcriptText(context)}` },
  ];
}

const sentence = (text: string) => text.replace(/\s+/g, ' ').trim();

/**
 * Facts a rule can see without a model ("my sister is Ana", "I live in Lisbon", "I work at Acme"): what the
 * offline demo model extracts, so `npm start` with no model server still remembers plain statements.
 */
export function plainFacts(text: string): MemoryExtraction['facts'] {
  const facts: MemoryExtraction['facts'] = [];
  for (const m of text.matchAll(/\bmy\s+([a-z][\w ]{0,40}?)\s+(?:is|are)\s+([^.,;!?\n]{1,80}?)(?=\s+(?:and|but|so|because)\b|[.,;!?\n]|$)/gi)) {
    const [, what = '', value = ''] = m;
    if (/^(question|answer|goal|request)$/i.test(what.trim())) continue;
    facts.push({ subject: 'user', predicate: what.trim().toLowerCase(), object: value.trim(), text: sentence(`The user's ${what.trim()} is ${value.trim()}.`) });
  }
  for (const m of text.matchAll(/\bI\s+(live|work|study)\s+(in|at|for)\s+([^.,;!?\n]{1,80}?)(?=\s+(?:and|but|so|because)\b|[.,;!?\n]|$)/gi)) {
    const [, verb = '', prep = '', value = ''] = m;
    facts.push({
      subject: 'user',
      predicate: `${verb.toLowerCase()}s ${prep.toLowerCase()}`,
      object: value.trim(),
      text: sentence(`The user ${verb.toLowerCase()}s ${prep.toLowerCase()} ${value.trim()}.`),
    });
  }
  return facts;
}

/** The offline demo model's reply to a pass: a plain summary, the facts `plainFacts` sees, an episode when tools ran. */
export function demoMemoryPass(context: MemoryPassContext): MemoryExtraction | MemoryPromotion {
  const said = context.transcript.filter((l) => l.role === 'user').map((l) => l.text);
  const answered = context.transcript.filter((l) => l.role === 'assistant').map((l) => l.text);
  const tools = context.transcript.filter((l) => l.role === 'tool').map((l) => oneLine(l.text, 200));
  const known = new Set(context.known.map((k) => k.toLowerCase()));
  const facts = said.flatMap(plainFacts).filter((f) => !known.has(f.text.toLowerCase()));
  const goal = oneLine(context.goals[0] ?? said[0] ?? 'a request', 300);
  const outcome = oneLine(answered.at(-1) ?? 'no answer', 500);
  const episode = tools.length > 0 ? { goal, steps: tools.slice(0, 20), outcome, lessons: [] } : null;
  if (context.call === 'memory_promotion') return { facts, episode };
  return { summary: clip(`The user asked: ${goal}. The agent answered: ${outcome}`, 1_000), facts, episode };
}

const MEMORY_PASS_CONTEXT: ContextKind<MemoryPassContext> = { label: 'a MemoryPassContext (goals, transcript)', is: isMemoryPassContext };

export const memoryExtraction = modelCall({
  name: 'memory_extraction',
  schema: MemoryExtractionSchema,
  context: MEMORY_PASS_CONTEXT,
  messages: memoryPassMessages,
  demo: (ctx) => demoMemoryPass(ctx) as MemoryExtraction,
});

export const memoryPromotion = modelCall({
  name: 'memory_promotion',
  schema: MemoryPromotionSchema,
  context: MEMORY_PASS_CONTEXT,
  messages: memoryPassMessages,
  demo: demoMemoryPass,
});
