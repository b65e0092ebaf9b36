/**
 * The activities of a session (AgentSessionWorkflow): everything it does to its
 * memory thread — the session is that thread's single writer — and the
 * `task_state_summary` model call that compresses older turns into TaskState.
 */
import { createHash } from 'node:crypto';
import type { ModelProvider } from '../llm/provider';
import { completeStructured } from '../llm/structured';
import type { Chunk, OperationMeta } from '../memory/model';
import { isTaskStateChunk, isTurnChunk, taskStateChunk, turnChunk } from '../sessions/session-chunks';
import type { TaskState, Turn } from '../sessions/session-model';
import { taskStateSummaryContext, taskStateSummaryMessages } from '../sessions/task-state-summary';
import { operationIdFor, type MemoryService } from '../store/memory-service';
import type { ToolRegistry } from '../tools/registry';
import { describeCodeVersion } from '../planning/code-version';
import { codeVersionOf } from './code-version';
import { idempotencyKey, withHeartbeats } from './heartbeat';
import { asFailure } from './plan-activities';

export interface SessionActivityDeps {
  provider: ModelProvider;
  tools: ToolRegistry;
  memory: MemoryService;
  /** Model replies failing validation are sent back this many times in total. @default 3 */
  repairAttempts?: number;
}

const hash = (text: string, length: number) => createHash('sha256').update(text).digest('hex').slice(0, length);

/**
 * What this worker can do, as a fingerprint: its model, prompts and tools (the version runs record).
 * When it changes, plans made before are stale (seed 000's workflow versioning).
 */
export const capabilitiesFingerprint = (deps: Pick<SessionActivityDeps, 'provider' | 'tools'>): string => describeCodeVersion(codeVersionOf(deps.provider, deps.tools));

export function createSessionActivities(deps: SessionActivityDeps) {
  const attempts = deps.repairAttempts ?? 3;
  const system = (sessionId: string, reason: string, trigger: string): OperationMeta => ({ origin: 'system', reason, trigger: `${sessionId}: ${trigger}` });

  async function writeTaskState(threadId: string, sessionId: string, taskState: TaskState, meta: OperationMeta, key: string): Promise<void> {
    const { chunks } = await deps.memory.view(threadId);
    const existing = chunks.find(isTaskStateChunk);
    const chunk = taskStateChunk(sessionId, taskState);
    await deps.memory.apply(
      threadId,
      existing ? { op: 'update', chunkId: existing.id, patch: { content: chunk.content } } : { op: 'add', chunks: [chunk] },
      meta,
      { operationId: operationIdFor(key) },
    );
  }

  return {
    /** At the start of each run of a session: its thread exists, and what the worker can do now. */
    async openSession({ sessionId, userId, threadId }: { sessionId: string; userId: string; threadId: string }): Promise<{ capabilities: string }> {
      await deps.memory.ensureThread({
        threadId,
        userId,
        chunks: [
          {
            type: 'agent',
            content: { kind: 'json', data: { session: sessionId, userId, role: 'conversation memory of this session: recent turns, task state, runs' } },
            priority: 90,
            retention: 'CRITICAL',
            agentModifiable: false,
          },
        ],
        meta: system(sessionId, 'memory thread of a session', `session ${sessionId} started`),
      });
      return { capabilities: capabilitiesFingerprint(deps) };
    },

    /**
     * Mirrors turns into the thread (idempotently: a retry writes nothing twice) and returns their
     * message ids — plus the capabilities fingerprint, so every message notices a change of tools.
     */
    async recordTurns({ sessionId, threadId, turns }: { sessionId: string; threadId: string; turns: Turn[] }): Promise<{ messageIds: string[]; capabilities: string }> {
      const key = idempotencyKey();
      const messageIds = turns.map((_, i) => `msg_${hash(`${key}#${i}`, 12)}`);
      if (turns.length > 0) {
        await deps.memory.apply(
          threadId,
          { op: 'add', chunks: turns.map((t, i) => turnChunk(sessionId, t, messageIds[i] ?? '')) },
          system(sessionId, 'conversation turn', turns.map((t) => (t.role === 'user' ? 'user message' : `reply of ${t.runId ?? 'the session'}`)).join(', ')),
          { operationId: operationIdFor(`${key}:turns`) },
        );
        // Past the hard limit (a long pasted text) the thread is shortened at once, without a model
        // call, so the reply is not held up; summaries wait for compressHistory.
        await deps.memory.compactIfNeeded(threadId, { reason: 'token limit exceeded', trigger: `${sessionId}: conversation turn` }, { summarize: false });
      }
      return { messageIds, capabilities: capabilitiesFingerprint(deps) };
    },

    /**
     * Seed 000's compression: `task_state_summary` folds the older turns into a new TaskState, which
     * replaces the thread's TaskState chunk before the older turn chunks are deleted (a crash in
     * between loses nothing). Turn chunks other than `keepMessageIds` leave the thread.
     */
    async compressHistory(input: { sessionId: string; threadId: string; taskState: TaskState; older: Turn[]; keepMessageIds: string[] }): Promise<{ taskState: TaskState }> {
      return withHeartbeats(async (signal) => {
        const key = idempotencyKey();
        const context = taskStateSummaryContext(input.taskState, input.older);
        let reply;
        try {
          reply = await completeStructured(deps.provider, { name: 'task_state_summary', messages: taskStateSummaryMessages(context), context }, attempts, signal);
        } catch (err) {
          throw asFailure(err);
        }
        const taskState: TaskState = { ...reply, UpdatedAt: new Date().toISOString() };
        const trigger = `${input.older.length} older turn(s) left the recent history`;
        await writeTaskState(input.threadId, input.sessionId, taskState, system(input.sessionId, 'task state updated by compression', trigger), `${key}:task-state`);
        const keep = new Set(input.keepMessageIds);
        const { chunks } = await deps.memory.view(input.threadId);
        // A turn shortened by compaction is a new chunk whose provenance names the message it was made from.
        const kept = (c: Chunk) => keep.has(c.messageId ?? '') || keep.has(c.provenance.messageId ?? '');
        const older = chunks.filter((c) => isTurnChunk(c) && !kept(c)).map((c) => c.id);
        if (older.length > 0) {
          await deps.memory.apply(input.threadId, { op: 'delete', chunkIds: older }, system(input.sessionId, 'older turns compressed into the task state', trigger), {
            operationId: operationIdFor(`${key}:delete`),
          });
        }
        await deps.memory.compactIfNeeded(input.threadId, { reason: 'soft token limit exceeded', trigger: `${input.sessionId}: ${trigger}` });
        return { taskState };
      });
    },

    /** `/clear`: the thread forgets the turns and the TaskState; the audit records it either way. */
    async clearSession({ sessionId, threadId, cancelledRuns }: { sessionId: string; threadId: string; cancelledRuns: string[] }): Promise<void> {
      const key = idempotencyKey();
      const meta = system(sessionId, '/clear', `the person cleared the session${cancelledRuns.length > 0 ? `; cancelled ${cancelledRuns.join(', ')}` : ''}`);
      const { chunks } = await deps.memory.view(threadId);
      const forgotten = chunks.filter((c) => isTurnChunk(c) || isTaskStateChunk(c)).map((c) => c.id);
      if (forgotten.length > 0) await deps.memory.apply(threadId, { op: 'delete', chunkIds: forgotten }, meta, { operationId: operationIdFor(`${key}:clear`) });
      else await deps.memory.checkpoint(threadId, `cleared-${hash(key, 8)}`, meta);
    },
  };
}

export type SessionActivities = ReturnType<typeof createSessionActivities>;
