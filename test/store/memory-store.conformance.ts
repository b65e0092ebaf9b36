/**
 * The one conformance spec every MemoryStore backend passes unchanged. Each
 * backend's test file only supplies an initializer (a fresh store per test).
 * Ids carry a random tag, so backends whose tests share storage (one Postgres
 * database per run) never see each other's threads.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, test } from 'node:test';
import { ID_PREFIX, type Chunk, type IdKind, type MemoryState, type MemoryThread, type OperationKind, type OperationRecord, type Origin, type ReadRecord } from '../../src/memory/model';
import { HeadMovedError, type CommitInput, type MemoryStore, type NewOperationRecord } from '../../src/store/memory-store';

export interface ConformanceTarget {
  store: MemoryStore;
  /** Another instance on the same data: a restarted process, or a second process next to this one. Required when persistent. */
  reopen?: () => Promise<MemoryStore>;
  /** Bytes the backend holds, for the check that storage grows with changes, not with thread size. */
  storedBytes: () => Promise<number>;
  /** Ends every instance opened and removes the data. */
  cleanup: () => Promise<void>;
}

export interface ConformanceOptions {
  /**
   * Whether data outlives a store instance (file, Postgres). The tests that need a second
   * instance (re-open, another process) are registered only then.
   */
  persistent: boolean;
  /** Operations of the storage-growth test. @default 10000 */
  growthOps?: number;
}

/** Builds the data a reducer would produce; the store under test only stores it. */
export class Fixture {
  readonly tag = randomBytes(4).toString('hex');
  readonly userId = `user_${this.tag}`;
  private n = 0;
  private clock = Date.UTC(2031, 0, 1);

  id(kind: IdKind): string {
    return `${ID_PREFIX[kind]}${this.tag}_${++this.n}`;
  }

  /** Strictly increasing timestamps, one second apart. */
  at(): string {
    this.clock += 1000;
    return new Date(this.clock).toISOString();
  }

  chunk(text = `chunk ${this.n}`, extra: Partial<Chunk> = {}): Chunk {
    return {
      id: this.id('chunk'),
      type: 'thinking',
      content: { kind: 'text', text },
      priority: 40,
      retention: 'BATCH_COMPRESSIBLE',
      agentModifiable: true,
      parentChunkId: null,
      provenance: { runId: 'run-1', stepId: 's1' },
      messageId: null,
      tokens: 3,
      createdAt: this.at(),
      ...extra,
    };
  }

  record(threadId: string, kind: OperationKind, extra: Partial<NewOperationRecord> = {}): NewOperationRecord {
    return {
      id: this.id('operation'),
      threadId,
      kind,
      origin: 'agent',
      reason: 'conformance test',
      trigger: 'test step',
      operation: kind === 'add' ? { op: 'add', chunks: [{ type: 'thinking', content: { kind: 'text', text: 'x' } }] } : null,
      details: null,
      fromStateId: null,
      toStateId: '',
      newChunkIds: [],
      at: this.at(),
      ...extra,
    };
  }

  /** A record of a read of `stateId`, as the memory service queues it. */
  read(threadId: string, stateId: string, extra: Partial<ReadRecord> = {}): ReadRecord {
    return {
      id: this.id('read'),
      threadId,
      kind: 'read',
      target: 'context',
      origin: 'agent',
      reason: 'prompt of execution_plan',
      trigger: 'model call',
      stateId,
      details: { budget: 8000, tokens: 12, chunks: 2 },
      at: this.at(),
      ...extra,
    };
  }

  newThread(options: { userId?: string; chunks?: number; createdAt?: string } = {}) {
    const id = this.id('thread');
    const chunks = Array.from({ length: options.chunks ?? 2 }, (_, i) => this.chunk(`initial ${i}`));
    const createdAt = options.createdAt ?? this.at();
    const state: MemoryState = { id: this.id('state'), threadId: id, parentStateId: null, seq: 0, chunkIds: chunks.map((c) => c.id), tokens: chunks.length * 3, operationId: null, createdAt };
    const thread: MemoryThread = { id, userId: options.userId ?? this.userId, headStateId: state.id, limits: { soft: 6000, hard: 8000 }, forkedFrom: null, createdAt };
    const record = this.record(id, 'create', { origin: 'system', toStateId: state.id, newChunkIds: state.chunkIds });
    return { thread, state, chunks, record };
  }

  /** The state after `head` whose chunk ids are `chunkIds`. */
  next(head: MemoryState, chunkIds: string[]): MemoryState {
    return { id: this.id('state'), threadId: head.threadId, parentStateId: head.id, seq: head.seq + 1, chunkIds, tokens: chunkIds.length * 3, operationId: this.id('operation'), createdAt: this.at() };
  }

  /** A commit of `chunkIds` (default: the head's plus the new chunks) on top of `head`. */
  change(head: MemoryState, newChunks: Chunk[], chunkIds = [...head.chunkIds, ...newChunks.map((c) => c.id)], extra: Partial<NewOperationRecord> = {}): CommitInput & { state: MemoryState } {
    const state = this.next(head, chunkIds);
    return {
      threadId: head.threadId,
      expectedHeadStateId: head.id,
      state,
      chunks: newChunks,
      record: this.record(head.threadId, 'add', { id: state.operationId as string, fromStateId: head.id, toStateId: state.id, newChunkIds: newChunks.map((c) => c.id), ...extra }),
    };
  }
}

/** Deterministic pseudo-random numbers (mulberry32), so a failure reproduces. */
function random(seed: number): (n: number) => number {
  let a = seed >>> 0;
  return (n) => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return Math.floor((((t ^ (t >>> 14)) >>> 0) / 4294967296) * n);
  };
}

async function withTarget(init: () => Promise<ConformanceTarget>, fn: (target: ConformanceTarget, f: Fixture) => Promise<void>): Promise<void> {
  const target = await init();
  try {
    await fn(target, new Fixture());
  } finally {
    await target.cleanup();
  }
}

async function requireState(store: MemoryStore, stateId: string): Promise<MemoryState> {
  const state = await store.getState(stateId);
  assert.ok(state, `state ${stateId} should exist`);
  return state;
}

async function head(store: MemoryStore, threadId: string): Promise<MemoryState> {
  const thread = await store.getThread(threadId);
  assert.ok(thread, `thread ${threadId} should exist`);
  return requireState(store, thread.headStateId);
}

export function memoryStoreConformance(name: string, init: () => Promise<ConformanceTarget>, options: ConformanceOptions): void {
  describe(`MemoryStore conformance: ${name}`, () => {
    test('a created thread reads back with its first state, chunks and creating record (seq 1)', async () => {
      await withTarget(init, async ({ store }, f) => {
        const created = f.newThread({ chunks: 3 });
        const record = await store.createThread(created);
        assert.deepEqual(record, { ...created.record, seq: 1 });
        assert.deepEqual(await store.getThread(created.thread.id), created.thread);
        assert.deepEqual(await store.getState(created.state.id), created.state);
        assert.deepEqual(await store.getChunks(created.state.chunkIds), created.chunks);
        assert.deepEqual(await store.listOperations(created.thread.id), [record]);
        assert.deepEqual(await store.listStates(created.thread.id), [{ stateId: created.state.id, parentStateId: null, seq: 0, operationId: null, at: created.state.createdAt }]);
        assert.deepEqual(await store.listCheckpoints(created.thread.id), []);

        await assert.rejects(store.createThread({ ...created, record: f.record(created.thread.id, 'create') }), /exist/);
        assert.equal((await store.listOperations(created.thread.id)).length, 1, 'a second create of the same id changes nothing');
        assert.equal(await store.getThread(`thread_${f.tag}_nope`), undefined);
        assert.equal(await store.getState(`state_${f.tag}_nope`), undefined);
        assert.deepEqual(await store.listOperations(`thread_${f.tag}_nope`), []);
      });
    });

    test('threads are listed by user, newest first, with their current head and a limit', async () => {
      await withTarget(init, async ({ store }, f) => {
        const t0 = Date.UTC(2032, 5, 1);
        const when = (minutes: number) => new Date(t0 + minutes * 60_000).toISOString();
        // Created out of time order on purpose; createdAt decides the order.
        const b = f.newThread({ createdAt: when(2) });
        const a = f.newThread({ createdAt: when(1) });
        const c = f.newThread({ createdAt: when(3) });
        const other = f.newThread({ userId: `other_${f.tag}`, createdAt: when(4) });
        for (const t of [b, a, c, other]) await store.createThread(t);
        const moved = f.change(a.state, [f.chunk()]);
        await store.commit(moved);

        const mine = await store.listThreads({ userId: f.userId });
        assert.deepEqual(
          mine.map((t) => t.id),
          [c.thread.id, b.thread.id, a.thread.id],
        );
        assert.equal(mine[2]?.headStateId, moved.state.id, 'a listed thread shows its current head');
        assert.deepEqual(
          (await store.listThreads({ userId: f.userId, limit: 2 })).map((t) => t.id),
          [c.thread.id, b.thread.id],
        );
        assert.deepEqual(
          (await store.listThreads({ userId: `other_${f.tag}` })).map((t) => t.id),
          [other.thread.id],
        );
        assert.deepEqual(
          (await store.listThreads({ userId: f.userId.toUpperCase() })).map((t) => t.id),
          mine.map((t) => t.id),
          'one user whatever the case of the id',
        );
        assert.deepEqual(await store.listThreads({ userId: `nobody_${f.tag}` }), []);
        const everyone = (await store.listThreads({})).filter((t) => t.id.includes(f.tag)).map((t) => t.id);
        assert.deepEqual(everyone, [other.thread.id, c.thread.id, b.thread.id, a.thread.id]);
      });
    });

    test('every state of a 300-operation history materializes exactly (adds, deletes, reorders, replaces, rollbacks)', async () => {
      await withTarget(init, async (target, f) => {
        const { store } = target;
        const rnd = random(20_240_601);
        const created = f.newThread({ chunks: 5 });
        await store.createThread(created);
        const model = new Map<string, string[]>([[created.state.id, created.state.chunkIds]]);
        const order = [created.state.id];
        let current = created.state;
        for (let i = 0; i < 300; i++) {
          const ids = current.chunkIds.slice();
          const fresh: Chunk[] = [];
          const freshId = () => {
            const c = f.chunk(`op ${i}`);
            fresh.push(c);
            return c.id;
          };
          const kind = rnd(10);
          if (kind < 4 || ids.length < 3) {
            ids.splice(rnd(ids.length + 1), 0, ...Array.from({ length: 1 + rnd(4) }, freshId)); // add
          } else if (kind < 6) {
            for (let k = 1 + rnd(3); k > 0 && ids.length > 0; k--) ids.splice(rnd(ids.length), 1); // delete
          } else if (kind === 6) {
            const [moved] = ids.splice(rnd(ids.length), 1); // reorder: move one
            ids.splice(rnd(ids.length + 1), 0, moved as string);
          } else if (kind === 7) {
            const at = rnd(ids.length);
            ids.splice(at, 1 + rnd(Math.min(4, ids.length - at)), freshId()); // replace / batch_replace
          } else if (kind === 8) {
            ids.reverse(); // reorder: everything
          } else {
            ids.splice(0, ids.length, ...(model.get(order[rnd(order.length)] as string) as string[])); // rollback
          }
          const change = f.change(current, fresh, ids);
          const result = await store.commit(change);
          assert.equal(result.status, 'committed');
          model.set(change.state.id, ids);
          order.push(change.state.id);
          current = change.state;
        }
        // A re-opened store reads cold (no cached states); shuffled, so chains are walked from everywhere.
        const reader = target.reopen ? await target.reopen() : store;
        const shuffled = order.slice().sort(() => rnd(3) - 1);
        for (const id of shuffled) assert.deepEqual((await requireState(reader, id)).chunkIds, model.get(id), `state ${id}`);
        assert.deepEqual(
          (await reader.listStates(created.thread.id)).map((s) => s.stateId),
          order,
        );
        assert.deepEqual((await reader.getThread(created.thread.id))?.headStateId, current.id);
      });
    });

    test('getChunks keeps the order asked, repeats repeated ids, leaves out unknown ids, and reaches chunks shared by a fork', async () => {
      await withTarget(init, async ({ store }, f) => {
        const created = f.newThread({ chunks: 3 });
        await store.createThread(created);
        const [c1, c2, c3] = created.chunks as [Chunk, Chunk, Chunk];
        assert.deepEqual(await store.getChunks([c3.id, `chunk_${f.tag}_unknown`, c1.id, c3.id]), [c3, c1, c3]);
        assert.deepEqual(await store.getChunks([]), []);

        // A fork's first state lists the source's chunks without storing them again.
        const fork = f.newThread({ chunks: 0 });
        const forkState = { ...fork.state, chunkIds: [c2.id, c1.id] };
        await store.createThread({
          ...fork,
          thread: { ...fork.thread, headStateId: forkState.id, forkedFrom: { threadId: created.thread.id, stateId: created.state.id } },
          state: forkState,
          chunks: [],
        });
        const forked = await requireState(store, forkState.id);
        assert.deepEqual(await store.getChunks(forked.chunkIds), [c2, c1]);
        assert.deepEqual((await store.getThread(fork.thread.id))?.forkedFrom, { threadId: created.thread.id, stateId: created.state.id });
        // The read-only path, where a backend has one, answers as getChunks does.
        if (store.readChunks) {
          assert.deepEqual(await store.readChunks([c3.id, `chunk_${f.tag}_unknown`, c1.id, c3.id]), [c3, c1, c3]);
          assert.deepEqual(await store.readChunks(forked.chunkIds), [c2, c1]);
        }
      });
    });

    test('a conversation message is found by its id, the newest chunk carrying it winning', async () => {
      await withTarget(init, async ({ store }, f) => {
        const created = f.newThread({ chunks: 1 });
        await store.createThread(created);
        const question = f.chunk('Use Latin American Spanish.', { type: 'user', messageId: `msg_${f.tag}_ghi789` });
        const answer = f.chunk('Here is the poem.', { type: 'response', messageId: `msg_${f.tag}_jkl012` });
        const first = f.change(created.state, [question, answer]);
        await store.commit(first);
        const threadId = created.thread.id;
        assert.deepEqual(await store.findChunkByMessageId(`msg_${f.tag}_ghi789`), { threadId, chunk: question });
        assert.deepEqual(await store.findChunkByMessageId(`msg_${f.tag}_jkl012`), { threadId, chunk: answer });
        assert.equal(await store.findChunkByMessageId(`msg_${f.tag}_missing`), undefined);

        // Editing makes a new chunk with the same message id, linked to the old one.
        const edited = f.chunk('Use Castilian Spanish.', { type: 'user', messageId: question.messageId, parentChunkId: question.id });
        await store.commit(
          f.change(
            first.state,
            [edited],
            first.state.chunkIds.map((id) => (id === question.id ? edited.id : id)),
          ),
        );
        assert.deepEqual(await store.findChunkByMessageId(`msg_${f.tag}_ghi789`), { threadId, chunk: edited });
      });
    });

    test('a commit appends the record as seq last + 1 and moves the head', async () => {
      await withTarget(init, async ({ store }, f) => {
        const created = f.newThread();
        const createRecord = await store.createThread(created);
        const change = f.change(created.state, [f.chunk('one'), f.chunk('two')]);
        const result = await store.commit(change);
        assert.deepEqual(result, { status: 'committed', record: { ...change.record, seq: 2 } });
        assert.equal((await store.getThread(created.thread.id))?.headStateId, change.state.id);
        assert.deepEqual(await store.getState(change.state.id), change.state);
        assert.deepEqual(await store.getChunks(change.state.chunkIds), [...created.chunks, ...change.chunks]);
        assert.deepEqual(await store.listOperations(created.thread.id), [createRecord, result.record]);
        assert.deepEqual(
          (await store.listStates(created.thread.id)).map((s) => [s.stateId, s.parentStateId, s.seq, s.operationId, s.at]),
          [
            [created.state.id, null, 0, null, created.state.createdAt],
            [change.state.id, created.state.id, 1, change.state.operationId, change.state.createdAt],
          ],
        );
        await assert.rejects(store.commit({ ...f.change(created.state, []), threadId: `thread_${f.tag}_nope` }), 'a commit to an unknown thread fails');
      });
    });

    test('a commit against a head that moved fails with HeadMovedError and changes nothing', async () => {
      await withTarget(init, async ({ store }, f) => {
        const created = f.newThread();
        await store.createThread(created);
        const winner = f.change(created.state, [f.chunk('winner')]);
        await store.commit(winner);
        const loser = f.change(created.state, [f.chunk('loser')]);
        await assert.rejects(store.commit(loser), (err: unknown) => {
          assert.ok(err instanceof HeadMovedError, `expected HeadMovedError, got ${String(err)}`);
          assert.equal(err.threadId, created.thread.id);
          assert.equal(err.expected, created.state.id);
          assert.equal(err.actual, winner.state.id);
          return true;
        });
        assert.equal((await store.getThread(created.thread.id))?.headStateId, winner.state.id);
        assert.equal((await store.listOperations(created.thread.id)).length, 2);
        assert.equal(await store.getState(loser.state.id), undefined);
        assert.deepEqual(await store.getChunks(loser.chunks.map((c) => c.id)), []);
        // The same goes for a record-only commit (a checkpoint) against a stale head.
        await assert.rejects(
          store.commit({
            threadId: created.thread.id,
            expectedHeadStateId: created.state.id,
            state: null,
            chunks: [],
            record: f.record(created.thread.id, 'checkpoint'),
            checkpoint: { name: 'stale' },
          }),
          HeadMovedError,
        );
        assert.deepEqual(await store.listCheckpoints(created.thread.id), []);
      });
    });

    test('a retried record id is reported as a duplicate with the first result, even after the head moved on', async () => {
      await withTarget(init, async ({ store }, f) => {
        const created = f.newThread();
        await store.createThread(created);
        const change = f.change(created.state, [f.chunk('once')]);
        const first = await store.commit(change);
        assert.equal(first.status, 'committed');
        assert.deepEqual(await store.commit(change), { status: 'duplicate', record: first.record });
        const later = f.change(change.state, [f.chunk('later')]);
        await store.commit(later);
        // A retry built against the old head, with a new state id (re-reduced): still the duplicate.
        const retry = { ...change, state: { ...change.state, id: f.id('state') } };
        assert.deepEqual(await store.commit(retry), { status: 'duplicate', record: first.record });
        assert.equal((await store.listOperations(created.thread.id)).length, 3);
        assert.equal((await store.getThread(created.thread.id))?.headStateId, later.state.id);
        assert.equal(await store.getState(retry.state.id), undefined);
      });
    });

    test('a record-only commit (checkpoint) keeps the head, names it, and is listed', async () => {
      await withTarget(init, async ({ store }, f) => {
        const created = f.newThread();
        await store.createThread(created);
        const change = f.change(created.state, [f.chunk()]);
        await store.commit(change);
        const record = f.record(created.thread.id, 'checkpoint', { origin: 'user', details: { name: 'before summary' }, fromStateId: change.state.id, toStateId: 'ignored' });
        const result = await store.commit({ threadId: created.thread.id, expectedHeadStateId: change.state.id, state: null, chunks: [], record, checkpoint: { name: 'before summary' } });
        assert.deepEqual(result, { status: 'committed', record: { ...record, seq: 3, toStateId: change.state.id } });
        assert.equal((await store.getThread(created.thread.id))?.headStateId, change.state.id);
        assert.deepEqual(await store.listCheckpoints(created.thread.id), [{ name: 'before summary', stateId: change.state.id, at: record.at }]);
        assert.equal((await store.listStates(created.thread.id)).length, 2, 'no new state');
        // A fork-source record: no checkpoint, also no new state.
        const fork = f.record(created.thread.id, 'fork', { origin: 'user', details: { toThreadId: 'thread_x' } });
        assert.equal((await store.commit({ threadId: created.thread.id, expectedHeadStateId: change.state.id, state: null, chunks: [], record: fork })).record.seq, 4);
        assert.equal((await store.listCheckpoints(created.thread.id)).length, 1);
        // Commits go on from the same head.
        const after = f.change(change.state, [f.chunk()]);
        assert.equal((await store.commit(after)).record.seq, 5);
      });
    });

    test('operations are listed in seq order and filtered by origin, kind, run, time, cursor and limit', async () => {
      await withTarget(init, async ({ store }, f) => {
        const created = f.newThread();
        await store.createThread(created);
        const threadId = created.thread.id;
        let current = created.state;
        const times: string[] = [created.record.at];
        const step = async (kind: OperationKind, origin: Origin, runId?: string) => {
          const extra = { kind, origin, ...(runId ? { runId, stepId: 's9' } : {}) };
          if (kind === 'checkpoint') {
            const record = f.record(threadId, kind, extra);
            times.push(record.at);
            await store.commit({ threadId, expectedHeadStateId: current.id, state: null, chunks: [], record, checkpoint: { name: `cp ${times.length}` } });
          } else {
            const change = f.change(current, kind === 'delete' ? [] : [f.chunk()], kind === 'delete' ? current.chunkIds.slice(1) : undefined, extra);
            times.push(change.record.at);
            await store.commit(change);
            current = change.state;
          }
        };
        await step('add', 'agent', 'run-a'); // seq 2
        await step('delete', 'user'); // seq 3
        await step('checkpoint', 'system', 'run-a'); // seq 4
        await step('update', 'observer', 'run-b'); // seq 5
        await step('add', 'agent', 'run-b'); // seq 6
        const seqs = async (filter: Parameters<MemoryStore['listOperations']>[1]) => (await store.listOperations(threadId, filter)).map((r) => r.seq);
        assert.deepEqual(await seqs(undefined), [1, 2, 3, 4, 5, 6]);
        assert.deepEqual(await seqs({ origin: 'agent' }), [2, 6]);
        assert.deepEqual(await seqs({ origin: 'observer' }), [5]);
        assert.deepEqual(await seqs({ kind: 'add' }), [2, 6]);
        assert.deepEqual(await seqs({ kind: 'checkpoint' }), [4]);
        assert.deepEqual(await seqs({ kind: 'create' }), [1]);
        assert.deepEqual(await seqs({ runId: 'run-a' }), [2, 4]);
        assert.deepEqual(await seqs({ runId: 'run-b', origin: 'agent' }), [6]);
        assert.deepEqual(await seqs({ since: times[2] }), [3, 4, 5, 6], 'since is inclusive');
        assert.deepEqual(await seqs({ until: times[2] }), [1, 2, 3], 'until is inclusive');
        assert.deepEqual(await seqs({ since: times[2], until: times[4] }), [3, 4, 5]);
        assert.deepEqual(await seqs({ afterSeq: 4 }), [5, 6]);
        assert.deepEqual(await seqs({ afterSeq: 6 }), []);
        assert.deepEqual(await seqs({ limit: 2 }), [1, 2]);
        assert.deepEqual(await seqs({ afterSeq: 2, limit: 2 }), [3, 4]);
        assert.deepEqual(await seqs({ origin: 'agent', limit: 1 }), [2]);
        const [, second] = await store.listOperations(threadId, { runId: 'run-a' });
        assert.deepEqual([second?.runId, second?.stepId], ['run-a', 's9'], 'run and step ids are kept');
      });
    });

    test('reads are appended in batches beside the operations: listed in time order, filtered, kept once, never for unknown threads', async () => {
      await withTarget(init, async ({ store }, f) => {
        const created = f.newThread();
        await store.createThread(created);
        const threadId = created.thread.id;
        const stateId = created.state.id;
        const render = f.read(threadId, stateId, { runId: 'run-1', stepId: 's1' });
        const plainUser = f.read(threadId, stateId, { target: 'thread', origin: 'user', reason: 'read through the API', trigger: 'GET /v1/threads/x', details: null });
        const message = f.read(threadId, stateId, { target: 'message', runId: 'run-2', stepId: 's4', details: { messageId: 'msg_1', chunkId: 'chunk_1' } });
        // Batches from several processes arrive out of time order; a retried batch repeats records.
        await store.appendReads([message]);
        await store.appendReads([render, plainUser, message, f.read(`thread_${f.tag}_missing`, stateId)]);
        assert.deepEqual(await store.listReads(threadId), [render, plainUser, message]);
        assert.deepEqual(await store.listReads(threadId, { origin: 'user' }), [plainUser]);
        assert.deepEqual(await store.listReads(threadId, { target: 'message' }), [message]);
        assert.deepEqual(await store.listReads(threadId, { runId: 'run-1' }), [render]);
        assert.deepEqual(await store.listReads(threadId, { since: plainUser.at, until: plainUser.at }), [plainUser]);
        assert.deepEqual(await store.listReads(threadId, { limit: 2 }), [render, plainUser]);
        assert.deepEqual(await store.listReads(`thread_${f.tag}_missing`), []);
        await store.appendReads([]);
        // Reads take no seq and move nothing.
        assert.deepEqual(
          (await store.listOperations(threadId)).map((r) => r.seq),
          [1],
        );
        assert.equal((await store.getThread(threadId))?.headStateId, stateId);
      });
    });

    test('what goes in and what comes out are copies: callers cannot change stored data', async () => {
      await withTarget(init, async ({ store }, f) => {
        const created = f.newThread({ chunks: 2 });
        const pristine = structuredClone(created);
        await store.createThread(created);
        created.state.chunkIds.push('chunk_intruder');
        created.thread.userId = 'mallory';
        (created.chunks[0] as Chunk).content = { kind: 'text', text: 'changed after the write' };
        assert.deepEqual(await store.getThread(pristine.thread.id), pristine.thread);
        assert.deepEqual(await store.getState(pristine.state.id), pristine.state);
        assert.deepEqual(await store.getChunks(pristine.state.chunkIds), pristine.chunks);

        const state = await requireState(store, pristine.state.id);
        state.chunkIds.reverse();
        const [chunk] = await store.getChunks(pristine.state.chunkIds);
        (chunk as Chunk).tokens = 999;
        const [record] = await store.listOperations(pristine.thread.id);
        (record as OperationRecord).newChunkIds.push('chunk_intruder');
        assert.deepEqual(await store.getState(pristine.state.id), pristine.state);
        assert.deepEqual(await store.getChunks(pristine.state.chunkIds), pristine.chunks);
        assert.deepEqual((await store.listOperations(pristine.thread.id))[0]?.newChunkIds, pristine.record.newChunkIds);
      });
    });

    test('20 concurrent writers retrying on HeadMovedError all land exactly once: no lost update', async () => {
      await withTarget(init, async (target, f) => {
        // With a second instance, half the writers are "another process".
        const stores = target.reopen ? [target.store, await target.reopen()] : [target.store];
        const created = f.newThread({ chunks: 1 });
        await target.store.createThread(created);
        const writers = Array.from({ length: 20 }, (_, w) => ({ chunk: f.chunk(`writer ${w}`), recordId: f.id('operation'), store: stores[w % stores.length] as MemoryStore }));
        let conflicts = 0;
        await Promise.all(
          writers.map(async ({ chunk, recordId, store }) => {
            for (;;) {
              const current = await head(store, created.thread.id);
              const change = f.change(current, [chunk]);
              try {
                await store.commit({ ...change, record: { ...change.record, id: recordId } });
                return;
              } catch (err) {
                if (!(err instanceof HeadMovedError)) throw err;
                conflicts++;
              }
            }
          }),
        );
        const records = await target.store.listOperations(created.thread.id);
        assert.deepEqual(
          records.map((r) => r.seq),
          Array.from({ length: 21 }, (_, i) => i + 1),
        );
        const final = await head(target.store, created.thread.id);
        assert.deepEqual(final.chunkIds.slice().sort(), [...created.state.chunkIds, ...writers.map((w) => w.chunk.id)].sort(), 'every writer’s chunk is in the head');
        const states = await target.store.listStates(created.thread.id);
        assert.equal(states.length, 21);
        states.forEach((s, i) => i > 0 && assert.equal(s.parentStateId, states[i - 1]?.stateId, 'each state builds on the one before'));
        records.forEach((r, i) => i > 0 && assert.equal(r.fromStateId, records[i - 1]?.toStateId, 'each record starts where the previous ended'));
        assert.ok(conflicts > 0, 'the writers really raced');
      });
    });

    if (options.persistent) {
      test('everything survives re-opening the store (a restarted process)', async () => {
        await withTarget(init, async (target, f) => {
          assert.ok(target.reopen, 'a persistent target opens second instances');
          const created = f.newThread();
          await target.store.createThread(created);
          const change = f.change(created.state, [f.chunk('remember me', { type: 'user', messageId: `msg_${f.tag}_keep` })]);
          await target.store.commit(change);
          await target.store.commit({
            threadId: created.thread.id,
            expectedHeadStateId: change.state.id,
            state: null,
            chunks: [],
            record: f.record(created.thread.id, 'checkpoint'),
            checkpoint: { name: 'kept' },
          });
          const before = {
            thread: await target.store.getThread(created.thread.id),
            states: await target.store.listStates(created.thread.id),
            records: await target.store.listOperations(created.thread.id),
            checkpoints: await target.store.listCheckpoints(created.thread.id),
            reads: await (async () => {
              await target.store.appendReads([f.read(created.thread.id, change.state.id)]);
              return target.store.listReads(created.thread.id);
            })(),
          };
          await target.store.end();
          const reopened = await target.reopen();
          assert.deepEqual(await reopened.getThread(created.thread.id), before.thread);
          assert.deepEqual(await reopened.listStates(created.thread.id), before.states);
          assert.deepEqual(await reopened.listOperations(created.thread.id), before.records);
          assert.deepEqual(await reopened.listCheckpoints(created.thread.id), before.checkpoints);
          assert.equal(before.checkpoints.length, 1);
          assert.deepEqual(await reopened.getState(change.state.id), change.state);
          assert.deepEqual(await reopened.getChunks(change.state.chunkIds), [...created.chunks, ...change.chunks]);
          assert.deepEqual(await reopened.findChunkByMessageId(`msg_${f.tag}_keep`), { threadId: created.thread.id, chunk: change.chunks[0] });
          assert.deepEqual(await reopened.listReads(created.thread.id), before.reads);
          assert.equal(before.reads.length, 1);
          assert.deepEqual(
            (await reopened.listThreads({ userId: f.userId })).map((x) => x.id),
            [created.thread.id],
          );
          // And it takes writes where the old instance stopped.
          assert.equal((await reopened.commit(f.change(change.state, [f.chunk()]))).record.seq, 4);
        });
      });

      test('a second store instance sees the first one’s writes at once (another process)', async () => {
        await withTarget(init, async (target, f) => {
          assert.ok(target.reopen, 'a persistent target opens second instances');
          const other = await target.reopen();
          const created = f.newThread();
          await target.store.createThread(created);
          assert.equal((await other.getThread(created.thread.id))?.headStateId, created.state.id);
          const change = f.change(created.state, [f.chunk()]);
          await target.store.commit(change);
          assert.equal((await other.getThread(created.thread.id))?.headStateId, change.state.id);
          assert.deepEqual(await other.getState(change.state.id), change.state);
          assert.equal((await other.listOperations(created.thread.id)).length, 2);
          // Reads appended by one instance are listed by the other, which appends its own beside them.
          const mine = f.read(created.thread.id, change.state.id);
          await target.store.appendReads([mine]);
          assert.deepEqual(await other.listReads(created.thread.id), [mine]);
          const theirs = f.read(created.thread.id, change.state.id);
          await other.appendReads([theirs, mine]);
          assert.deepEqual(await target.store.listReads(created.thread.id), [mine, theirs]);
          const back = f.change(change.state, [f.chunk()]);
          await other.commit(back);
          await assert.rejects(target.store.commit(f.change(change.state, [f.chunk()])), HeadMovedError);
          assert.deepEqual(await head(target.store, created.thread.id), back.state);
        });
      });
    }

    test('stored bytes grow with the change, not with thread size', async (t) => {
      await withTarget(init, async (target, f) => {
        const ops = options.growthOps ?? 10_000;
        const window = Math.max(1, Math.floor(ops / 10));
        const created = f.newThread({ chunks: 0 });
        await target.store.createThread(created);
        let current = created.state;
        const marks = new Map<number, number>();
        const at = [window, 2 * window, ops - window, ops];
        for (let i = 1; i <= ops; i++) {
          const change = f.change(current, [f.chunk(`appended ${i}`)]);
          await target.store.commit(change);
          current = change.state;
          if (at.includes(i)) marks.set(i, await target.storedBytes());
        }
        const early = (marks.get(2 * window) as number) - (marks.get(window) as number);
        const late = (marks.get(ops) as number) - (marks.get(ops - window) as number);
        t.diagnostic(
          `bytes per op: ops ${window}–${2 * window}: ${(early / window).toFixed(0)}, ops ${ops - window}–${ops}: ${(late / window).toFixed(0)} (thread of ${current.chunkIds.length} chunks)`,
        );
        assert.equal(current.chunkIds.length, ops);
        assert.ok(late <= 2 * early && late >= early / 2, `bytes per op must stay flat: ${early / window} early vs ${late / window} late`);
        assert.deepEqual((await head(target.store, created.thread.id)).chunkIds.slice(-2), current.chunkIds.slice(-2));
      });
    });
  });
}
