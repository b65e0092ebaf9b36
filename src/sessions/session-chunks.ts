/**
 * How a session's conversation lives in its memory thread (seed 000's layers as
 * seed 001 chunks): each turn a `user` or `response` chunk, TaskState one
 * CRITICAL `workflow` chunk. Pure: builds chunk inputs and reads them back.
 */
import { z } from 'zod';
import type { Chunk, ChunkInput } from '../memory/model';
import type { TaskState, Turn } from './session-model';

/** TaskState as read back from a chunk (here, not in session-model: the workflows must not load zod). */
const TaskStateSchema: z.ZodType<TaskState> = z.object({
  CurrentGoal: z.string(),
  ActiveFlow: z.string(),
  OpenLoops: z.array(z.string()),
  ImportantFacts: z.array(z.string()),
  LastDecision: z.string(),
  UpdatedAt: z.string(),
});

const TASK_STATE_KIND = 'task_state';

export function turnChunk(sessionId: string, turn: Turn, messageId: string): ChunkInput {
  return {
    type: turn.role === 'user' ? 'user' : 'response',
    content: { kind: 'text', text: turn.text },
    messageId,
    provenance: { sessionId, ...(turn.runId ? { runId: turn.runId } : {}) },
  };
}

/** TaskState is written by the system (the session), never by the agent, and never compacted away. */
export function taskStateChunk(sessionId: string, taskState: TaskState): ChunkInput {
  return {
    type: 'workflow',
    content: { kind: 'json', data: { kind: TASK_STATE_KIND, taskState } },
    priority: 90,
    retention: 'CRITICAL',
    agentModifiable: false,
    provenance: { sessionId },
  };
}

export const isTurnChunk = (c: Chunk) => c.type === 'user' || c.type === 'response';

export function isTaskStateChunk(c: Chunk): boolean {
  return c.type === 'workflow' && c.content.kind === 'json' && (c.content.data as { kind?: unknown } | null)?.kind === TASK_STATE_KIND;
}

/** The TaskState a chunk holds, or null when it holds none (or a malformed one). */
export function readTaskState(c: Chunk): TaskState | null {
  if (!isTaskStateChunk(c) || c.content.kind !== 'json') return null;
  const parsed = TaskStateSchema.safeParse((c.content.data as { taskState?: unknown }).taskState);
  return parsed.success ? parsed.data : null;
}

/** The conversation a thread holds: its TaskState and its last `maxTurns` turns, oldest first. */
export function readConversation(chunks: readonly Chunk[], maxTurns: number): { taskState: TaskState | null; recentTurns: Pick<Turn, 'role' | 'text'>[] } {
  const taskState = chunks.map(readTaskState).find((t): t is TaskState => t !== null) ?? null;
  const turns = chunks
    .filter(isTurnChunk)
    .map((c) => ({ role: c.type === 'user' ? ('user' as const) : ('assistant' as const), text: c.content.kind === 'text' ? c.content.text : JSON.stringify(c.content) }));
  return { taskState, recentTurns: turns.slice(Math.max(0, turns.length - maxTurns)) };
}
