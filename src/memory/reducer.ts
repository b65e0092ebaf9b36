/**
 * The reducer (seed 001): (state, operation, origin) → next state and new chunks,
 * or a clear refusal. Pure and deterministic given its context: ids, time and
 * token counts all come from `ReduceContext`, and no input is ever mutated —
 * chunks are immutable, so an edit makes a new chunk linked to its parent and
 * the new state lists it where the old one was.
 *
 * Who may do what (`meta.origin`):
 * - everyone may `add` and `reorder`;
 * - `update`, `delete`, `replace`, `batch_replace` of a CRITICAL chunk: the system only;
 *   of a chunk with `agentModifiable: false`: everyone but the agent;
 * - `rollback`: the user and the system only.
 */
import type { Chunk, ChunkContent, ChunkInput, ChunkType, IdSource, MemoryState, Operation, OperationMeta, Origin, Provenance, RetentionClass } from './model';

export interface ReduceContext {
  now: Date;
  newId: IdSource;
  countTokens: (content: ChunkContent) => number;
  /** Id of the operation being applied; recorded in new chunks' provenance. */
  operationId: string;
  /** For `rollback`: the target state, loaded by the caller (must belong to the same thread). */
  rollbackTarget?: MemoryState;
}

export type RefusalCode = 'not_found' | 'forbidden' | 'invalid';
export interface Refusal {
  code: RefusalCode;
  message: string;
}
export type ReduceResult = { ok: true; state: MemoryState; newChunks: Chunk[] } | { ok: false; refusal: Refusal };

interface ChunkDefaults {
  priority: number;
  retention: RetentionClass;
  agentModifiable: boolean;
}

/**
 * Defaults by chunk type (seed 001 "Chunk Types"); a ChunkInput may override each.
 *
 * | type            | priority | retention          | agent may modify |
 * |-----------------|---------:|--------------------|------------------|
 * | system          |      100 | CRITICAL           | no               |
 * | agent           |       95 | CRITICAL           | no               |
 * | workflow        |       90 | CRITICAL           | no               |
 * | delegation      |       80 | COMPRESSIBLE       | yes              |
 * | output          |       80 | COMPRESSIBLE       | no               |
 * | environment     |       70 | COMPRESSIBLE       | no               |
 * | user            |       60 | BATCH_COMPRESSIBLE | yes              |
 * | compacted       |       50 | BATCH_COMPRESSIBLE | yes              |
 * | response        |       45 | BATCH_COMPRESSIBLE | yes              |
 * | action          |       40 | BATCH_COMPRESSIBLE | yes              |
 * | action_response |       40 | BATCH_COMPRESSIBLE | yes              |
 * | thinking        |       30 | BATCH_COMPRESSIBLE | yes              |
 *
 * Working-flow chunks are low priority and compacted together; among them the
 * user's own words rank highest, then earlier summaries, then the agent's
 * replies and actions, and its scratch thinking last.
 */
const DEFAULTS: Readonly<Record<ChunkType, Readonly<ChunkDefaults>>> = {
  system: { priority: 100, retention: 'CRITICAL', agentModifiable: false },
  agent: { priority: 95, retention: 'CRITICAL', agentModifiable: false },
  workflow: { priority: 90, retention: 'CRITICAL', agentModifiable: false },
  delegation: { priority: 80, retention: 'COMPRESSIBLE', agentModifiable: true },
  output: { priority: 80, retention: 'COMPRESSIBLE', agentModifiable: false },
  environment: { priority: 70, retention: 'COMPRESSIBLE', agentModifiable: false },
  user: { priority: 60, retention: 'BATCH_COMPRESSIBLE', agentModifiable: true },
  compacted: { priority: 50, retention: 'BATCH_COMPRESSIBLE', agentModifiable: true },
  response: { priority: 45, retention: 'BATCH_COMPRESSIBLE', agentModifiable: true },
  action: { priority: 40, retention: 'BATCH_COMPRESSIBLE', agentModifiable: true },
  action_response: { priority: 40, retention: 'BATCH_COMPRESSIBLE', agentModifiable: true },
  thinking: { priority: 30, retention: 'BATCH_COMPRESSIBLE', agentModifiable: true },
};

/** Conversation messages get a short id so they can be retrieved later (seed 004). */
const MESSAGE_TYPES: ReadonlySet<ChunkType> = new Set<ChunkType>(['user', 'response']);

export function chunkDefaults(type: ChunkType): ChunkDefaults {
  return { ...DEFAULTS[type] };
}

/**
 * Makes a new immutable chunk from caller input: type defaults for what the input leaves out,
 * a fresh id, its token count, and provenance naming the operation that made it.
 */
export function createChunk(input: ChunkInput, ctx: ReduceContext, parentChunkId: string | null = null): Chunk {
  const defaults = DEFAULTS[input.type];
  const id = ctx.newId('chunk');
  return {
    id,
    type: input.type,
    content: input.content,
    priority: input.priority ?? defaults.priority,
    retention: input.retention ?? defaults.retention,
    agentModifiable: input.agentModifiable ?? defaults.agentModifiable,
    parentChunkId,
    provenance: provenance(input.provenance, ctx.operationId),
    messageId: input.messageId ?? (MESSAGE_TYPES.has(input.type) ? ctx.newId('message') : null),
    tokens: ctx.countTokens(input.content),
    createdAt: ctx.now.toISOString(),
  };
}

/**
 * Applies one operation. On success the new state follows `state` (seq + 1, parent = state)
 * and `newChunks` holds the chunks it made. On refusal nothing is made.
 *
 * `chunks` must hold at least the chunks the operation touches (updated, deleted or replaced
 * ones); `tokens` is kept incrementally from `state.tokens`, so the caller need not load every
 * chunk of a large state.
 */
export function reduce(state: MemoryState, chunks: ReadonlyMap<string, Chunk>, operation: Operation, meta: OperationMeta, ctx: ReduceContext): ReduceResult {
  const next = apply(state, chunks, operation, meta, ctx);
  if ('code' in next) return { ok: false, refusal: next };
  return {
    ok: true,
    state: {
      id: ctx.newId('state'),
      threadId: state.threadId,
      parentStateId: state.id,
      seq: state.seq + 1,
      chunkIds: next.chunkIds,
      tokens: next.tokens,
      operationId: ctx.operationId,
      createdAt: ctx.now.toISOString(),
    },
    newChunks: next.newChunks,
  };
}

interface Applied {
  chunkIds: string[];
  tokens: number;
  newChunks: Chunk[];
}

function apply(state: MemoryState, chunks: ReadonlyMap<string, Chunk>, operation: Operation, meta: OperationMeta, ctx: ReduceContext): Applied | Refusal {
  const origin = meta.origin;
  // New chunks carry the run and step the operation came from, unless their input says otherwise.
  const inherited: Provenance = {};
  if (meta.runId !== undefined) inherited.runId = meta.runId;
  if (meta.stepId !== undefined) inherited.stepId = meta.stepId;
  const make = (input: ChunkInput, parentChunkId: string | null): Chunk => createChunk({ ...input, provenance: { ...inherited, ...input.provenance } }, ctx, parentChunkId);

  switch (operation.op) {
    case 'add': {
      const at = operation.position ?? state.chunkIds.length;
      if (at > state.chunkIds.length) {
        return refuse('invalid', `add: position ${at} is past the end of state ${state.id} (${state.chunkIds.length} chunks)`);
      }
      const made = operation.chunks.map((input) => make(input, null));
      const chunkIds = [...state.chunkIds];
      chunkIds.splice(at, 0, ...made.map((c) => c.id));
      return { chunkIds, tokens: state.tokens + sumTokens(made), newChunks: made };
    }

    case 'update': {
      const found = findOne(state, chunks, operation.chunkId);
      if ('code' in found) return found;
      const { chunk: old, index } = found;
      const denied = permission(origin, 'update', old);
      if (denied) return denied;
      const { patch } = operation;
      if (patch.content === undefined && patch.priority === undefined && patch.retention === undefined && patch.agentModifiable === undefined) {
        return refuse('invalid', `update of ${old.id}: the patch changes nothing`);
      }
      const edited: Chunk = {
        ...old,
        id: ctx.newId('chunk'),
        content: patch.content ?? old.content,
        priority: patch.priority ?? old.priority,
        retention: patch.retention ?? old.retention,
        agentModifiable: patch.agentModifiable ?? old.agentModifiable,
        parentChunkId: old.id,
        // An edited conversation message keeps its message id, so references to it still resolve.
        provenance: provenance({ ...old.provenance, ...inherited }, ctx.operationId),
        tokens: patch.content === undefined ? old.tokens : ctx.countTokens(patch.content),
        createdAt: ctx.now.toISOString(),
      };
      return { chunkIds: replaceAt(state.chunkIds, index, edited.id), tokens: state.tokens - old.tokens + edited.tokens, newChunks: [edited] };
    }

    case 'replace': {
      const found = findOne(state, chunks, operation.chunkId);
      if ('code' in found) return found;
      const { chunk: old, index } = found;
      const denied = permission(origin, 'replace', old);
      if (denied) return denied;
      const made = make(operation.chunk, old.id);
      return { chunkIds: replaceAt(state.chunkIds, index, made.id), tokens: state.tokens - old.tokens + made.tokens, newChunks: [made] };
    }

    case 'delete': {
      const found = findMany(state, chunks, operation.chunkIds, 'delete');
      if ('code' in found) return found;
      for (const c of found.chunks) {
        const denied = permission(origin, 'delete', c);
        if (denied) return denied;
      }
      return { chunkIds: withoutIndexes(state.chunkIds, found.indexes), tokens: state.tokens - sumTokens(found.chunks), newChunks: [] };
    }

    case 'batch_replace': {
      const found = findMany(state, chunks, operation.chunkIds, 'batch_replace');
      if ('code' in found) return found;
      for (const c of found.chunks) {
        const denied = permission(origin, 'batch_replace', c);
        if (denied) return denied;
      }
      // The replaced chunks are named by the operation record, so the new one has no single parent.
      const made = make(operation.chunk, null);
      const first = found.indexes.reduce((a, b) => Math.min(a, b));
      const gone = new Set(operation.chunkIds);
      const chunkIds: string[] = [];
      state.chunkIds.forEach((id, i) => {
        if (i === first) chunkIds.push(made.id);
        else if (!gone.has(id)) chunkIds.push(id);
      });
      return { chunkIds, tokens: state.tokens - sumTokens(found.chunks) + made.tokens, newChunks: [made] };
    }

    case 'reorder': {
      const order = operation.chunkIds;
      const current = new Set(state.chunkIds);
      const unknown = order.find((id) => !current.has(id));
      if (unknown !== undefined) return refuse('not_found', `reorder: chunk ${unknown} is not in state ${state.id}`);
      if (new Set(order).size !== order.length || order.length !== state.chunkIds.length) {
        return refuse('invalid', `reorder: the new order must list each of the ${state.chunkIds.length} chunks of state ${state.id} exactly once`);
      }
      return { chunkIds: [...order], tokens: state.tokens, newChunks: [] };
    }

    case 'rollback': {
      if (origin !== 'user' && origin !== 'system') {
        return refuse('forbidden', `rollback to ${operation.toStateId}: the ${origin} may not roll a thread back (only the user or the system may)`);
      }
      const target = ctx.rollbackTarget;
      if (target === undefined) return refuse('not_found', `rollback: state ${operation.toStateId} was not found`);
      if (target.id !== operation.toStateId) {
        return refuse('invalid', `rollback: the loaded target ${target.id} is not the requested state ${operation.toStateId}`);
      }
      if (target.threadId !== state.threadId) {
        return refuse('not_found', `rollback: state ${target.id} is not a state of thread ${state.threadId}`);
      }
      return { chunkIds: [...target.chunkIds], tokens: target.tokens, newChunks: [] };
    }
  }
}

function refuse(code: Refusal['code'], message: string): Refusal {
  return { code, message };
}

/** Why `origin` may not change `chunk`, or null when it may. */
function permission(origin: Origin, action: Operation['op'], chunk: Chunk): Refusal | null {
  if (origin === 'system') return null;
  if (chunk.retention === 'CRITICAL') {
    return refuse('forbidden', `${action}: the ${origin} may not change ${chunk.id} (a ${chunk.type} chunk): it is CRITICAL, and only the system may change CRITICAL chunks`);
  }
  if (origin === 'agent' && !chunk.agentModifiable) {
    return refuse('forbidden', `${action}: the agent may not change ${chunk.id} (a ${chunk.type} chunk): it is not agent-modifiable`);
  }
  return null;
}

function findOne(state: MemoryState, chunks: ReadonlyMap<string, Chunk>, id: string): { chunk: Chunk; index: number } | Refusal {
  const index = state.chunkIds.indexOf(id);
  if (index < 0) return refuse('not_found', `chunk ${id} is not in state ${state.id}`);
  const chunk = chunks.get(id);
  if (chunk === undefined) return refuse('not_found', `chunk ${id} of state ${state.id} was not supplied to the reducer`);
  return { chunk, index };
}

function findMany(state: MemoryState, chunks: ReadonlyMap<string, Chunk>, ids: readonly string[], action: Operation['op']): { chunks: Chunk[]; indexes: number[] } | Refusal {
  if (ids.length === 0) return refuse('invalid', `${action}: no chunk ids given`);
  if (new Set(ids).size !== ids.length) return refuse('invalid', `${action}: the chunk ids must not repeat`);
  // Index only the ids asked for: native indexOf for a few, one pass for many — cheap even for 10,000-chunk states.
  const position = new Map<string, number>();
  if (ids.length <= 8) {
    for (const id of ids) {
      const index = state.chunkIds.indexOf(id);
      if (index >= 0) position.set(id, index);
    }
  } else {
    const wanted = new Set(ids);
    state.chunkIds.forEach((id, i) => {
      if (wanted.has(id)) position.set(id, i);
    });
  }
  const found: Chunk[] = [];
  const indexes: number[] = [];
  for (const id of ids) {
    const index = position.get(id);
    if (index === undefined) return refuse('not_found', `${action}: chunk ${id} is not in state ${state.id}`);
    const chunk = chunks.get(id);
    if (chunk === undefined) return refuse('not_found', `${action}: chunk ${id} of state ${state.id} was not supplied to the reducer`);
    found.push(chunk);
    indexes.push(index);
  }
  return { chunks: found, indexes };
}

/** A copy without the given positions (native copy and splices: fast for the usual few deletions). */
function withoutIndexes(ids: readonly string[], indexes: readonly number[]): string[] {
  const out = ids.slice();
  for (const i of [...indexes].sort((a, b) => b - a)) out.splice(i, 1);
  return out;
}

function replaceAt(ids: readonly string[], index: number, id: string): string[] {
  const out = [...ids];
  out[index] = id;
  return out;
}

function sumTokens(chunks: readonly Chunk[]): number {
  return chunks.reduce((n, c) => n + c.tokens, 0);
}

/** Provenance without undefined fields (stores round-trip JSON), stamped with the operation. */
function provenance(from: Provenance | undefined, operationId: string): Provenance {
  const out: Provenance = {};
  for (const [k, v] of Object.entries(from ?? {}) as [keyof Provenance, string | undefined][]) {
    if (v !== undefined) out[k] = v;
  }
  out.operationId = operationId;
  return out;
}
