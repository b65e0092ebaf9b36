/**
 * `retrieve_message` (seed 004's ConversationMemory): a conversation message —
 * what the user said or what the agent answered — by its short id, so a plan can
 * go back to a message whose full text was compacted out of its context. It
 * looks only in the caller's own threads (its run's, its parent run's, its
 * session's), and finds only what their heads still hold or folded in.
 */
import { z } from 'zod';
import type { ChunkType } from '../memory/model';
import { renderContent } from '../memory/parser';
import { defineTool } from './tool';

/** Chunk types that are conversation messages, and who spoke. */
const ROLE_OF: Partial<Record<ChunkType, 'user' | 'assistant'>> = { user: 'user', response: 'assistant', output: 'assistant' };

export interface RetrievedMessage {
  role: 'user' | 'assistant';
  content: string;
  at: string;
}

export const retrieveMessage = defineTool({
  name: 'retrieve_message',
  quick: true,
  description:
    'Retrieves the full text of an earlier conversation message (the user\'s or yours) by its short id, e.g. "msg_3k9x0a1b2c", as quoted in the conversation.',
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
    if (!chunk || !role) throw new Error(`no message "${messageId}"`);
    return { role, content: renderContent(chunk.content), at: chunk.createdAt };
  },
});
