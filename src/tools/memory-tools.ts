/**
 * Seed 002's option A: the agent reads and writes long-term memory itself, mid-invocation
 * (`react_mem` only). Every write names the run (and session) it came from.
 */
import { z } from 'zod';
import { EpisodeInputSchema, FactInputSchema, type LongTermMemory, type Provenance, type ReadMeta, type WriteMeta } from '../longterm/contract';
import { episodeLine, factLine } from '../longterm/context-chunks';
import { factSourceOf } from '../longterm/fact-source';
import { renderContent } from '../memory/parser';
import { defineTool, type ToolContext, type ToolDefinition } from './tool';

const provenanceOf = (ctx: ToolContext): Provenance => ({ runId: ctx.runId, ...(ctx.sessionId ? { sessionId: ctx.sessionId } : {}), messageIds: [] });
const metaOf = (ctx: ToolContext, reason: string): WriteMeta => ({ origin: 'agent', reason, runId: ctx.runId, ...(ctx.sessionId ? { sessionId: ctx.sessionId } : {}) });
/**
 * What the person said, and what tools and memory returned, in the caller's threads (its run's, its
 * parent's, its session's): where the words of a fact the agent stores may come from.
 */
async function threadTexts(ctx: ToolContext): Promise<[said: string[], returned: string[]]> {
  const said: string[] = [];
  const returned: string[] = [];
  if (!ctx.memory) return [said, returned];
  for (const threadId of ctx.threads ?? (ctx.runThread ? [ctx.runThread] : [])) {
    const view = await ctx.memory.view(threadId).catch(() => null);
    for (const chunk of view?.chunks ?? []) {
      if (chunk.type === 'user') said.push(renderContent(chunk.content));
      // A top-level run's goal is the person's words (a sub-plan's is the model's).
      else if (chunk.type === 'delegation' && chunk.content.kind === 'json') {
        const { goal, parentRunId } = chunk.content.data as { goal?: unknown; parentRunId?: unknown };
        if (typeof goal === 'string' && parentRunId === undefined) said.push(goal);
      } else if (chunk.type === 'action_response' || chunk.type === 'environment') returned.push(renderContent(chunk.content));
    }
  }
  return [said, returned];
}

const query = z.object({ query: z.string().trim().min(1).max(1000) });
/** The agent reads long-term memory through a tool: recorded in the long-term audit with the run and step. */
const readerOf = (ctx: ToolContext, tool: string): ReadMeta => metaOf(ctx, `${tool} (step ${ctx.stepId})`);

export function longTermTools(longterm: LongTermMemory): ToolDefinition[] {
  return [
    defineTool({
      name: 'retrieve_facts',
      description: 'Searches what you know about the user (long-term facts, valid now, with when they became true). Use it when the context lacks something the user may have told you before.',
      input: query,
      async handler({ query: q }, ctx) {
        const reader = readerOf(ctx, 'retrieve_facts');
        const hits = await longterm.search(ctx.userId, { query: q, kinds: ['fact'], k: 10 }, reader);
        const facts = (await Promise.all(hits.map((h) => longterm.getFact(ctx.userId, h.id, reader)))).filter((f) => f !== null);
        return { facts: facts.map(factLine) };
      },
    }),
    defineTool({
      name: 'recall_episodes',
      description: 'Finds earlier tasks like this one (goal, steps, outcome, lessons): "have I solved this before?"',
      input: query,
      async handler({ query: q }, ctx) {
        const episodes = await longterm.listEpisodes(ctx.userId, { q, limit: 5 }, readerOf(ctx, 'recall_episodes'));
        return { episodes: episodes.map(episodeLine) };
      },
    }),
    defineTool({
      name: 'store_fact',
      description:
        'Remembers a lasting fact about the user or their world across conversations: subject, predicate, object and the fact as a sentence (validFrom: ISO date it became true, if not now). A contradicting fact replaces the old one; a repeated one strengthens it.',
      input: FactInputSchema,
      async handler(fact, ctx) {
        const source = factSourceOf(fact, ...(await threadTexts(ctx)));
        const recorded = await longterm.recordFact(ctx.userId, fact, { ...provenanceOf(ctx), source }, metaOf(ctx, 'store_fact'));
        return { factId: recorded.fact.id, outcome: recorded.outcome, ...(recorded.previous ? { replaced: recorded.previous.text } : {}) };
      },
    }),
    defineTool({
      name: 'record_episode',
      description: 'Records a finished task worth learning from: its goal, key steps, outcome and lessons.',
      input: EpisodeInputSchema,
      async handler(episode, ctx) {
        const recorded = await longterm.recordEpisode(ctx.userId, episode, 'invocation', provenanceOf(ctx), metaOf(ctx, 'record_episode'));
        return { episodeId: recorded.id };
      },
    }),
  ];
}
