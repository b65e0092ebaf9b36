/**
 * The memory context system's data model (seed 001, with seed 004's working
 * memory and conversation messages): threads of immutable states made of
 * immutable, typed chunks. Pure data and zod schemas; no I/O.
 *
 * A state lists its chunks by id, so states share unchanged chunks; storage
 * keeps states as deltas against their parent (see `state-delta.ts`), so it
 * grows with changes, not with states × size.
 */
import { z } from 'zod';

/** Chunk types of seed 001. The working-flow subtypes are listed in WORKING_FLOW_TYPES. */
export const CHUNK_TYPES = [
  'system',
  'agent',
  'workflow',
  'delegation',
  'environment',
  // working flow (seed 001 "Working Flow Chunk" subtypes; seed 004's working memory lives here)
  'compacted',
  'user',
  'thinking',
  'response',
  'action',
  'action_response',
  'output',
] as const;
export type ChunkType = (typeof CHUNK_TYPES)[number];
export const WORKING_FLOW_TYPES: readonly ChunkType[] = ['compacted', 'user', 'thinking', 'response', 'action', 'action_response'];

/**
 * Retention classes of seed 001, which decide what compaction may do to a chunk (see `compaction.ts`):
 * CRITICAL never touched; COMPRESSIBLE summarized alone and BATCH_COMPRESSIBLE together (model calls);
 * DISPOSABLE dropped first; EPHEMERAL gone when its run or session ends; OTHERS ("built-in
 * compression logic") shortened by the built-in compression — its beginning and end kept, no model
 * call — so it also works where no summarizer is configured.
 */
export const RETENTION_CLASSES = ['CRITICAL', 'COMPRESSIBLE', 'BATCH_COMPRESSIBLE', 'DISPOSABLE', 'EPHEMERAL', 'OTHERS'] as const;
export type RetentionClass = (typeof RETENTION_CLASSES)[number];

export const ORIGINS = ['agent', 'user', 'system', 'observer'] as const;
export type Origin = (typeof ORIGINS)[number];

export const ChunkContentSchema: z.ZodType<ChunkContent> = z.lazy(() =>
  z.discriminatedUnion('kind', [
    z.object({ kind: z.literal('text'), text: z.string() }),
    z.object({ kind: z.literal('json'), data: z.unknown() }),
    z.object({ kind: z.literal('image'), url: z.string().min(1), alt: z.string().optional() }),
    /** A chunk made of other chunks (e.g. a compacted chunk keeping what it summarized). */
    z.object({ kind: z.literal('chunks'), chunkIds: z.array(z.string()) }),
  ]),
);
export type ChunkContent = { kind: 'text'; text: string } | { kind: 'json'; data: unknown } | { kind: 'image'; url: string; alt?: string } | { kind: 'chunks'; chunkIds: string[] };

/** Which run, step, message or operation made a chunk. */
export const ProvenanceSchema = z.object({
  runId: z.string().optional(),
  stepId: z.string().optional(),
  sessionId: z.string().optional(),
  messageId: z.string().optional(),
  operationId: z.string().optional(),
});
export type Provenance = z.infer<typeof ProvenanceSchema>;

/** An immutable chunk. Editing makes a new chunk whose `parentChunkId` is the old one. */
export interface Chunk {
  id: string; // chunk_…
  type: ChunkType;
  content: ChunkContent;
  /** 0 (least) … 100 (most important); rendering under a budget keeps the highest first. */
  priority: number;
  retention: RetentionClass;
  /** Whether the agent may modify or delete it (people and the system always may, except CRITICAL by the agent). */
  agentModifiable: boolean;
  parentChunkId: string | null;
  provenance: Provenance;
  /** Short unique id of a conversation message (seed 004's nanoid), for user/response chunks. */
  messageId: string | null;
  tokens: number;
  createdAt: string;
}

/** What a caller supplies to create a chunk; defaults come from the chunk type (see `chunkDefaults`). */
export const ChunkInputSchema = z.object({
  type: z.enum(CHUNK_TYPES),
  content: ChunkContentSchema,
  priority: z.number().int().min(0).max(100).optional(),
  retention: z.enum(RETENTION_CLASSES).optional(),
  agentModifiable: z.boolean().optional(),
  provenance: ProvenanceSchema.optional(),
  /** Give user/response chunks a message id (generated when omitted and the type is user or response). */
  messageId: z.string().min(1).max(64).optional(),
});
export type ChunkInput = z.infer<typeof ChunkInputSchema>;

/** An immutable state: the ordered chunk ids of a thread at one point. */
export interface MemoryState {
  id: string; // state_…
  threadId: string;
  parentStateId: string | null;
  /** 0 for a thread's first state, +1 for each state after it. */
  seq: number;
  chunkIds: string[];
  /** Sum of the chunks' tokens. */
  tokens: number;
  /** The operation that made this state (null for a thread's first state). */
  operationId: string | null;
  createdAt: string;
}

export interface TokenLimits {
  soft: number;
  hard: number;
}

export interface MemoryThread {
  id: string; // thread_…
  userId: string;
  headStateId: string;
  limits: TokenLimits;
  /** Set when the thread was forked from another thread's state. */
  forkedFrom: { threadId: string; stateId: string } | null;
  createdAt: string;
}

const chunkIds = z.array(z.string().min(1)).min(1);

/** Operations (seed 001). Each is pure data; the reducer turns (state, operation) into the next state. */
export const OperationSchema = z.discriminatedUnion('op', [
  /** Adds chunks at `position` (default: the end). */
  z.object({ op: z.literal('add'), chunks: z.array(ChunkInputSchema).min(1), position: z.number().int().min(0).optional() }),
  /** Edits one chunk: a new chunk with the changes replaces it in place, linked to it as parent. */
  z.object({
    op: z.literal('update'),
    chunkId: z.string().min(1),
    patch: z.object({
      content: ChunkContentSchema.optional(),
      priority: z.number().int().min(0).max(100).optional(),
      retention: z.enum(RETENTION_CLASSES).optional(),
      agentModifiable: z.boolean().optional(),
    }),
  }),
  z.object({ op: z.literal('delete'), chunkIds }),
  /** The full new order: a permutation of the state's chunk ids. */
  z.object({ op: z.literal('reorder'), chunkIds }),
  /** Replaces one chunk with a new one (e.g. its summary). */
  z.object({ op: z.literal('replace'), chunkId: z.string().min(1), chunk: ChunkInputSchema }),
  /** Replaces many chunks with one, placed where the first of them was (seed 001 BatchReplace). */
  z.object({ op: z.literal('batch_replace'), chunkIds, chunk: ChunkInputSchema }),
  /** Makes a new head equal to an earlier state of the thread; history stays intact. */
  z.object({ op: z.literal('rollback'), toStateId: z.string().min(1) }),
]);
export type Operation = z.infer<typeof OperationSchema>;
export type OperationKind = Operation['op'] | 'create' | 'fork' | 'checkpoint';

/** Why and by whom an operation happens; recorded with it in the audit trail. */
export interface OperationMeta {
  origin: Origin;
  reason: string;
  /** The event that triggered it, e.g. "step s3 completed", "PATCH by a person", "soft limit exceeded". */
  trigger: string;
  runId?: string;
  stepId?: string;
}

/** One entry of a thread's audit trail. */
export interface OperationRecord extends OperationMeta {
  id: string; // op_…
  threadId: string;
  /** Per-thread sequence number of the record, 1, 2, … — the order of the live stream. */
  seq: number;
  kind: OperationKind;
  /** The operation as applied (after observers). Null for create/fork/checkpoint records. */
  operation: Operation | null;
  /** Extra facts of create/fork/checkpoint records, e.g. {name} or {fromThreadId, fromStateId}. */
  details: Record<string, unknown> | null;
  fromStateId: string | null;
  toStateId: string;
  /** Ids of chunks this operation created. */
  newChunkIds: string[];
  at: string;
}

/** What a recorded read looked at: a rendering for a model, a message by id, the head or another state, a diff. */
export const READ_TARGETS = ['context', 'message', 'thread', 'state', 'diff'] as const;
export type ReadTarget = (typeof READ_TARGETS)[number];

/**
 * One read of a thread (seed 001's audit of "create, read, update, delete"), kept beside the
 * operations but apart from them: a read changes nothing, so it takes no seq and no head lock.
 * `kind: 'read'` tells it from an operation record in the audit listing.
 */
export interface ReadRecord extends OperationMeta {
  id: string; // read_…
  threadId: string;
  kind: 'read';
  target: ReadTarget;
  /** The state that was read: the head at the time, or the state asked for. */
  stateId: string;
  /** What the reader got, e.g. `{budget, tokens, chunks}` of a rendering or `{messageId, chunkId}`. */
  details: Record<string, unknown> | null;
  at: string;
}

/** Prefixes make ids self-describing in logs, the API and the Web UI. */
export const ID_PREFIX = { thread: 'thread_', state: 'state_', chunk: 'chunk_', operation: 'op_', message: 'msg_', read: 'read_' } as const;
export type IdKind = keyof typeof ID_PREFIX;
/** Where new ids come from: random in activities and the API, seeded in tests. */
export type IdSource = (kind: IdKind) => string;
