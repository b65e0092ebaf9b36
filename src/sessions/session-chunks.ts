/**
 * How a session's conversation lives in its memory thread (seed 000's layers as
 * seed 001 chunks): each turn a `user` or `response` chunk, TaskState one
 * CRITICAL `workflow` chunk, which also names the turns compression folded into
 * it (seed 004: `retrieve_message` fetches them by id). The thread is the one
 * place the conversation lives: the session view, /state, compression and every
 * planner prompt read it from here. Pure.
 */
import { z } from 'zod';
import type { Chunk, ChunkInput } from '../memory/model';
import type { TaskState, Turn } from './session-model';
import { oneLine } from '../text/clip';

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
/** The compressed turns a session's prompts still name (the newest); older ones stay retrievable, unnamed. */
export const MAX_EARLIER_TURNS = 30;
const PREVIEW_CHARS = 80;

/** A turn compression removed: its id and how it began, enough to decide whether to fetch it. */
export interface EarlierTurn {
  messageId: string;
  role: Turn['role'];
  preview: string;
}

/** The conversation a session thread holds. */
export interface Conversation {
  taskState: TaskState | null;
  /** Oldest first. */
  recentTurns: Turn[];
  /** Turns folded into TaskState, oldest first. */
  earlier: EarlierTurn[];
}

export function turnChunk(sessionId: string, turn: Turn, messageId: string): ChunkInput {
  return {
    type: turn.role === 'user' ? 'user' : 'response',
    content: { kind: 'text', text: turn.text },
    messageId,
    provenance: { sessionId, ...(turn.runId ? { runId: turn.runId } : {}) },
  };
}

/**
 * TaskState is written by the system (the session), never by the agent, and never compacted away.
 * `earlier` names the turns folded into it, for retrieve_message.
 */
export function taskStateChunk(sessionId: string, taskState: TaskState, earlier: readonly EarlierTurn[] = []): ChunkInput {
  const data = { kind: TASK_STATE_KIND, taskState, ...(earlier.length > 0 ? { earlier: earlier.slice(-MAX_EARLIER_TURNS) } : {}) };
  return {
    type: 'workflow',
    content: { kind: 'json', data },
    priority: 90,
    retention: 'CRITICAL',
    agentModifiable: false,
    provenance: { sessionId },
  };
}

export const isTurnChunk = (c: Chunk) => c.type === 'user' || c.type === 'response';

const jsonKind = (c: Chunk): unknown => (c.content.kind === 'json' ? (c.content.data as { kind?: unknown } | null)?.kind : undefined);

export const isTaskStateChunk = (c: Chunk): boolean => c.type === 'workflow' && jsonKind(c) === TASK_STATE_KIND;

/** The TaskState a chunk holds, or null when it holds none (or a malformed one). */
export function readTaskState(c: Chunk): TaskState | null {
  if (!isTaskStateChunk(c) || c.content.kind !== 'json') return null;
  const parsed = TaskStateSchema.safeParse((c.content.data as { taskState?: unknown }).taskState);
  return parsed.success ? parsed.data : null;
}

/**
 * A turn chunk as a Turn: its text, when it was written, its message id and run. A turn shortened by
 * compaction names the message it was made from: that id, which still fetches the whole text.
 */
export function readTurn(c: Chunk): Turn {
  const messageId = c.provenance.messageId ?? c.messageId;
  return {
    role: c.type === 'user' ? 'user' : 'assistant',
    text: c.content.kind === 'text' ? c.content.text : JSON.stringify(c.content),
    at: c.createdAt,
    ...(messageId ? { messageId } : {}),
    ...(c.provenance.runId ? { runId: c.provenance.runId } : {}),
  };
}

const isEarlierTurn = (t: unknown): t is EarlierTurn => typeof t === 'object' && t !== null && typeof (t as EarlierTurn).messageId === 'string' && typeof (t as EarlierTurn).preview === 'string';

function readEarlier(c: Chunk): EarlierTurn[] {
  if (!isTaskStateChunk(c) || c.content.kind !== 'json') return [];
  const turns = (c.content.data as { earlier?: unknown }).earlier;
  return Array.isArray(turns) ? turns.filter(isEarlierTurn).map((t) => ({ messageId: t.messageId, role: t.role === 'user' ? 'user' : 'assistant', preview: t.preview })) : [];
}

export function earlierTurn(turn: Turn): EarlierTurn | null {
  if (!turn.messageId) return null;
  return { messageId: turn.messageId, role: turn.role, preview: oneLine(turn.text, PREVIEW_CHARS) };
}

/** The conversation a thread holds: its TaskState, its last `maxTurns` turns and the turns compressed earlier. */
export function readConversation(chunks: readonly Chunk[], maxTurns: number): Conversation {
  const taskState = chunks.map(readTaskState).find((t): t is TaskState => t !== null) ?? null;
  const turns = chunks.filter(isTurnChunk).map(readTurn);
  return { taskState, recentTurns: turns.slice(Math.max(0, turns.length - maxTurns)), earlier: chunks.flatMap(readEarlier) };
}

/**
 * What compression does to a thread, as one operation: the turn chunks before the last `keep` and the
 * TaskState chunk are replaced by a new TaskState chunk (made from `taskState`, once the summary is known)
 * that names those turns; null when there is nothing to fold.
 */
export function planCompression(
  sessionId: string,
  chunks: readonly Chunk[],
  keep: number,
): { previous: TaskState | null; older: Turn[]; replaced: string[]; kept: Turn[]; chunk: (taskState: TaskState) => ChunkInput } | null {
  const turnChunks = chunks.filter(isTurnChunk);
  const cut = Math.max(0, turnChunks.length - keep);
  if (cut === 0) return null;
  const olderChunks = turnChunks.slice(0, cut);
  const taskStates = chunks.filter(isTaskStateChunk);
  const older = olderChunks.map(readTurn);
  const earlier = [...taskStates.flatMap(readEarlier), ...older.flatMap((t) => earlierTurn(t) ?? [])];
  return {
    previous: readConversation(chunks, 0).taskState,
    older,
    replaced: [...taskStates, ...olderChunks].map((c) => c.id),
    kept: turnChunks.slice(cut).map(readTurn),
    chunk: (taskState) => taskStateChunk(sessionId, taskState, earlier),
  };
}
