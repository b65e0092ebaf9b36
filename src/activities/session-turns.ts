/**
 * A conversation's turns written to its session's memory thread — by the session (a person's message,
 * a run's question) and by the call that closes a session's run (its answer, before it reports: the
 * session then has no write to make, and the answer is in the thread before the run's result is).
 */
import { createHash } from 'node:crypto';
import type { LongTermMemory } from '../longterm/contract';
import type { OperationMeta } from '../memory/model';
import { turnChunk } from '../sessions/session-chunks';
import type { Turn } from '../sessions/session-model';
import { endingTurnKey, reportTurn } from '../sessions/session-state';
import { operationIdFor, type MemoryService } from '../store/memory-service';
import type { RunReport } from '../engine/contract';

export interface SessionTurnDeps {
  memory: MemoryService;
  /** react_mem: every conversation message also goes to the user's long-term recall memory. */
  longterm?: LongTermMemory;
}

/** The first `length` hex digits of the text's SHA-256: short, stable names (message ids, checkpoints). */
export const shortHash = (text: string, length: number) => createHash('sha256').update(text).digest('hex').slice(0, length);

/** Who wrote a change of a session's thread, for its audit. */
export const sessionMeta = (sessionId: string, reason: string, trigger: string): OperationMeta => ({ origin: 'system', reason, trigger: `${sessionId}: ${trigger}` });

/**
 * Adds turns to a session's thread under `key` (a retry, or another writer with the same key, writes
 * nothing twice) and returns their message ids.
 */
export async function addSessionTurns(deps: SessionTurnDeps, { sessionId, threadId, turns, key }: { sessionId: string; threadId: string; turns: Turn[]; key: string }): Promise<string[]> {
  const messageIds = turns.map((_, i) => `msg_${shortHash(`${key}#${i}`, 12)}`);
  if (turns.length === 0) return messageIds;
  await deps.memory.apply(
    threadId,
    { op: 'add', chunks: turns.map((t, i) => turnChunk(sessionId, t, messageIds[i] ?? '')) },
    sessionMeta(sessionId, 'conversation turn', turns.map((t) => (t.role === 'user' ? 'user message' : `reply of ${t.runId ?? 'the session'}`)).join(', ')),
    { operationId: operationIdFor(`${key}:turns`) },
  );
  // Past the hard limit (a long pasted text) the thread is shortened at once, without a model
  // call, so the reply is not held up; summaries wait for compressHistory.
  await deps.memory.compactIfNeeded(threadId, { reason: 'token limit exceeded', trigger: `${sessionId}: conversation turn` }, { summarize: false });
  const userId = deps.longterm ? await deps.memory.ownerOf(threadId) : null;
  if (deps.longterm && userId) {
    // Recall memory (seed 002): searchable across sessions by text and by the same short id; a retry adds nothing twice.
    const messages = turns.map((t, i) => ({ id: messageIds[i] ?? '', sessionId, role: t.role, text: t.text, at: t.at }));
    await deps.longterm.addMessages(userId, messages, { origin: 'system', reason: 'conversation message', sessionId });
  }
  return messageIds;
}

/**
 * The ending a run reports to its session, with its turn (the answer, or why it failed) added to the
 * session's thread first and the report marked `recorded`. Reports with no turn go as they are.
 */
export async function recordEnding(deps: SessionTurnDeps, { sessionId, threadId, report }: { sessionId: string; threadId: string; report: RunReport }): Promise<RunReport> {
  const turn = reportTurn(report, new Date().toISOString());
  const key = endingTurnKey(report);
  if (!turn || !key) return report;
  await addSessionTurns(deps, { sessionId, threadId, turns: [turn], key });
  return { ...report, recorded: true };
}
