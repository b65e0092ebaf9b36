/**
 * Long-term memory's passes (seed 002), run by the per-user memory workflow off the answer path:
 * `extractMemory` after a burst of invocations (a summary appended to the conversation, facts,
 * an episode; then the runs' working memory is discarded), `promoteConversation` when a
 * conversation ends. (Jobs reach that workflow through memory-jobs.ts.) Each pass journals the model's reply and what it wrote under the activity's
 * idempotency key: a retry neither calls the model again nor writes twice.
 */
import type { Episode, LongTermMemory, MemoryExtraction, MemoryPromotion, Provenance, WriteMeta } from '../longterm/contract';
import { scheduledRunOf } from '../planning/schedule-spec';
import { memoryPassMessages, type MemoryPassContext } from '../calls/memory-passes';
import type { ModelProvider } from '../llm/provider';
import { completeStructured } from '../llm/structured';
import { WORKING_FLOW_TYPES, type Chunk } from '../memory/model';
import { renderContent } from '../memory/parser';
import { runThreadId } from '../memory/run-chunks';
import { readConversation } from '../sessions/session-chunks';
import { sessionThreadId } from '../temporal/sessions';
import { JOURNALS, type KeyValueStore } from '../store/kv';
import { operationIdFor, ThreadNotFoundError, type MemoryService } from '../store/memory-service';
import { idempotencyKey, withHeartbeats } from './heartbeat';
import { asFailure } from './plan-activities';

export interface MemoryActivityDeps {
  provider: ModelProvider;
  memory: MemoryService;
  longterm: LongTermMemory;
  /** Journal of the passes (model replies, what was written). */
  store: KeyValueStore;
  repairAttempts?: number;
}

const JOURNAL = JOURNALS.memoryPasses;
/** Messages of an imported conversation one pass reads; a longer conversation takes several passes. */
export const IMPORT_WINDOW = 150;
/** The most messages of one imported conversation extracted (the rest stay searchable as messages). */
const IMPORT_MAX_MESSAGES = 3_000;
/** Facts already known that a pass is shown, so it adds only what is new. */
const KNOWN_FACTS = 40;

type Line = MemoryPassContext['transcript'][number];

/** What a run did, from its memory thread, as transcript lines (recalled memory and bookkeeping left out). */
export function runTranscript(chunks: readonly Chunk[]): Line[] {
  const lines: Line[] = [];
  for (const chunk of chunks) {
    const text = renderContent(chunk.content);
    switch (chunk.type) {
      case 'delegation':
      case 'user':
        lines.push({ role: 'user', text: chunk.type === 'delegation' ? (goalOf(chunk) ?? text) : text });
        break;
      case 'response':
      case 'thinking':
        lines.push({ role: 'assistant', text });
        break;
      case 'output':
        // The ending record (json) says how the run ended; the answer is text.
        if (chunk.content.kind === 'text') lines.push({ role: 'assistant', text });
        break;
      case 'action':
      case 'action_response':
      case 'compacted':
        lines.push({ role: 'tool', text });
        break;
      default:
        break;
    }
  }
  // The answer is both the run's output and its ending record: once is enough.
  return lines.filter((l, i) => i === 0 || l.text !== lines[i - 1]?.text || l.role !== lines[i - 1]?.role);
}

function goalOf(chunk: Chunk): string | null {
  const data = chunk.content.kind === 'json' ? (chunk.content.data as { goal?: unknown }) : null;
  return typeof data?.goal === 'string' ? data.goal : null;
}

const describeWrites = (facts: number, summary: boolean, episode: boolean) => [`${facts} fact(s)`, ...(summary ? ['1 summary'] : []), ...(episode ? ['1 episode'] : [])].join(', ');

export function createMemoryActivities(deps: MemoryActivityDeps) {
  const attempts = deps.repairAttempts ?? 3;

  async function pass<R extends MemoryExtraction | MemoryPromotion>(name: MemoryPassContext['call'], context: MemoryPassContext, key: string, signal: AbortSignal): Promise<R> {
    const journaled = await deps.store.get<R>(JOURNAL, `${key}:reply`);
    if (journaled) return journaled;
    let reply: R;
    try {
      reply = (await completeStructured(deps.provider, { name, messages: memoryPassMessages(context), context }, attempts, signal)) as R;
    } catch (err) {
      throw asFailure(err);
    }
    await deps.store.put(JOURNAL, `${key}:reply`, reply);
    return reply;
  }

  /**
   * A pass as one activity: heartbeating, and done once — what it wrote is journaled under the
   * activity's idempotency key, so a retry after it finished returns that and does nothing again.
   */
  const once = (work: (key: string, signal: AbortSignal) => Promise<{ wrote: string }>) =>
    withHeartbeats(async (signal) => {
      const key = idempotencyKey();
      const finished = await deps.store.get<{ wrote: string }>(JOURNAL, `${key}:done`);
      if (finished) return finished;
      const wrote = await work(key, signal);
      await deps.store.put(JOURNAL, `${key}:done`, wrote);
      return wrote;
    });

  /** What a pass found: the facts, and the episode when there is one (summaries are the caller's, per pass kind). */
  async function record(userId: string, reply: MemoryPromotion, scope: 'invocation' | 'conversation', provenance: Provenance, meta: WriteMeta, extra: Pick<Episode, 'scheduled'> = {}): Promise<void> {
    // What a pass extracts is the model's reading of the conversation.
    for (const fact of reply.facts) await deps.longterm.recordFact(userId, fact, { ...provenance, source: provenance.source ?? 'model' }, meta);
    if (reply.episode) await deps.longterm.recordEpisode(userId, reply.episode, scope, provenance, meta, extra);
  }

  const known = async (userId: string) => (await deps.longterm.listFacts(userId, { limit: KNOWN_FACTS }, { origin: 'system', reason: 'known facts for a memory pass' })).map((f) => f.text);

  /** The ids of a session's messages that belong to these runs (their provenance), as the session thread holds them. */
  async function sessionMessageIds(sessionId: string | null, runIds: readonly string[]): Promise<string[]> {
    if (!sessionId) return [];
    try {
      const { chunks } = await deps.memory.view(sessionThreadId(sessionId));
      return readConversation(chunks, Number.POSITIVE_INFINITY)
        .recentTurns.filter((t) => t.runId !== undefined && runIds.includes(t.runId) && t.messageId)
        .map((t) => t.messageId ?? '');
    } catch (err) {
      if (err instanceof ThreadNotFoundError) return [];
      throw err;
    }
  }

  return {
    /**
     * One pass over a burst of invocations of one conversation: what the runs did (their memory
     * threads) → `memory_extraction` → a summary appended to the conversation, facts, an episode;
     * then each run's working memory is replaced by the summary (its earlier states keep it all).
     */
    async extractMemory(input: { userId: string; sessionId: string | null; runs: { runId: string; goal: string }[] }): Promise<{ wrote: string }> {
      return once(async (key, signal) => {
        const { userId } = input;
        const threads: { runId: string; threadId: string; chunks: Chunk[] }[] = [];
        for (const run of input.runs) {
          const threadId = runThreadId(run.runId);
          const view = await deps.memory.view(threadId, { origin: 'system', reason: 'memory extraction', trigger: 'invocation ended', runId: run.runId }).catch((err: unknown) => {
            if (err instanceof ThreadNotFoundError) return null;
            throw err;
          });
          if (view) threads.push({ runId: run.runId, threadId, chunks: view.chunks });
        }
        const transcript = threads.flatMap((t) => runTranscript(t.chunks));
        if (transcript.length === 0) return { wrote: 'nothing to extract' };
        const runIds = input.runs.map((r) => r.runId);
        // A run a schedule started says so to the pass, and its episode records it (issue 33).
        const scheduled = input.runs.map((r) => scheduledRunOf(r.runId)).find((s) => s !== null);
        const goals = input.runs.map((r) => {
          const origin = scheduledRunOf(r.runId);
          return origin ? `${r.goal} (a scheduled run: ${origin.scheduleId}, due ${origin.dueAt})` : r.goal;
        });
        const context: MemoryPassContext = { call: 'memory_extraction', goals, transcript, known: await known(userId) };
        const reply = await pass<MemoryExtraction>('memory_extraction', context, key, signal);
        const provenance: Provenance = {
          ...(input.sessionId ? { sessionId: input.sessionId } : {}),
          ...(runIds.length === 1 ? { runId: runIds[0] } : {}),
          messageIds: await sessionMessageIds(input.sessionId, runIds),
        };
        const meta = {
          origin: 'agent' as const,
          reason: 'memory extraction after an invocation',
          ...(runIds.length === 1 ? { runId: runIds[0] } : {}),
          ...(input.sessionId ? { sessionId: input.sessionId } : {}),
        };
        const summary = reply.summary.trim();
        // A run outside any conversation is its own: its summary is found by search, under its run id.
        if (summary) await deps.longterm.addSummary(userId, input.sessionId ?? runIds[0] ?? 'unknown', summary, provenance, meta);
        await record(userId, reply, 'invocation', provenance, meta, scheduled ? { scheduled } : {});
        // Working memory is discarded once summarized (seed 002): the head keeps the goal, the answer and the summary.
        for (const t of threads) {
          const working = t.chunks.filter((c) => WORKING_FLOW_TYPES.includes(c.type) || (c.type === 'environment' && c.retention !== 'CRITICAL'));
          if (working.length === 0) continue;
          await deps.memory.apply(
            t.threadId,
            {
              op: 'batch_replace',
              chunkIds: working.map((c) => c.id),
              chunk: { type: 'compacted', content: { kind: 'text', text: `Summarized into long-term memory: ${summary || 'nothing worth keeping'}` }, provenance: { runId: t.runId } },
            },
            { origin: 'system', reason: 'working memory summarized into long-term memory', trigger: 'memory extraction', runId: t.runId },
            { operationId: operationIdFor(`${key}:${t.runId}:discard`) },
          );
        }
        return { wrote: describeWrites(reply.facts.length, summary !== '', reply.episode !== null) };
      });
    },

    /**
     * An imported conversation (POST /v1/users/:userId/memory/import): its messages, in windows of
     * IMPORT_WINDOW, → `memory_extraction` each → a summary per window, facts, episodes, with the
     * given message ids as provenance; a retry skips the windows already written.
     */
    async extractImported(input: { userId: string; sessionId: string }): Promise<{ wrote: string }> {
      return once(async (key, signal) => {
        const { userId, sessionId } = input;
        const messages = await deps.longterm.listMessages(userId, sessionId, IMPORT_MAX_MESSAGES, { origin: 'system', reason: 'memory extraction over an imported conversation', sessionId });
        const meta = { origin: 'agent' as const, reason: 'memory extraction over an imported conversation', sessionId };
        let facts = 0;
        let summaries = 0;
        let episodes = 0;
        for (let start = 0; start < messages.length; start += IMPORT_WINDOW) {
          const window = messages.slice(start, start + IMPORT_WINDOW);
          const windowKey = `${key}:w${start}`;
          if (await deps.store.get(JOURNAL, `${windowKey}:written`)) continue;
          const transcript: Line[] = window.map((m) => ({ role: m.role, text: m.name ? `${m.name}: ${m.text}` : m.text }));
          const context: MemoryPassContext = { call: 'memory_extraction', goals: [`imported conversation ${sessionId}`], transcript, known: await known(userId) };
          const reply = await pass<MemoryExtraction>('memory_extraction', context, windowKey, signal);
          const provenance: Provenance = { sessionId, messageIds: window.map((m) => m.id) };
          if (reply.summary.trim()) {
            await deps.longterm.addSummary(userId, sessionId, reply.summary.trim(), provenance, meta);
            summaries++;
          }
          await record(userId, reply, 'conversation', provenance, meta);
          facts += reply.facts.length;
          if (reply.episode) episodes++;
          await deps.store.put(JOURNAL, `${windowKey}:written`, true);
        }
        return { wrote: `imported ${sessionId}: ${messages.length} message(s) → ${facts} fact(s), ${summaries} summar${summaries === 1 ? 'y' : 'ies'}, ${episodes} episode(s)` };
      });
    },

    /** At a conversation's end: its summaries and turns → `memory_promotion` → facts and a conversation episode. */
    async promoteConversation(input: { userId: string; sessionId: string; threadId: string; reason: string }): Promise<{ wrote: string }> {
      return once(async (key, signal) => {
        const { userId, sessionId } = input;
        const { chunks } = await deps.memory.view(input.threadId, { origin: 'system', reason: 'memory promotion', trigger: `conversation ended: ${input.reason}` });
        const conversation = readConversation(chunks, Number.POSITIVE_INFINITY);
        const summaries = await deps.longterm.listSummaries(userId, sessionId, { origin: 'system', reason: 'memory promotion', sessionId });
        const transcript: Line[] = [
          ...summaries.map((s) => ({ role: 'assistant' as const, text: `(summary of an earlier part) ${s.text}` })),
          ...(conversation.taskState?.ImportantFacts ?? []).map((f) => ({ role: 'assistant' as const, text: `(noted) ${f}` })),
          ...conversation.recentTurns.map((t) => ({ role: t.role, text: t.text })),
        ];
        if (transcript.length === 0) return { wrote: 'empty conversation' };
        const context: MemoryPassContext = { call: 'memory_promotion', goals: [`conversation ${sessionId}`], transcript, known: await known(userId) };
        const reply = await pass<MemoryPromotion>('memory_promotion', context, key, signal);
        const provenance: Provenance = { sessionId, messageIds: conversation.recentTurns.flatMap((t) => (t.messageId ? [t.messageId] : [])) };
        const meta = { origin: 'agent' as const, reason: `memory promotion at the conversation's end (${input.reason})`, sessionId };
        await record(userId, reply, 'conversation', provenance, meta);
        return { wrote: describeWrites(reply.facts.length, false, reply.episode !== null) };
      });
    },
  };
}

export type MemoryActivities = ReturnType<typeof createMemoryActivities>;
