/**
 * The agent's hands on its own working memory (seed 001: "whether a chunk can be modified by the
 * agent in the current thread"; seed 002's option C: the agent decides to compress). Each tool
 * works on the calling run's own thread only, through the memory service — observers, the reducer
 * (origin `agent`: it refuses CRITICAL and read-only chunks) and the audit trail — so every change
 * can be inspected and rolled back like any other. A chunk the agent may not change is refused
 * here first, with a message that says why.
 */
import { z } from 'zod';
import type { Chunk, OperationMeta, OperationRecord } from '../memory/model';
import { renderContent } from '../memory/parser';
import { operationIdFor } from '../store/memory-service';
import { defineTool, type ToolContext, type ToolDefinition, type ToolMemory } from './tool';

/** Characters of a chunk's text `list_memory` shows. */
const PREVIEW_CHARS = 160;

/** A chunk of the run's memory, as `list_memory` shows it. */
export interface MemoryChunkLine {
  chunkId: string;
  type: string;
  messageId?: string;
  retention: string;
  tokens: number;
  /** Whether update_memory and delete_memory may change it. */
  modifiable: boolean;
  preview: string;
}

/** Seed 001: the agent may change a chunk whose retention class is not CRITICAL and which is marked agent-modifiable. */
export const agentMayChange = (chunk: Pick<Chunk, 'retention' | 'agentModifiable'>): boolean => chunk.retention !== 'CRITICAL' && chunk.agentModifiable;

/** Why the agent may not change `chunk`, or null when it may. */
export function refusalFor(chunk: Chunk): string | null {
  if (chunk.retention === 'CRITICAL') return `${chunk.id} (a ${chunk.type} chunk) is CRITICAL: it cannot be changed by the agent`;
  if (!chunk.agentModifiable) return `${chunk.id} (a ${chunk.type} chunk) is read-only for the agent`;
  return null;
}

const ChunkRef = z
  .string()
  .trim()
  .regex(/^(chunk|msg)_[A-Za-z0-9]+$/, 'a chunk id (chunk_…) as list_memory shows it, or a message id (msg_…)');

/** The run's thread and the service, or the error the step observes. */
function ownThread(ctx: ToolContext, tool: string): { memory: ToolMemory; threadId: string } {
  if (!ctx.memory || !ctx.runThread) throw new Error(`${tool} needs the run's memory thread, and this run has none`);
  return { memory: ctx.memory, threadId: ctx.runThread };
}

const metaOf = (ctx: ToolContext, tool: string, reason: string | undefined): OperationMeta => ({
  origin: 'agent',
  reason: reason ? `${tool}: ${reason}` : tool,
  trigger: `tool step ${ctx.stepId}`,
  runId: ctx.runId,
  stepId: ctx.stepId,
});

/** The head's chunks named by `refs` (chunk or message ids), each checked: in this thread, and changeable by the agent. */
async function changeable(memory: ToolMemory, threadId: string, refs: readonly string[], ctx: ToolContext, tool: string): Promise<Chunk[]> {
  const { chunks } = await memory.view(threadId, metaOf(ctx, tool, 'look up the chunks to change'));
  return refs.map((ref) => {
    const chunk = chunks.find((c) => c.id === ref || c.messageId === ref);
    if (!chunk) throw new Error(`no chunk "${ref}" in this run's memory (list_memory shows its chunks)`);
    const refused = refusalFor(chunk);
    if (refused) throw new Error(refused);
    return chunk;
  });
}

/**
 * The record of this step's change when an earlier attempt of it already made it (its chunks are
 * gone from the head now, so looking them up again would fail), else undefined.
 */
async function madeBefore(memory: ToolMemory, threadId: string, operationId: string, kind: 'update' | 'delete', ctx: ToolContext): Promise<OperationRecord | undefined> {
  return (await memory.audit(threadId, { runId: ctx.runId, kind, limit: 100_000 })).find((r) => r.id === operationId);
}

const reason = z.string().trim().min(1).max(500).optional();

/** Chunks `list_memory` shows by default: the newest, so a long thread does not flood the result. */
const LIST_DEFAULT = 50;

export const listMemory = defineTool({
  name: 'list_memory',
  quick: true,
  description: "Lists the chunks of your working memory (this run's), newest last: id, type, size, whether you may change it, and the start of its text.",
  input: z.object({ type: z.string().trim().min(1).max(32).optional(), limit: z.number().int().min(1).max(500).optional() }),
  async handler({ type, limit }, ctx): Promise<{ chunks: MemoryChunkLine[]; total: number }> {
    const { memory, threadId } = ownThread(ctx, 'list_memory');
    const { chunks } = await memory.view(threadId, metaOf(ctx, 'list_memory', undefined));
    const matching = chunks.filter((c) => type === undefined || c.type === type);
    return {
      chunks: matching.slice(-(limit ?? LIST_DEFAULT)).map((c) => {
        const text = renderContent(c.content);
        return {
          chunkId: c.id,
          type: c.type,
          ...(c.messageId ? { messageId: c.messageId } : {}),
          retention: c.retention,
          tokens: c.tokens,
          modifiable: agentMayChange(c),
          preview: text.length > PREVIEW_CHARS ? `${text.slice(0, PREVIEW_CHARS)}…` : text,
        };
      }),
      total: matching.length,
    };
  },
});

export const updateMemory = defineTool({
  name: 'update_memory',
  description:
    'Rewrites one chunk of your working memory (by its chunk or message id) with new text, e.g. to correct a note or keep only what matters. Only chunks list_memory marks modifiable; the old version stays in the audit.',
  input: z.object({ chunkId: ChunkRef, text: z.string().min(1).max(20_000), reason }),
  async handler({ chunkId, text, reason: why }, ctx) {
    const { memory, threadId } = ownThread(ctx, 'update_memory');
    const operationId = operationIdFor(`${ctx.idempotencyKey}:update_memory`);
    const done = await madeBefore(memory, threadId, operationId, 'update', ctx);
    if (done?.operation?.op === 'update') return { updated: done.operation.chunkId, chunkId: done.newChunkIds[0] };
    const [chunk] = (await changeable(memory, threadId, [chunkId], ctx, 'update_memory')) as [Chunk];
    const { record } = await memory.apply(threadId, { op: 'update', chunkId: chunk.id, patch: { content: { kind: 'text', text } } }, metaOf(ctx, 'update_memory', why), { operationId });
    // The edited chunk replaces the old one in place; its id is new, its message id (if any) the same.
    return { updated: chunk.id, chunkId: record.newChunkIds[0] };
  },
});

export const deleteMemory = defineTool({
  name: 'delete_memory',
  description: 'Removes chunks of your working memory (by chunk or message id) that are wrong or no longer needed. Only chunks list_memory marks modifiable; the audit keeps them.',
  input: z.object({ chunkIds: z.array(ChunkRef).min(1).max(50), reason }),
  async handler({ chunkIds, reason: why }, ctx) {
    const { memory, threadId } = ownThread(ctx, 'delete_memory');
    const operationId = operationIdFor(`${ctx.idempotencyKey}:delete_memory`);
    const done = await madeBefore(memory, threadId, operationId, 'delete', ctx);
    if (done?.operation?.op === 'delete') return { deleted: done.operation.chunkIds };
    const chunks = await changeable(memory, threadId, [...new Set(chunkIds)], ctx, 'delete_memory');
    const ids = [...new Set(chunks.map((c) => c.id))];
    await memory.apply(threadId, { op: 'delete', chunkIds: ids }, metaOf(ctx, 'delete_memory', why), { operationId });
    return { deleted: ids };
  },
});

export const compressMemory = defineTool({
  name: 'compress_memory',
  description:
    "Summarizes the older steps of your working memory now (the newest four stay word for word, and so do the user's words and failed results). Use it when your memory has grown long with steps you no longer need in full.",
  input: z.object({ reason }),
  async handler({ reason: why }, ctx) {
    const { memory, threadId } = ownThread(ctx, 'compress_memory');
    return memory.compress(threadId, metaOf(ctx, 'compress_memory', why));
  },
});

/** The working-memory tools, for every run. */
export const WORKING_MEMORY_TOOLS: readonly ToolDefinition[] = [listMemory, updateMemory, deleteMemory, compressMemory];
