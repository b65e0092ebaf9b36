/** The memory reducer (seed 001): what each operation makes of a state, who may do it, and that nothing produced ever changes. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { ID_LENGTH, randomIds, seededIds } from '../../src/memory/ids';
import {
  type Chunk,
  type ChunkContent,
  type ChunkInput,
  CHUNK_TYPES,
  type MemoryState,
  type Operation,
  type OperationMeta,
  type Origin,
  ORIGINS,
  RETENTION_CLASSES,
  WORKING_FLOW_TYPES,
} from '../../src/memory/model';
import { chunkDefaults, createChunk, reduce, type ReduceContext, type ReduceResult, type RefusalCode } from '../../src/memory/reducer';

const NOW = new Date('2025-05-01T12:00:00.000Z');
/** A stand-in tokenizer: deterministic and sensitive to content, which is all the reducer relies on. */
const countTokens = (content: ChunkContent): number => Math.ceil(JSON.stringify(content).length / 4);
const text = (t: string): ChunkContent => ({ kind: 'text', text: t });

const meta = (origin: Origin, extra: Partial<OperationMeta> = {}): OperationMeta => ({ origin, reason: 'test', trigger: 'unit test', ...extra });
const SYSTEM = meta('system');
const USER = meta('user');
const AGENT = meta('agent');

function context(overrides: Partial<ReduceContext> = {}, seed = 'ctx'): ReduceContext {
  return { now: NOW, newId: seededIds(seed), countTokens, operationId: 'op_test', ...overrides };
}

/** Freezes a value all the way down, so any in-place mutation by the reducer throws. */
function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

const sum = (ids: readonly string[], chunks: ReadonlyMap<string, Chunk>): number => ids.reduce((n, id) => n + (chunks.get(id)?.tokens ?? Number.NaN), 0);

/**
 * A thread's first state: a CRITICAL system prompt, a read-only environment note, and
 * agent-modifiable delegation, user, thinking and response chunks. Everything frozen.
 */
function fixture() {
  const ctx = context({ operationId: 'op_create' }, 'fixture');
  const sys = createChunk({ type: 'system', content: text('You are Threadline, a careful agent.') }, ctx);
  const env = createChunk({ type: 'environment', content: { kind: 'json', data: { company: 'Acme', project: 'Atlas' } } }, ctx);
  const dlg = createChunk({ type: 'delegation', content: text('Goal: book a trip to Lisbon in May.') }, ctx);
  const usr = createChunk({ type: 'user', content: text('Please prefer trains over planes.') }, ctx);
  const thk = createChunk({ type: 'thinking', content: text('Trains from Madrid take about 9 hours.') }, ctx);
  const rsp = createChunk({ type: 'response', content: text('I will look for night trains.') }, ctx);
  const all = [sys, env, dlg, usr, thk, rsp];
  const chunks = new Map(all.map((c) => [c.id, c]));
  const state: MemoryState = {
    id: 'state_initial',
    threadId: 'thread_lisbon',
    parentStateId: null,
    seq: 0,
    chunkIds: all.map((c) => c.id),
    tokens: all.reduce((n, c) => n + c.tokens, 0),
    operationId: 'op_create',
    createdAt: NOW.toISOString(),
  };
  all.forEach(deepFreeze);
  deepFreeze(state);
  return { state, chunks: chunks as ReadonlyMap<string, Chunk>, sys, env, dlg, usr, thk, rsp };
}

function accepted(result: ReduceResult): { state: MemoryState; newChunks: Chunk[] } {
  if (!result.ok) assert.fail(`expected the operation to be accepted, got ${result.refusal.code}: ${result.refusal.message}`);
  return result;
}

function refused(result: ReduceResult, code: RefusalCode, message?: RegExp): void {
  if (result.ok) assert.fail(`expected a ${code} refusal, but the operation was accepted`);
  assert.deepEqual(Object.keys(result).sort(), ['ok', 'refusal'], 'a refusal carries no state and no chunks');
  assert.equal(result.refusal.code, code, result.refusal.message);
  if (message) assert.match(result.refusal.message, message);
}

/** Applies an operation to the fixture with a frozen operation, returning the result and the fixture. */
function run(operation: Operation, m: OperationMeta = SYSTEM, ctx: Partial<ReduceContext> = {}) {
  const f = fixture();
  const result = reduce(f.state, f.chunks, deepFreeze(operation), m, context(ctx));
  return { ...f, result };
}

/** The new state follows the old one and accounts for its tokens. */
function assertFollows(next: MemoryState, prev: MemoryState, chunks: ReadonlyMap<string, Chunk>, newChunks: readonly Chunk[]): void {
  assert.match(next.id, /^state_[0-9a-z]{16}$/);
  assert.notEqual(next.id, prev.id);
  assert.equal(next.threadId, prev.threadId);
  assert.equal(next.parentStateId, prev.id);
  assert.equal(next.seq, prev.seq + 1);
  assert.equal(next.operationId, 'op_test');
  assert.equal(next.createdAt, NOW.toISOString());
  const all = new Map([...chunks, ...newChunks.map((c) => [c.id, c] as const)]);
  assert.equal(next.tokens, sum(next.chunkIds, all));
  assert.equal(new Set(next.chunkIds).size, next.chunkIds.length, 'chunk ids within a state are unique');
}

// ---------------------------------------------------------------------------------------------
// chunkDefaults and createChunk

test('chunkDefaults: system, agent and workflow chunks are CRITICAL, top priority and closed to the agent', () => {
  for (const type of ['system', 'agent', 'workflow'] as const) {
    const d = chunkDefaults(type);
    assert.equal(d.retention, 'CRITICAL', type);
    assert.equal(d.agentModifiable, false, type);
    assert.ok(d.priority >= 90 && d.priority <= 100, `${type} priority ${d.priority}`);
  }
});

test('chunkDefaults: delegation, environment and output chunks are high-priority COMPRESSIBLE; only delegation is open to the agent', () => {
  assert.deepEqual(chunkDefaults('delegation'), { priority: 80, retention: 'COMPRESSIBLE', agentModifiable: true });
  assert.deepEqual(chunkDefaults('environment'), { priority: 70, retention: 'COMPRESSIBLE', agentModifiable: false });
  assert.deepEqual(chunkDefaults('output'), { priority: 80, retention: 'COMPRESSIBLE', agentModifiable: false });
});

test('chunkDefaults: working-flow chunks are low priority, batch-compressible and open to the agent; the user outranks the rest', () => {
  for (const type of WORKING_FLOW_TYPES) {
    const d = chunkDefaults(type);
    assert.equal(d.retention, 'BATCH_COMPRESSIBLE', type);
    assert.equal(d.agentModifiable, true, type);
    if (type === 'user') assert.equal(d.priority, 60);
    else assert.ok(d.priority >= 30 && d.priority <= 50, `${type} priority ${d.priority}`);
  }
  // Changing a returned default must not change the table.
  const d = chunkDefaults('thinking');
  d.priority = 1;
  assert.notEqual(chunkDefaults('thinking').priority, 1);
});

test('createChunk: fills the type defaults, a fresh id, the token count, the operation in its provenance and the time', () => {
  const ctx = context({ operationId: 'op_42' });
  const chunk = createChunk({ type: 'thinking', content: text('Maybe the 9:40 train.'), provenance: { runId: 'run-1', stepId: 's2' } }, ctx);
  assert.match(chunk.id, /^chunk_[0-9a-z]{16}$/);
  assert.deepEqual(
    { ...chunk, id: 'x' },
    {
      id: 'x',
      type: 'thinking',
      content: text('Maybe the 9:40 train.'),
      ...chunkDefaults('thinking'),
      parentChunkId: null,
      provenance: { runId: 'run-1', stepId: 's2', operationId: 'op_42' },
      messageId: null,
      tokens: countTokens(text('Maybe the 9:40 train.')),
      createdAt: NOW.toISOString(),
    },
  );
});

test('createChunk: explicit priority, retention and modifiability win over the defaults; the parent is recorded', () => {
  const chunk = createChunk({ type: 'system', content: text('x'), priority: 5, retention: 'DISPOSABLE', agentModifiable: true }, context(), 'chunk_parent');
  assert.equal(chunk.priority, 5);
  assert.equal(chunk.retention, 'DISPOSABLE');
  assert.equal(chunk.agentModifiable, true);
  assert.equal(chunk.parentChunkId, 'chunk_parent');
});

test('createChunk: user and response chunks get a short message id (or keep the given one); other types get none', () => {
  const ctx = context();
  const user = createChunk({ type: 'user', content: text('hi') }, ctx);
  const response = createChunk({ type: 'response', content: text('hello') }, ctx);
  assert.match(user.messageId ?? '', /^msg_[0-9a-z]{10}$/);
  assert.match(response.messageId ?? '', /^msg_[0-9a-z]{10}$/);
  assert.notEqual(user.messageId, response.messageId);
  assert.equal(createChunk({ type: 'user', content: text('hi'), messageId: 'abc123' }, ctx).messageId, 'abc123');
  assert.equal(createChunk({ type: 'action', content: text('search') }, ctx).messageId, null);
  // A message id may be attached to any chunk on purpose.
  assert.equal(createChunk({ type: 'output', content: text('done'), messageId: 'out1' }, ctx).messageId, 'out1');
});

// ---------------------------------------------------------------------------------------------
// add

test('add: appends at the end by default, as new chunks stamped with the operation and the run that made them', () => {
  const { state, chunks, result } = run(
    {
      op: 'add',
      chunks: [
        { type: 'action', content: text('search trains') },
        { type: 'action_response', content: text('3 found') },
      ],
    },
    meta('agent', { runId: 'run-7', stepId: 's3' }),
  );
  const { state: next, newChunks } = accepted(result);
  assertFollows(next, state, chunks, newChunks);
  assert.equal(newChunks.length, 2);
  assert.deepEqual(next.chunkIds, [...state.chunkIds, ...newChunks.map((c) => c.id)]);
  assert.deepEqual(
    newChunks.map((c) => c.type),
    ['action', 'action_response'],
  );
  for (const c of newChunks) {
    assert.equal(chunks.has(c.id), false, 'new chunks have new ids');
    assert.deepEqual(c.provenance, { runId: 'run-7', stepId: 's3', operationId: 'op_test' });
  }
});

test('add: inserts at a position (0 and the length are both allowed); the input provenance wins over the operation meta', () => {
  const first = run({ op: 'add', chunks: [{ type: 'system', content: text('Be brief.'), provenance: { runId: 'run-own' } }], position: 0 }, meta('user', { runId: 'run-meta' }));
  const a = accepted(first.result);
  assert.deepEqual(a.state.chunkIds, [a.newChunks[0]?.id, ...first.state.chunkIds]);
  assert.equal(a.newChunks[0]?.provenance.runId, 'run-own');

  const atEnd = run({ op: 'add', chunks: [{ type: 'thinking', content: text('t') }], position: 6 });
  const b = accepted(atEnd.result);
  assert.equal(b.state.chunkIds.at(-1), b.newChunks[0]?.id);

  const middle = run({ op: 'add', chunks: [{ type: 'thinking', content: text('t') }], position: 2 });
  const c = accepted(middle.result);
  assert.equal(c.state.chunkIds[2], c.newChunks[0]?.id);
  assert.deepEqual(
    c.state.chunkIds.filter((id) => id !== c.newChunks[0]?.id),
    middle.state.chunkIds,
  );
});

test('add: a position past the end is refused as invalid', () => {
  refused(run({ op: 'add', chunks: [{ type: 'thinking', content: text('t') }], position: 7 }).result, 'invalid', /position 7/);
});

test('add: every origin may add, even a CRITICAL chunk', () => {
  for (const origin of ORIGINS) {
    const { result } = run({ op: 'add', chunks: [{ type: 'system', content: text('rule') }] }, meta(origin));
    assert.equal(accepted(result).newChunks[0]?.retention, 'CRITICAL');
  }
});

// ---------------------------------------------------------------------------------------------
// update

test('update: the edited chunk is a new chunk linked to the old one, in the same place, with its tokens recounted', () => {
  const { state, chunks, dlg, result } = run({ op: 'update', chunkId: fixture().dlg.id, patch: { content: text('Goal: book a trip to Lisbon and Porto in May, by train.') } }, AGENT);
  const { state: next, newChunks } = accepted(result);
  assertFollows(next, state, chunks, newChunks);
  const [edited] = newChunks;
  assert.ok(edited);
  assert.notEqual(edited.id, dlg.id);
  assert.equal(edited.parentChunkId, dlg.id);
  assert.deepEqual(edited.content, text('Goal: book a trip to Lisbon and Porto in May, by train.'));
  assert.equal(edited.tokens, countTokens(edited.content));
  assert.notEqual(edited.tokens, dlg.tokens);
  assert.equal(edited.type, dlg.type);
  assert.equal(edited.priority, dlg.priority);
  assert.equal(edited.provenance.operationId, 'op_test');
  assert.equal(next.chunkIds[2], edited.id);
  assert.deepEqual(
    next.chunkIds.filter((_, i) => i !== 2),
    state.chunkIds.filter((_, i) => i !== 2),
  );
  assert.equal(chunks.get(dlg.id), dlg, 'the old chunk is still there, unchanged, for older states');
});

test('update: a patch without content keeps the token count and changes only what it names; a message keeps its id', () => {
  const f = fixture();
  const result = reduce(f.state, f.chunks, { op: 'update', chunkId: f.usr.id, patch: { priority: 99, retention: 'COMPRESSIBLE' } }, USER, context({ countTokens: () => 999 }));
  const [edited] = accepted(result).newChunks;
  assert.ok(edited);
  assert.equal(edited.tokens, f.usr.tokens);
  assert.equal(edited.priority, 99);
  assert.equal(edited.retention, 'COMPRESSIBLE');
  assert.equal(edited.agentModifiable, f.usr.agentModifiable);
  assert.deepEqual(edited.content, f.usr.content);
  assert.equal(edited.messageId, f.usr.messageId);
  assert.match(edited.messageId ?? '', /^msg_/);
});

test('update: an empty patch is invalid; an unknown chunk, or one not supplied, is not found', () => {
  const f = fixture();
  refused(run({ op: 'update', chunkId: f.thk.id, patch: {} }).result, 'invalid', /changes nothing/);
  refused(run({ op: 'update', chunkId: 'chunk_nope', patch: { priority: 1 } }).result, 'not_found', /chunk_nope/);
  const partial = new Map([...f.chunks].filter(([id]) => id !== f.thk.id));
  refused(reduce(f.state, partial, { op: 'update', chunkId: f.thk.id, patch: { priority: 1 } }, SYSTEM, context()), 'not_found', /not supplied/);
});

// ---------------------------------------------------------------------------------------------
// delete

test('delete: removes the chunks, keeps the order of the rest and subtracts their tokens', () => {
  const f = fixture();
  const { state, chunks, result } = run({ op: 'delete', chunkIds: [f.rsp.id, f.thk.id] }, AGENT);
  const { state: next, newChunks } = accepted(result);
  assertFollows(next, state, chunks, newChunks);
  assert.deepEqual(newChunks, []);
  assert.deepEqual(next.chunkIds, [f.sys.id, f.env.id, f.dlg.id, f.usr.id]);
  assert.equal(next.tokens, state.tokens - f.rsp.tokens - f.thk.tokens);
});

test('delete: repeated ids are invalid, no ids are invalid, an unknown id is not found', () => {
  const f = fixture();
  refused(run({ op: 'delete', chunkIds: [f.thk.id, f.thk.id] }).result, 'invalid', /repeat/);
  refused(run({ op: 'delete', chunkIds: [] }).result, 'invalid');
  refused(run({ op: 'delete', chunkIds: [f.thk.id, 'chunk_gone'] }).result, 'not_found', /chunk_gone/);
});

// ---------------------------------------------------------------------------------------------
// reorder

test('reorder: any permutation of the state is accepted by any origin; tokens and chunks are unchanged', () => {
  const f = fixture();
  const order = [...f.state.chunkIds].reverse();
  for (const origin of ORIGINS) {
    const { state, chunks, result } = run({ op: 'reorder', chunkIds: order }, meta(origin));
    const { state: next, newChunks } = accepted(result);
    assertFollows(next, state, chunks, newChunks);
    assert.deepEqual(next.chunkIds, order);
    assert.equal(next.tokens, state.tokens);
    assert.deepEqual(newChunks, []);
  }
});

test('reorder: a missing, repeated or foreign id is refused', () => {
  const ids = fixture().state.chunkIds;
  refused(run({ op: 'reorder', chunkIds: ids.slice(1) }).result, 'invalid', /exactly once/);
  refused(run({ op: 'reorder', chunkIds: [ids[0] as string, ...ids.slice(0, -1)] }).result, 'invalid');
  refused(run({ op: 'reorder', chunkIds: [...ids, ids[0] as string] }).result, 'invalid');
  refused(run({ op: 'reorder', chunkIds: [...ids.slice(1), 'chunk_other'] }).result, 'not_found', /chunk_other/);
});

// ---------------------------------------------------------------------------------------------
// replace

test('replace: one chunk becomes a new one in its place, linked to it as its parent', () => {
  const f = fixture();
  const { state, chunks, result } = run({ op: 'replace', chunkId: f.thk.id, chunk: { type: 'compacted', content: text('Considered trains via Madrid.') } }, AGENT);
  const { state: next, newChunks } = accepted(result);
  assertFollows(next, state, chunks, newChunks);
  const [made] = newChunks;
  assert.ok(made);
  assert.equal(made.type, 'compacted');
  assert.equal(made.parentChunkId, f.thk.id);
  assert.equal(next.chunkIds[4], made.id);
  assert.equal(next.chunkIds.length, state.chunkIds.length);
  assert.equal(next.tokens, state.tokens - f.thk.tokens + made.tokens);
});

test('replace: an unknown chunk is not found', () => {
  refused(run({ op: 'replace', chunkId: 'chunk_x', chunk: { type: 'thinking', content: text('t') } }).result, 'not_found');
});

// ---------------------------------------------------------------------------------------------
// batch_replace

test('batch_replace: many chunks become one compacted chunk where the first of them was, whatever order they are named in', () => {
  const f = fixture();
  const { state, chunks, result } = run(
    { op: 'batch_replace', chunkIds: [f.rsp.id, f.usr.id, f.thk.id], chunk: { type: 'compacted', content: text('User prefers trains; night train found.') } },
    AGENT,
  );
  const { state: next, newChunks } = accepted(result);
  assertFollows(next, state, chunks, newChunks);
  const [made] = newChunks;
  assert.ok(made);
  assert.deepEqual(next.chunkIds, [f.sys.id, f.env.id, f.dlg.id, made.id]);
  assert.equal(made.parentChunkId, null);
  assert.deepEqual(made.content, text('User prefers trains; night train found.'));
  assert.equal(next.tokens, state.tokens - f.usr.tokens - f.thk.tokens - f.rsp.tokens + made.tokens);
});

test('batch_replace: non-adjacent chunks — the others are removed and the rest keep their order', () => {
  const f = fixture();
  const { result } = run({ op: 'batch_replace', chunkIds: [f.rsp.id, f.dlg.id], chunk: { type: 'compacted', content: text('s') } }, USER);
  const { state: next, newChunks } = accepted(result);
  assert.deepEqual(next.chunkIds, [f.sys.id, f.env.id, newChunks[0]?.id, f.usr.id, f.thk.id]);
});

test('batch_replace: repeated or no ids are invalid; an unknown id is not found', () => {
  const f = fixture();
  const chunk: ChunkInput = { type: 'compacted', content: text('s') };
  refused(run({ op: 'batch_replace', chunkIds: [f.thk.id, f.thk.id], chunk }).result, 'invalid', /repeat/);
  refused(run({ op: 'batch_replace', chunkIds: [], chunk }).result, 'invalid');
  refused(run({ op: 'batch_replace', chunkIds: [f.thk.id, 'chunk_zzz'], chunk }).result, 'not_found', /chunk_zzz/);
});

// ---------------------------------------------------------------------------------------------
// rollback

/** The fixture after two accepted operations, with every state kept. */
function history() {
  const f = fixture();
  const s1 = accepted(reduce(f.state, f.chunks, { op: 'delete', chunkIds: [f.thk.id] }, SYSTEM, context({}, 'h1')));
  const chunks1 = new Map([...f.chunks, ...s1.newChunks.map((c) => [c.id, c] as const)]);
  const s2 = accepted(reduce(s1.state, chunks1, { op: 'add', chunks: [{ type: 'output', content: text('Booked.') }] }, SYSTEM, context({}, 'h2')));
  const chunks = new Map([...chunks1, ...s2.newChunks.map((c) => [c.id, c] as const)]);
  return { ...f, s1: deepFreeze(s1.state), head: deepFreeze(s2.state), all: chunks as ReadonlyMap<string, Chunk> };
}

test('rollback: the new head lists exactly the target state’s chunks and follows the current head, so history stays intact', () => {
  const h = history();
  for (const origin of ['user', 'system'] as const) {
    const result = reduce(h.head, h.all, { op: 'rollback', toStateId: h.state.id }, meta(origin), context({ rollbackTarget: h.state }));
    const { state: next, newChunks } = accepted(result);
    assertFollows(next, h.head, h.all, newChunks);
    assert.deepEqual(next.chunkIds, h.state.chunkIds);
    assert.equal(next.tokens, h.state.tokens);
    assert.equal(next.parentStateId, h.head.id);
    assert.equal(next.seq, 3);
    assert.deepEqual(newChunks, []);
  }
});

test('rollback: the agent and observers may not roll back; a missing, mismatched or foreign target is refused', () => {
  const h = history();
  const op: Operation = { op: 'rollback', toStateId: h.state.id };
  for (const origin of ['agent', 'observer'] as const) {
    refused(reduce(h.head, h.all, op, meta(origin), context({ rollbackTarget: h.state })), 'forbidden', new RegExp(`the ${origin} may not roll`));
  }
  refused(reduce(h.head, h.all, op, USER, context()), 'not_found', new RegExp(h.state.id));
  refused(reduce(h.head, h.all, op, USER, context({ rollbackTarget: h.s1 })), 'invalid');
  const foreign: MemoryState = { ...h.state, threadId: 'thread_other' };
  refused(reduce(h.head, h.all, op, USER, context({ rollbackTarget: foreign })), 'not_found', /not a state of thread thread_lisbon/);
});

// ---------------------------------------------------------------------------------------------
// permissions

test('permissions: who may update, delete, replace or batch_replace CRITICAL, read-only and agent-modifiable chunks', () => {
  const f = fixture();
  const cases = [
    { chunk: f.sys, label: 'CRITICAL' },
    { chunk: f.env, label: 'read-only' },
    { chunk: f.dlg, label: 'modifiable' },
  ];
  const ops = (id: string): Operation[] => [
    { op: 'update', chunkId: id, patch: { priority: 1 } },
    { op: 'delete', chunkIds: [id] },
    { op: 'replace', chunkId: id, chunk: { type: 'compacted', content: text('s') } },
    { op: 'batch_replace', chunkIds: [f.thk.id, id], chunk: { type: 'compacted', content: text('s') } },
  ];
  const allowed: Record<Origin, Record<string, boolean>> = {
    system: { CRITICAL: true, 'read-only': true, modifiable: true },
    user: { CRITICAL: false, 'read-only': true, modifiable: true },
    observer: { CRITICAL: false, 'read-only': true, modifiable: true },
    agent: { CRITICAL: false, 'read-only': false, modifiable: true },
  };
  for (const origin of ORIGINS) {
    for (const { chunk, label } of cases) {
      for (const operation of ops(chunk.id)) {
        const result = reduce(f.state, f.chunks, operation, meta(origin), context());
        const what = `${origin} ${operation.op} ${label}`;
        if (allowed[origin][label]) {
          assert.equal(result.ok, true, what);
        } else {
          refused(result, 'forbidden');
          assert.ok(!result.ok && result.refusal.message.includes(chunk.id), `${what}: the refusal names the chunk`);
          const rule = label === 'CRITICAL' ? /CRITICAL/ : /not agent-modifiable/;
          assert.ok(!result.ok && rule.test(result.refusal.message), `${what}: the refusal names the rule`);
        }
      }
    }
  }
});

// ---------------------------------------------------------------------------------------------
// immutability

test('immutability: no operation changes its inputs (all deep-frozen), and the results are fresh objects', () => {
  const f = fixture();
  const before = structuredClone({ state: f.state, chunks: [...f.chunks.values()] });
  const operations: Operation[] = [
    { op: 'add', chunks: [{ type: 'thinking', content: { kind: 'json', data: { a: [1, 2] } } }], position: 1 },
    { op: 'update', chunkId: f.usr.id, patch: { content: text('edited'), agentModifiable: false } },
    { op: 'delete', chunkIds: [f.thk.id] },
    { op: 'reorder', chunkIds: [...f.state.chunkIds].reverse() },
    { op: 'replace', chunkId: f.rsp.id, chunk: { type: 'compacted', content: text('s') } },
    { op: 'batch_replace', chunkIds: [f.usr.id, f.rsp.id], chunk: { type: 'compacted', content: { kind: 'chunks', chunkIds: [f.usr.id, f.rsp.id] } } },
    { op: 'rollback', toStateId: f.state.id },
  ];
  for (const operation of operations) {
    const frozenOp = deepFreeze(structuredClone(operation));
    const result = reduce(f.state, f.chunks, frozenOp, SYSTEM, context({ rollbackTarget: f.state }));
    const { state: next } = accepted(result);
    assert.notEqual(next.chunkIds, f.state.chunkIds, `${operation.op}: a new chunk id list`);
    assert.deepEqual(frozenOp, operation, `${operation.op}: the operation is unchanged`);
  }
  assert.deepEqual({ state: f.state, chunks: [...f.chunks.values()] }, before);
  assert.equal(f.chunks.size, 6);
});

// ---------------------------------------------------------------------------------------------
// property: any sequence of operations from any origin

const contentArb: fc.Arbitrary<ChunkContent> = fc.oneof(
  fc.string({ maxLength: 40 }).map((t) => ({ kind: 'text' as const, text: t })),
  fc
    .dictionary(fc.string({ maxLength: 5 }), fc.oneof(fc.integer(), fc.string({ maxLength: 10 }), fc.boolean()), { maxKeys: 3, noNullPrototype: true })
    .map((data) => ({ kind: 'json' as const, data })),
  fc.webUrl().map((url) => ({ kind: 'image' as const, url })),
  fc.array(fc.string({ minLength: 1, maxLength: 8 }), { maxLength: 3 }).map((chunkIds) => ({ kind: 'chunks' as const, chunkIds })),
);

const chunkInputArb: fc.Arbitrary<ChunkInput> = fc.record(
  {
    type: fc.constantFrom(...CHUNK_TYPES),
    content: contentArb,
    priority: fc.integer({ min: 0, max: 100 }),
    retention: fc.constantFrom(...RETENTION_CLASSES),
    agentModifiable: fc.boolean(),
  },
  { requiredKeys: ['type', 'content'] },
);

const stepArb = fc.record({
  origin: fc.constantFrom(...ORIGINS),
  kind: fc.constantFrom('add', 'update', 'delete', 'reorder', 'replace', 'batch_replace', 'rollback'),
  /** Indexes into the head's chunk ids; one past the end stands for an unknown id. Repeats make invalid ids lists. */
  picks: fc.array(fc.nat({ max: 40 }), { minLength: 1, maxLength: 4 }),
  position: fc.option(fc.nat({ max: 12 }), { nil: undefined }),
  inputs: fc.array(chunkInputArb, { minLength: 1, maxLength: 3 }),
  patch: fc.record({ content: contentArb, priority: fc.integer({ min: 0, max: 100 }), retention: fc.constantFrom(...RETENTION_CLASSES), agentModifiable: fc.boolean() }, { requiredKeys: [] }),
  seed: fc.nat(),
});
type Step = typeof stepArb extends fc.Arbitrary<infer T> ? T : never;

/** Turns a random step into a concrete operation against the current head (often valid, sometimes not). */
function concretize(step: Step, head: MemoryState, states: readonly MemoryState[], foreign: MemoryState): { operation: Operation; target?: MemoryState } {
  const ids = head.chunkIds;
  const pick = (i: number): string => ids[i % (ids.length + 1)] ?? 'chunk_unknown';
  const [first = 0] = step.picks;
  switch (step.kind) {
    case 'add':
      return { operation: { op: 'add', chunks: step.inputs, ...(step.position === undefined ? {} : { position: step.position }) } };
    case 'update':
      return { operation: { op: 'update', chunkId: pick(first), patch: step.patch } };
    case 'delete':
      return { operation: { op: 'delete', chunkIds: step.picks.map(pick) } };
    case 'replace':
      return { operation: { op: 'replace', chunkId: pick(first), chunk: step.inputs[0] as ChunkInput } };
    case 'batch_replace':
      return { operation: { op: 'batch_replace', chunkIds: step.picks.map(pick), chunk: step.inputs[0] as ChunkInput } };
    case 'reorder': {
      // A seeded shuffle, sometimes spoiled: one id dropped, one repeated, or a foreign one added.
      const order = [...ids];
      let s = step.seed;
      for (let i = order.length - 1; i > 0; i--) {
        s = (s * 1103515245 + 12345) % 2147483648;
        const j = s % (i + 1);
        [order[i], order[j]] = [order[j] as string, order[i] as string];
      }
      const spoil = step.seed % 7;
      if (spoil === 0 && order.length > 0) order.pop();
      if (spoil === 1 && order.length > 1) order[order.length - 1] = order[0] as string;
      if (spoil === 2) order.push('chunk_unknown');
      return { operation: { op: 'reorder', chunkIds: order } };
    }
    case 'rollback': {
      const which = step.seed % 6;
      const target = which === 0 ? undefined : which === 1 ? foreign : states[step.seed % states.length];
      return { operation: { op: 'rollback', toStateId: target?.id ?? 'state_unknown' }, ...(target ? { target } : {}) };
    }
  }
}

/** What the rules of seed 001 say should happen, written independently of the reducer. */
function expectedOutcome(operation: Operation, origin: Origin, head: MemoryState, chunks: ReadonlyMap<string, Chunk>, target?: MemoryState): RefusalCode | 'ok' {
  const inHead = new Set(head.chunkIds);
  const mayChange = (id: string): boolean => {
    const c = chunks.get(id) as Chunk;
    return origin === 'system' || (c.retention !== 'CRITICAL' && (origin !== 'agent' || c.agentModifiable));
  };
  switch (operation.op) {
    case 'add':
      return (operation.position ?? head.chunkIds.length) > head.chunkIds.length ? 'invalid' : 'ok';
    case 'update': {
      if (!inHead.has(operation.chunkId)) return 'not_found';
      if (!mayChange(operation.chunkId)) return 'forbidden';
      return Object.keys(operation.patch).length === 0 ? 'invalid' : 'ok';
    }
    case 'replace':
      if (!inHead.has(operation.chunkId)) return 'not_found';
      return mayChange(operation.chunkId) ? 'ok' : 'forbidden';
    case 'delete':
    case 'batch_replace':
      if (new Set(operation.chunkIds).size !== operation.chunkIds.length) return 'invalid';
      if (!operation.chunkIds.every((id) => inHead.has(id))) return 'not_found';
      return operation.chunkIds.every(mayChange) ? 'ok' : 'forbidden';
    case 'reorder':
      if (!operation.chunkIds.every((id) => inHead.has(id))) return 'not_found';
      return new Set(operation.chunkIds).size === head.chunkIds.length && operation.chunkIds.length === head.chunkIds.length ? 'ok' : 'invalid';
    case 'rollback':
      if (origin !== 'user' && origin !== 'system') return 'forbidden';
      if (!target || target.threadId !== head.threadId) return 'not_found';
      return 'ok';
  }
}

/** The chunk ids an accepted operation should leave, given the chunks it made. */
function expectedChunkIds(operation: Operation, head: MemoryState, made: readonly Chunk[], target?: MemoryState): string[] {
  const ids = head.chunkIds;
  const madeIds = made.map((c) => c.id);
  switch (operation.op) {
    case 'add': {
      const at = operation.position ?? ids.length;
      return [...ids.slice(0, at), ...madeIds, ...ids.slice(at)];
    }
    case 'update':
    case 'replace':
      return ids.map((id) => (id === operation.chunkId ? (madeIds[0] as string) : id));
    case 'delete':
      return ids.filter((id) => !operation.chunkIds.includes(id));
    case 'batch_replace': {
      const firstInOrder = ids.find((id) => operation.chunkIds.includes(id));
      return ids.flatMap((id) => (id === firstInOrder ? madeIds : operation.chunkIds.includes(id) ? [] : [id]));
    }
    case 'reorder':
      return [...operation.chunkIds];
    case 'rollback':
      return [...(target as MemoryState).chunkIds];
  }
}

test('property: any sequence of operations from any origin keeps every state immutable, consistent and reachable', () => {
  fc.assert(
    fc.property(fc.array(stepArb, { maxLength: 30 }), fc.string({ maxLength: 6 }), (steps, seed) => {
      const f = fixture();
      const chunks = new Map(f.chunks);
      const states: MemoryState[] = [f.state];
      const snapshots = [structuredClone(f.state)];
      const chunkSnapshots = new Map([...chunks].map(([id, c]) => [id, structuredClone(c)]));
      const foreign = deepFreeze<MemoryState>({ ...f.state, id: 'state_foreign', threadId: 'thread_other' });
      const newId = seededIds(seed);
      let acceptedCount = 0;

      steps.forEach((step, i) => {
        const head = states.at(-1) as MemoryState;
        const { operation, target } = concretize(step, head, states, foreign);
        deepFreeze(operation);
        const expected = expectedOutcome(operation, step.origin, head, chunks, target);
        const ctx: ReduceContext = {
          now: new Date(NOW.getTime() + i * 1000),
          newId,
          countTokens,
          operationId: `op_${i}`,
          ...(target ? { rollbackTarget: target } : {}),
        };
        const result = reduce(head, chunks, operation, meta(step.origin), ctx);

        if (expected !== 'ok') {
          // (e) a refusal leaves nothing new.
          refused(result, expected);
        } else {
          const { state, newChunks } = accepted(result);
          // (d) one accepted operation, one step of seq, chained to the head.
          assert.equal(state.seq, head.seq + 1);
          assert.equal(state.parentStateId, head.id);
          assert.equal(state.threadId, head.threadId);
          assert.equal(state.operationId, `op_${i}`);
          for (const c of newChunks) {
            assert.equal(chunks.has(c.id), false, 'new chunks never reuse an id');
            assert.equal(c.provenance.operationId, `op_${i}`);
            assert.equal(c.tokens, countTokens(c.content), 'a new chunk counts its own content');
            chunks.set(c.id, deepFreeze(c));
            chunkSnapshots.set(c.id, structuredClone(c));
          }
          assert.deepEqual(state.chunkIds, expectedChunkIds(operation, head, newChunks, target));
          // (b) unique ids, every one resolvable; (c) tokens add up.
          assert.equal(new Set(state.chunkIds).size, state.chunkIds.length);
          assert.ok(state.chunkIds.every((id) => chunks.has(id)));
          assert.equal(state.tokens, sum(state.chunkIds, chunks));
          assert.ok(
            states.every((s) => s.id !== state.id),
            'state ids are fresh',
          );
          states.push(deepFreeze(state));
          acceptedCount++;
          snapshots.push(structuredClone(state));
        }
        // (a) every state and chunk produced so far is exactly as it was when produced.
        assert.deepEqual(states, snapshots);
        for (const [id, c] of chunks) assert.deepEqual(c, chunkSnapshots.get(id));
      });
      // (d) the head's seq counts exactly the accepted operations.
      assert.equal((states.at(-1) as MemoryState).seq, acceptedCount);
    }),
    { numRuns: 300 },
  );
});

// ---------------------------------------------------------------------------------------------
// ids

test('randomIds: prefixed, lowercase base36 ids of the documented length that do not repeat; message ids are short', () => {
  const ids = randomIds();
  const seen = new Set<string>();
  for (let i = 0; i < 5000; i++) seen.add(ids('chunk'));
  assert.equal(seen.size, 5000);
  for (const id of seen) assert.match(id, /^chunk_[0-9a-z]{16}$/);
  assert.match(ids('thread'), /^thread_[0-9a-z]{16}$/);
  assert.match(ids('state'), /^state_[0-9a-z]{16}$/);
  assert.match(ids('operation'), /^op_[0-9a-z]{16}$/);
  assert.match(ids('message'), new RegExp(`^msg_[0-9a-z]{${ID_LENGTH.message}}$`));
  assert.ok(ID_LENGTH.message <= 10);
  // Every character of the alphabet shows up: the ids use the whole base36 range, not hex.
  assert.equal(new Set([...seen].join('').replace(/chunk_/g, '')).size, 36);
});

test('seededIds: the same seed gives the same ids, another seed different ones', () => {
  const take = (seed: string | number) => {
    const ids = seededIds(seed);
    return [ids('thread'), ids('chunk'), ids('message'), ids('chunk')];
  };
  assert.deepEqual(take('alpha'), take('alpha'));
  assert.deepEqual(take(7), take(7));
  assert.notDeepEqual(take('alpha'), take('beta'));
  const [thread, chunk, message, chunk2] = take('alpha');
  assert.match(thread ?? '', /^thread_[0-9a-z]{16}$/);
  assert.match(message ?? '', /^msg_[0-9a-z]{10}$/);
  assert.notEqual(chunk, chunk2);
});
