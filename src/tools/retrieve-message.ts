/**
 * `retrieve_message` (seed 004's ConversationMemory): a conversation message —
 * what the user said or what the agent answered — by its short id, so a plan can
 * go back to a message whose full text was compacted out of its context. It
 * looks in the caller's own threads first (its run's, its parent run's, its
 * session's: what their heads still hold or folded in), then — under react_mem —
 * in the user's recall memory, which keeps every message of the user's earlier
 * sessions under the same ids (seed 004: conversation memory persists across
 * tasks and sessions). Never another user's.
 */
import { z } from 'zod';
import type { ChunkType } from '../memory/model';
import { renderContent } from '../memory/parser';
import type { LongTermMemory } from '../longterm/contract';
import { defineTool, type ToolDefinition } from './tool';

/** Chunk types that are conversation messages, and who spoke. */
const ROLE_OF: Partial<Record<ChunkType, 'user' | 'assistant'>> = { user: 'user', response: 'assistant', output: 'assistant' };

export interface RetrievedMessage {
  role: 'user' | 'assistant';
  content: string;
  at: string;
}

/** The tool, reading the user's recall memory too when `recall` is given (react_mem). */
export const retrieveMessageTool = (recall?: Pick<LongTermMemory, 'getMessage'>): ToolDefinition =>
  defineTool({
    name: 'retrieve_message',
    quick: true,
    description: 'Retrieves the full text of an earlier conversation message (the user\'s or yours) by its short id, e.g. "msg_3k9x0a1b2c", as quoted in the conversation.',
    input: z.object({ messageId: z.string().trim().min(1).max(64) }),
    async handler({ messageId }, ctx): Promise<RetrievedMessage> {
      if (!ctx.memory) throw new Error('retrieve_message needs the memory service, and this worker was started without one');
      // Only the caller's own threads, as they are now: never another's message, nor one deleted or rolled back.
      const chunk = await ctx.memory.findMessage(
        messageId,
        { threadIds: ctx.threads ?? [], userId: ctx.userId },
        { origin: 'agent', reason: 'retrieve_message', trigger: `tool step ${ctx.stepId}`, runId: ctx.runId, stepId: ctx.stepId },
      );
      const role = chunk ? ROLE_OF[chunk.type] : undefined;
      if (chunk && role) return { role, content: renderContent(chunk.content), at: chunk.createdAt };
      // An earlier session's message, kept in the user's recall memory (the user's own only).
      const kept = recall
        ? await recall.getMessage(ctx.userId, messageId, { origin: 'agent', reason: `retrieve_message (step ${ctx.stepId})`, runId: ctx.runId, ...(ctx.sessionId ? { sessionId: ctx.sessionId } : {}) })
        : null;
      if (kept) return { role: kept.role, content: kept.text, at: kept.at };
      throw new Error(`no message "${messageId}"`);
    },
  });

/** The tool without recall memory (MEMORY_MANAGER=react): the caller's own threads only. */
export const retrieveMessage = retrieveMessageTool();
