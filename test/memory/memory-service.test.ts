/**
 * The MemoryService as its callers (activities, the REST API) use it, over the
 * real stores (in process and files on disk), the real observers, the real
 * tokenizer, and — for compaction — real `memory_summary` model calls over HTTP
 * to the stub model server.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { DemoProvider } from '../../src/llm/demo-provider';
import type { ModelProvider } from '../../src/llm/provider';
import { summarize } from '../../src/llm/summarize';
import { planCompaction, projectedSummaryTokens, projectTokens } from '../../src/memory/compaction';
import type { Chunk, ChunkInput, Operation, OperationMeta, Origin, TokenLimits } from '../../src/memory/model';
import { redactSecrets, type MemoryObserver } from '../../src/memory/observers';
import { messagesTokens } from '../../src/memory/parser';
import { countContentTokens, countTextTokens } from '../../src/memory/tokens';
import { MemoryRefusedError, MemoryService, operationIdFor, StateNotFoundError, ThreadNotFoundError, type Summarizer } from '../../src/store/memory-service';
import type { MemoryStore } from '../../src/store/memory-store';
import { FileMemoryStore } from '../../src/store/memory/file-store';
import { InMemoryMemoryStore } from '../../src/store/memory/in-memory-store';
import { StubModelServer, type StubRequest } from '../helpers/stub-model-server';
import { scratchDirs } from '../helpers/scratch-dirs';
import { stubProvider } from '../helpers/temporal-env';

const LIMITS: TokenLimits = { soft: 4000, hard: 8000 };
const by = (origin: Origin, reason = 'test'): OperationMeta => ({ origin, reason, trigger: 'test' });
const text = (t: string) => ({ kind: 'text' as const, text: t });

const opened: MemoryStore[] = [];

after(async () => {
  await Promise.all(opened.map((s) => s.end()));
});
/** Registered after the hook above, so stores are closed before their directories go. */
const newDir = scratchDirs('threadline-memory-service-', 'd');

async function fileStore(dir: string): Promise<FileMemoryStore> {
  const store = new FileMemoryStore(dir);
  await store.setup();
  opened.push(store);
  return store;
}

/** Both local backends; each call gives a fresh, empty store. */
const BACKENDS: { name: string; open: () => Promise<MemoryStore> }[] = [
  { name: 'in-memory store', open: async () => new InMemoryMemoryStore() },
  { name: 'file store', open: () => fileStore(newDir()) },
];

function service(store: MemoryStore, extra: Partial<ConstructorParameters<typeof MemoryService>[0]> = {}): MemoryService {
  return new MemoryService({ store, limits: LIMITS, ...extra });
}

async function refusal(promise: Promise<unknown>): Promise<MemoryRefusedError> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof MemoryRefusedError) return err;
    throw err;
  }
  assert.fail('expected a MemoryRefusedError');
}

const textOf = (c: Chunk | undefined) => (c?.content.kind === 'text' ? c.content.text : undefined);

for (const backend of BACKENDS) {
  describe(`MemoryService over the ${backend.name}`, () => {
    test('createThread fills chunk defaults, counts tokens with the tokenizer, gives messages ids that findMessage resolves', async () => {
      const memory = service(await backend.open());
      const inputs: ChunkInput[] = [
        { type: 'system', content: text('You are a careful travel assistant.') },
        { type: 'user', content: text('Find me a train from Lyon to Paris on Friday morning.') },
        { type: 'response', content: text('The 07:04 TGV arrives at 09:00; shall I book it?') },
        { type: 'thinking', content: { kind: 'json', data: { candidates: ['07:04', '08:04'], preferred: '07:04' } } },
        { type: 'user', content: text('Yes please.'), messageId: 'msg_custom01', priority: 75 },
      ];
      const created = await memory.createThread({ userId: 'u1', chunks: inputs, meta: by('user', 'new conversation') });
      assert.match(created.thread.id, /^thread_[0-9a-z]{16}$/);

      const view = await memory.view(created.thread.id);
      assert.equal(view.thread.userId, 'u1');
      assert.deepEqual(view.thread.limits, LIMITS);
      assert.equal(view.thread.forkedFrom, null);
      assert.equal(view.state.seq, 0);
      assert.equal(view.state.parentStateId, null);
      assert.equal(view.chunks.length, 5);
      assert.deepEqual(
        view.state.chunkIds,
        view.chunks.map((c) => c.id),
      );

      const [system, user, response, thinking, custom] = view.chunks as [Chunk, Chunk, Chunk, Chunk, Chunk];
      assert.deepEqual([system.priority, system.retention, system.agentModifiable], [100, 'CRITICAL', false]);
      assert.deepEqual([user.priority, user.retention, user.agentModifiable], [60, 'BATCH_COMPRESSIBLE', true]);
      assert.deepEqual([thinking.priority, thinking.retention], [30, 'BATCH_COMPRESSIBLE']);
      assert.equal(custom.priority, 75, 'an explicit priority wins over the type default');
      for (const c of view.chunks) {
        assert.ok(c.tokens > 0, `${c.type} chunk has a token count`);
        assert.equal(c.tokens, countContentTokens(c.content));
        assert.equal(c.parentChunkId, null);
      }
      // A real tokenizer, not a word count: "07:04" alone is several tokens.
      assert.notEqual(response.tokens, 'The 07:04 TGV arrives at 09:00; shall I book it?'.split(/\s+/).length);
      assert.equal(
        view.state.tokens,
        view.chunks.reduce((n, c) => n + c.tokens, 0),
      );

      assert.match(user.messageId ?? '', /^msg_[0-9a-z]{10}$/);
      assert.match(response.messageId ?? '', /^msg_[0-9a-z]{10}$/);
      assert.equal(custom.messageId, 'msg_custom01');
      assert.equal(system.messageId, null);
      assert.equal(thinking.messageId, null);

      const [record, ...more] = await memory.audit(created.thread.id);
      assert.equal(more.length, 0);
      assert.equal(record?.kind, 'create');
      assert.equal(record?.origin, 'user');
      assert.deepEqual(record?.newChunkIds, view.state.chunkIds);
      for (const c of view.chunks) assert.equal(c.provenance.operationId, record?.id, 'chunks name the operation that made them');

      const mine = { threadIds: [created.thread.id], userId: created.thread.userId };
      assert.deepEqual(await memory.findMessage(user.messageId as string, mine), user);
      assert.deepEqual(await memory.findMessage(response.messageId as string, mine), response);
      assert.deepEqual(await memory.findMessage('msg_custom01', mine), custom);
      assert.equal(await memory.findMessage('msg_0000000000', mine), undefined);

      // An edited message keeps its id, and retrieval by id gives the edited text.
      await memory.apply(created.thread.id, { op: 'update', chunkId: user.id, patch: { content: text('Find me a train from Lyon to Paris on Saturday.') } }, by('user'));
      const edited = await memory.findMessage(user.messageId as string, mine);
      assert.equal(textOf(edited), 'Find me a train from Lyon to Paris on Saturday.');
      assert.equal(edited?.parentChunkId, user.id);

      await assert.rejects(memory.view('thread_doesnotexist0000'), ThreadNotFoundError);
    });

    test("findMessage looks only in the caller's own threads as their heads are: never a message deleted, rolled back or cleared, nor another's", async () => {
      const memory = service(await backend.open());
      const say = (type: 'user' | 'response', t: string): ChunkInput => ({ type, content: text(t) });
      const { thread, state: s0 } = await memory.createThread({ userId: 'ann', chunks: [say('user', 'first')], meta: by('system') });
      const other = await memory.createThread({ userId: 'bob', chunks: [say('user', 'bob speaks')], meta: by('system') });
      const stranger = await memory.createThread({ userId: 'ann', chunks: [say('user', 'another conversation of ann')], meta: by('system') });
      const mine = { threadIds: [thread.id], userId: 'ann' };
      const idOf = async (threadId: string, t: string) => (await memory.view(threadId)).chunks.find((c) => textOf(c) === t)?.messageId as string;

      const first = await idOf(thread.id, 'first');
      assert.equal(textOf(await memory.findMessage(first, mine)), 'first');
      assert.equal(
        await memory.findMessage(await idOf(other.thread.id, 'bob speaks'), { threadIds: [thread.id, other.thread.id], userId: 'ann' }),
        undefined,
        "another user's thread is not looked in",
      );
      assert.equal(await memory.findMessage(await idOf(stranger.thread.id, 'another conversation of ann'), mine), undefined, "a thread that is not the caller's is not looked in");

      // Compression folds turns into one chunk: they stay retrievable (batch_replace, then a replace of that).
      await memory.apply(thread.id, { op: 'add', chunks: [say('response', 'second'), say('user', 'third')] }, by('system'));
      const [second, third] = [await idOf(thread.id, 'second'), await idOf(thread.id, 'third')];
      const view = await memory.view(thread.id);
      await memory.apply(thread.id, { op: 'batch_replace', chunkIds: view.chunks.slice(0, 2).map((c) => c.id), chunk: { type: 'compacted', content: text('two turns') } }, by('system'));
      const compacted = (await memory.view(thread.id)).chunks[0] as Chunk;
      await memory.apply(thread.id, { op: 'replace', chunkId: compacted.id, chunk: { type: 'compacted', content: text('shorter') } }, by('system'));
      assert.equal(textOf(await memory.findMessage(first, mine)), 'first', 'folded twice and still found');
      assert.equal(textOf(await memory.findMessage(second, mine)), 'second');

      // Deleted (as /clear does): gone.
      const thirdChunk = (await memory.view(thread.id)).chunks.find((c) => c.messageId === third) as Chunk;
      await memory.apply(thread.id, { op: 'delete', chunkIds: [thirdChunk.id] }, by('user'));
      assert.equal(await memory.findMessage(third, mine), undefined, 'a deleted message is not found');
      // Rolled back to before the later turns: only what that state holds.
      await memory.rollback(thread.id, s0.id, by('user'));
      assert.equal(textOf(await memory.findMessage(first, mine)), 'first');
      assert.equal(await memory.findMessage(second, mine), undefined, 'a message rolled back is not found');
    });

    test('apply with an operationId is idempotent: a retry returns the first result and writes nothing', async () => {
      const memory = service(await backend.open());
      const { thread } = await memory.createThread({ userId: 'u1', chunks: [{ type: 'system', content: text('base') }], meta: by('system') });
      const add: Operation = { op: 'add', chunks: [{ type: 'thinking', content: text('The user wants the cheapest option.') }] };
      const key = operationIdFor(`${thread.id}/run-1/step-1/think`);

      const first = await memory.apply(thread.id, add, by('agent'), { operationId: key });
      assert.equal(first.record.id, key);
      const auditAfterFirst = await memory.audit(thread.id);
      const statesAfterFirst = await memory.states(thread.id);

      const second = await memory.apply(thread.id, add, by('agent'), { operationId: key });
      assert.deepEqual(second.record, first.record);
      assert.deepEqual(second.state, first.state);
      assert.deepEqual(await memory.audit(thread.id), auditAfterFirst, 'the retry adds no audit record');
      assert.deepEqual(await memory.states(thread.id), statesAfterFirst, 'the retry adds no state');
      const view = await memory.view(thread.id);
      assert.equal(view.state.id, first.state.id);
      assert.equal(view.chunks.filter((c) => textOf(c) === 'The user wants the cheapest option.').length, 1, 'the chunk is there once');

      // A retry that comes after other writes (an activity retried later) is still a no-op.
      await memory.apply(thread.id, { op: 'add', chunks: [{ type: 'user', content: text('and a window seat') }] }, by('user'));
      const auditBeforeLateRetry = await memory.audit(thread.id);
      const late = await memory.apply(thread.id, add, by('agent'), { operationId: key });
      assert.deepEqual(late.record, first.record);
      assert.deepEqual(late.state, first.state);
      assert.deepEqual(await memory.audit(thread.id), auditBeforeLateRetry);
      assert.equal((await memory.view(thread.id)).chunks.filter((c) => textOf(c) === 'The user wants the cheapest option.').length, 1);

      // Retrying a delete whose chunk is already gone: the reducer would refuse (not found), but the
      // operation already happened, so the retry answers with its first result.
      const target = view.chunks[1] as Chunk;
      const deleteKey = operationIdFor(`${thread.id}/run-1/step-2/forget`);
      const deleted = await memory.apply(thread.id, { op: 'delete', chunkIds: [target.id] }, by('agent'), { operationId: deleteKey });
      const auditAfterDelete = await memory.audit(thread.id);
      const retried = await memory.apply(thread.id, { op: 'delete', chunkIds: [target.id] }, by('agent'), { operationId: deleteKey });
      assert.deepEqual(retried.record, deleted.record);
      assert.deepEqual(retried.state, deleted.state);
      assert.deepEqual(await memory.audit(thread.id), auditAfterDelete);

      // The same delete under a new id is a new operation, and is refused: the chunk is gone.
      const err = await refusal(memory.apply(thread.id, { op: 'delete', chunkIds: [target.id] }, by('agent'), { operationId: operationIdFor('another key') }));
      assert.equal(err.code, 'not_found');
      assert.deepEqual(await memory.audit(thread.id), auditAfterDelete);
    });

    test('rollback, fork, checkpoint and diff', async () => {
      const store = await backend.open();
      const memory = service(store);
      const { thread, state: s0 } = await memory.createThread({
        userId: 'u7',
        chunks: ['a', 'b', 'c'].map((t) => ({ type: 'environment' as const, content: text(`fact ${t}`) })),
        meta: by('user'),
      });
      const [a, b, c] = s0.chunkIds as [string, string, string];
      const s1 = (await memory.apply(thread.id, { op: 'add', chunks: [{ type: 'thinking', content: text('fact d') }] }, by('agent'))).state;
      const d = s1.chunkIds[3] as string;
      const s2 = (await memory.apply(thread.id, { op: 'delete', chunkIds: [b] }, by('user'))).state;
      const s3 = (await memory.apply(thread.id, { op: 'reorder', chunkIds: [c, a, d] }, by('user'))).state;
      assert.deepEqual(s3.chunkIds, [c, a, d]);

      // diff
      const d01 = await memory.diff(thread.id, s0.id, s1.id);
      assert.deepEqual(
        d01.added.map((x) => x.id),
        [d],
      );
      assert.deepEqual(d01.removed, []);
      assert.equal(d01.reordered, false);
      const d03 = await memory.diff(thread.id, s0.id, s3.id);
      assert.deepEqual(
        d03.added.map((x) => textOf(x)),
        ['fact d'],
      );
      assert.deepEqual(
        d03.removed.map((x) => x.id),
        [b],
      );
      assert.equal(d03.reordered, true, 'a and c swapped');
      const d23 = await memory.diff(thread.id, s2.id, s3.id);
      assert.deepEqual([d23.added, d23.removed, d23.reordered], [[], [], true]);

      // checkpoint: names the head, changes nothing
      const cp = await memory.checkpoint(thread.id, 'before-rollback', by('user'));
      assert.equal(cp.kind, 'checkpoint');
      assert.deepEqual(await store.listCheckpoints(thread.id), [{ name: 'before-rollback', stateId: s3.id, at: cp.at }]);
      assert.equal((await memory.view(thread.id)).state.id, s3.id);

      // rollback: a new head equal to s0; history intact
      const rolled = await memory.rollback(thread.id, s0.id, by('user', 'undo'));
      assert.deepEqual(rolled.state.chunkIds, s0.chunkIds);
      assert.equal(rolled.state.seq, s3.seq + 1);
      assert.equal(rolled.state.parentStateId, s3.id);
      assert.notEqual(rolled.state.id, s0.id);
      assert.equal(rolled.record.kind, 'rollback');
      const head = await memory.view(thread.id);
      assert.equal(head.state.id, rolled.state.id);
      assert.deepEqual(head.chunks.map(textOf), ['fact a', 'fact b', 'fact c']);
      assert.equal(head.state.tokens, s0.tokens);
      const earlier = await memory.stateView(thread.id, s3.id);
      assert.deepEqual(earlier.chunks.map(textOf), ['fact c', 'fact a', 'fact d'], 'earlier states stay readable');
      assert.deepEqual(
        (await memory.states(thread.id)).map((s) => s.seq),
        [0, 1, 2, 3, 4],
      );
      assert.equal((await refusal(memory.rollback(thread.id, 'state_nosuchstate00000', by('user')))).code, 'not_found');
      assert.equal((await refusal(memory.apply(thread.id, { op: 'rollback', toStateId: s1.id }, by('agent')))).code, 'forbidden', 'the agent may not roll back');

      // fork from s2: a new thread with the same chunks, recorded in both threads
      const forked = await memory.fork(thread.id, s2.id, by('user', 'try another way'));
      assert.notEqual(forked.thread.id, thread.id);
      assert.deepEqual(forked.thread.forkedFrom, { threadId: thread.id, stateId: s2.id });
      assert.equal(forked.thread.userId, 'u7');
      assert.deepEqual(forked.state.chunkIds, s2.chunkIds);
      assert.deepEqual(forked.chunks.map(textOf), ['fact a', 'fact c', 'fact d']);
      const forkView = await memory.view(forked.thread.id);
      assert.deepEqual(forkView.state.chunkIds, s2.chunkIds);
      assert.equal(forkView.state.tokens, s2.tokens);
      const sourceFork = (await memory.audit(thread.id)).filter((r) => r.kind === 'fork');
      const targetFork = (await memory.audit(forked.thread.id)).filter((r) => r.kind === 'fork');
      assert.equal(sourceFork.length, 1);
      assert.equal(targetFork.length, 1);
      assert.equal(sourceFork[0]?.details?.toThreadId, forked.thread.id);
      assert.deepEqual(targetFork[0]?.details, { fromThreadId: thread.id, fromStateId: s2.id });

      // The fork evolves on its own: its changes do not touch the source.
      await memory.apply(forked.thread.id, { op: 'delete', chunkIds: [a] }, by('user'));
      assert.deepEqual((await memory.view(forked.thread.id)).chunks.map(textOf), ['fact c', 'fact d']);
      assert.deepEqual((await memory.view(thread.id)).chunks.map(textOf), ['fact a', 'fact b', 'fact c']);
      await assert.rejects(memory.stateView(forked.thread.id, s3.id), StateNotFoundError, 'a state of another thread is not this thread’s');

      if (store instanceof FileMemoryStore) {
        // After a restart (a fresh store on the same directory) both threads read the same.
        const reopened = service(await fileStore(store.root));
        for (const id of [thread.id, forked.thread.id]) assert.deepEqual(await reopened.view(id), await memory.view(id));
        assert.deepEqual(await reopened.stateView(thread.id, s3.id), earlier);
        assert.deepEqual(await reopened.store.listCheckpoints(thread.id), await store.listCheckpoints(thread.id));
      }
    });

    test('endSession removes EPHEMERAL chunks only, as the system', async () => {
      const memory = service(await backend.open());
      const { thread } = await memory.createThread({
        userId: 'u1',
        chunks: [
          { type: 'system', content: text('You are helpful.') },
          { type: 'environment', content: text('Session cursor at page 3.'), retention: 'EPHEMERAL', agentModifiable: false },
          { type: 'user', content: text('Hello') },
          { type: 'thinking', content: text('scratch for this session'), retention: 'EPHEMERAL' },
          { type: 'environment', content: text('Old weather'), retention: 'DISPOSABLE' },
        ],
        meta: by('user'),
      });
      await memory.endSession(thread.id, { reason: 'session ended', trigger: 'session s1 closed' });
      const view = await memory.view(thread.id);
      assert.deepEqual(view.chunks.map(textOf), ['You are helpful.', 'Hello', 'Old weather']);
      assert.equal(
        view.state.tokens,
        view.chunks.reduce((n, c) => n + c.tokens, 0),
      );
      const last = (await memory.audit(thread.id)).at(-1);
      assert.equal(last?.kind, 'delete');
      assert.equal(last?.origin, 'system');
      assert.equal(last?.trigger, 'session s1 closed');

      const records = (await memory.audit(thread.id)).length;
      await memory.endSession(thread.id, { reason: 'session ended', trigger: 'again' });
      assert.equal((await memory.audit(thread.id)).length, records, 'nothing ephemeral left: nothing recorded');
    });

    test('ensureThread called twice at once for one id creates one thread', async () => {
      const memory = service(await backend.open());
      const input = { threadId: 'thread_session_s42', userId: 'u1', chunks: [{ type: 'system' as const, content: text('hi') }], meta: by('system') };
      const [x, y] = await Promise.all([memory.ensureThread(input), memory.ensureThread(input)]);
      assert.deepEqual(x, y);
      assert.equal(x.id, 'thread_session_s42');
      const audit = await memory.audit(x.id);
      assert.deepEqual(
        audit.map((r) => r.kind),
        ['create'],
      );
      assert.equal((await memory.states(x.id)).length, 1);
      assert.deepEqual(await memory.ensureThread(input), x, 'later calls return the existing thread');
    });
  });
}

test('two services over two file stores on one directory: 2×15 concurrent adds, no lost update', async () => {
  const dir = newDir();
  const one = service(await fileStore(dir));
  const two = service(await fileStore(dir));
  const { thread } = await one.createThread({ userId: 'u1', chunks: [], meta: by('system') });
  const add = (memory: MemoryService, label: string) => memory.apply(thread.id, { op: 'add', chunks: [{ type: 'action', content: text(label) }] }, by('agent', label));
  const labels = (who: string) => Array.from({ length: 15 }, (_, i) => `${who}-${i}`);
  const results = await Promise.all([...labels('one').map((l) => add(one, l)), ...labels('two').map((l) => add(two, l))]);
  assert.equal(new Set(results.map((r) => r.state.id)).size, 30);

  for (const memory of [one, two]) {
    const audit = await memory.audit(thread.id);
    assert.equal(audit.length, 31);
    assert.deepEqual(
      audit.map((r) => r.seq),
      Array.from({ length: 31 }, (_, i) => i + 1),
    );
    const states = await memory.states(thread.id);
    assert.equal(states.length, 31);
    const head = await memory.view(thread.id);
    assert.equal(head.state.seq, 30);
    assert.deepEqual(head.chunks.map(textOf).sort(), [...labels('one'), ...labels('two')].sort(), 'every add is in the head');
    // One linear chain from the head back to the first state.
    const byId = new Map(states.map((s) => [s.stateId, s]));
    let steps = 0;
    for (let at: string | null = head.state.id; at !== null; at = byId.get(at)?.parentStateId ?? null) steps++;
    assert.equal(steps, 31);
  }
});

test('two processes (file stores on one directory): ensureThread at once makes one thread; a retried operation is not written twice', async () => {
  const dir = newDir();
  const worker = service(await fileStore(dir));
  const api = service(await fileStore(dir));
  const input = { threadId: 'thread_run_r1', userId: 'u1', chunks: [{ type: 'workflow' as const, content: text('Goal of run r1') }], meta: by('system') };
  const [x, y] = await Promise.all([worker.ensureThread(input), api.ensureThread(input)]);
  assert.deepEqual(x, y);
  assert.deepEqual(
    (await api.audit(x.id)).map((r) => r.kind),
    ['create'],
  );

  // An activity's write, retried on another worker after the first one committed it.
  const key = operationIdFor('run r1/step s1/attempt');
  const add: Operation = { op: 'add', chunks: [{ type: 'action_response', content: text('{"value": 84}') }] };
  const first = await worker.apply(x.id, add, by('agent'), { operationId: key });
  const again = await api.apply(x.id, add, by('agent'), { operationId: key });
  assert.deepEqual(again, first);
  assert.equal((await api.audit(x.id)).length, 2);
  assert.equal((await worker.view(x.id)).chunks.length, 2);
});

test('two services over one in-memory store: 2×15 concurrent adds all land', async () => {
  // Optimistic retries alone are not enough here: in one process every loser re-reads the same head
  // in the same tick, so each round commits exactly one writer.
  const store = new InMemoryMemoryStore();
  const one = service(store);
  const two = service(store);
  const { thread } = await one.createThread({ userId: 'u1', chunks: [], meta: by('system') });
  const add = (memory: MemoryService, label: string) => memory.apply(thread.id, { op: 'add', chunks: [{ type: 'action', content: text(label) }] }, by('agent'));
  const labels = Array.from({ length: 30 }, (_, i) => `write-${i}`);
  const results = await Promise.allSettled(labels.map((l, i) => add(i % 2 ? one : two, l)));
  const failed = results.flatMap((r) => (r.status === 'rejected' ? [String((r.reason as Error).name)] : []));
  assert.deepEqual(failed, [], `${failed.length} of 30 concurrent writes failed`);
  const head = await one.view(thread.id);
  assert.deepEqual(head.chunks.map(textOf).sort(), [...labels].sort());
  assert.equal((await one.audit(thread.id)).length, 31);
});

test('refusals: the agent may not delete a CRITICAL chunk; an observer veto; nothing is written', async () => {
  const noDeletes: MemoryObserver = {
    name: 'no-deletes-by-agent',
    observe: (op, meta) => (op.op === 'delete' && meta.origin === 'agent' ? { action: 'veto', reason: 'agents may not delete here' } : { action: 'allow' }),
  };
  const memory = service(new InMemoryMemoryStore());
  const { thread, chunks } = await memory.createThread({
    userId: 'u1',
    chunks: [
      { type: 'delegation', content: text('Book a table for four in Lyon.'), retention: 'CRITICAL' },
      { type: 'thinking', content: text('maybe Italian') },
    ],
    meta: by('user'),
  });
  const critical = chunks[0] as Chunk;
  const before = await memory.view(thread.id);

  const forbidden = await refusal(memory.apply(thread.id, { op: 'delete', chunkIds: [critical.id] }, by('agent')));
  assert.equal(forbidden.code, 'forbidden');
  assert.match(forbidden.message, /CRITICAL/);
  assert.equal((await refusal(memory.apply(thread.id, { op: 'update', chunkId: critical.id, patch: { priority: 1 } }, by('user')))).code, 'forbidden');
  assert.deepEqual(await memory.view(thread.id), before);
  assert.equal((await memory.audit(thread.id)).length, 1);

  const vetoing = service(memory.store, { observers: [noDeletes] });
  const vetoed = await refusal(vetoing.apply(thread.id, { op: 'delete', chunkIds: [chunks[1]?.id as string] }, by('agent')));
  assert.equal(vetoed.code, 'vetoed');
  assert.match(vetoed.message, /no-deletes-by-agent: agents may not delete here/);
  assert.deepEqual(await memory.view(thread.id), before);
  assert.equal((await memory.audit(thread.id)).length, 1);
  // The same delete by a person passes that observer.
  await vetoing.apply(thread.id, { op: 'delete', chunkIds: [chunks[1]?.id as string] }, by('user'));
  assert.deepEqual(
    (await memory.view(thread.id)).chunks.map((c) => c.id),
    [critical.id],
  );
});

test('redactSecrets: an OpenAI key never enters memory, and the audit says why the operation changed', async () => {
  const memory = service(new InMemoryMemoryStore(), { observers: [redactSecrets] });
  const secret = 'sk-proj-4bQz9XvT2mLk7RwP1sYd8HnC3fJe6GuA';
  const { thread } = await memory.createThread({ userId: 'u1', chunks: [{ type: 'system', content: text('hi') }], meta: by('system') });
  const { record, state } = await memory.apply(thread.id, { op: 'add', chunks: [{ type: 'user', content: text(`my key is ${secret}, use it`) }] }, by('user'));
  const view = await memory.view(thread.id);
  const added = view.chunks.find((c) => c.id === state.chunkIds.at(-1));
  assert.equal(textOf(added), 'my key is [REDACTED:openai_key], use it');
  assert.equal(added?.tokens, countTextTokens('my key is [REDACTED:openai_key], use it'));
  assert.deepEqual(record.details, { observerNotes: ['redact-secrets: redacted 1 secret(s)'] });
  const audited = (await memory.audit(thread.id)).at(-1);
  assert.deepEqual(audited?.details, { observerNotes: ['redact-secrets: redacted 1 secret(s)'] });
  assert.doesNotMatch(JSON.stringify(await memory.audit(thread.id)), /sk-proj-/, 'the audit keeps the operation as applied, without the key');

  // At creation too.
  const created = await memory.createThread({ userId: 'u1', chunks: [{ type: 'environment', content: text(`OPENAI_API_KEY=${secret}`) }], meta: by('system') });
  assert.doesNotMatch(JSON.stringify(await memory.view(created.thread.id)), /sk-proj-/);
});

test('context(budget) stays within min(budget, hard limit) and keeps the high-priority chunks', async () => {
  const memory = service(new InMemoryMemoryStore());
  const filler = (i: number) => `Step ${i}: I compared fares for the Lyon–Paris route and noted that the ${7 + (i % 12)}:04 train costs ${30 + i} EUR in second class.`;
  const { thread } = await memory.createThread({
    userId: 'u1',
    limits: { soft: 300, hard: 600 },
    chunks: [
      { type: 'system', content: text('You are a travel assistant.') },
      { type: 'delegation', content: text('Delegated task: book the cheapest train from Lyon to Paris on Friday.'), retention: 'CRITICAL' },
      ...Array.from({ length: 40 }, (_, i): ChunkInput => ({ type: 'thinking', content: text(filler(i)) })),
      { type: 'user', content: text('Please hurry, I need it today.') },
    ],
    meta: by('user'),
  });
  const view = await memory.view(thread.id);
  assert.ok(view.state.tokens > 1000, 'the thread is well over the hard limit');
  const delegation = view.chunks[1] as Chunk;

  for (const budget of [undefined, 50_000, 600, 250, 80]) {
    const ctx = await memory.context(thread.id, budget);
    const limit = Math.min(budget ?? 600, 600);
    assert.equal(ctx.tokens, messagesTokens(ctx.messages, countTextTokens), 'tokens are the real count of what is sent');
    assert.ok(ctx.tokens <= limit, `budget ${budget}: ${ctx.tokens} tokens ≤ ${limit}`);
    assert.ok(ctx.includedChunkIds.includes(delegation.id), `budget ${budget}: the CRITICAL delegation chunk is kept`);
    assert.equal(ctx.includedChunkIds.length + ctx.droppedChunkIds.length, view.chunks.length);
    assert.match(ctx.messages[0]?.content ?? '', /Delegated task: book the cheapest train/);
  }
  const tight = await memory.context(thread.id, 80);
  assert.ok(tight.droppedChunkIds.length > 30, 'a tight budget drops the low-priority working flow');
  // Everything above the working flow fits in 80 tokens, so only thinking chunks are dropped.
  const byId = new Map(view.chunks.map((c) => [c.id, c]));
  assert.deepEqual(new Set(tight.droppedChunkIds.map((id) => byId.get(id)?.type)), new Set(['thinking']));
  for (const c of view.chunks.filter((x) => x.type !== 'thinking')) assert.ok(tight.includedChunkIds.includes(c.id), `the ${c.type} chunk is kept`);
  assert.deepEqual((await memory.context(thread.id, 0)).messages, []);
});

describe('audit of reads', () => {
  const agent = { origin: 'agent' as const, reason: 'prompt of execution_plan', trigger: 'model call execution_plan', runId: 'run-1', stepId: 's2' };

  test('a rendering for a model, a message by id and a view are recorded with who, what and which state; reads without a reader are not', async () => {
    const memory = service(new InMemoryMemoryStore());
    const t = await memory.createThread({
      userId: 'u1',
      chunks: [
        { type: 'user', content: text('What is the capital of France?') },
        { type: 'thinking', content: text('easy') },
      ],
      meta: by('user'),
    });
    const [question] = t.chunks as [Chunk];
    const rendered = await memory.context(t.thread.id, 500, agent);
    assert.ok(rendered.tokens > 0);
    await memory.findMessage(question.messageId as string, { threadIds: [t.thread.id], userId: 'u1' }, { ...agent, reason: 'retrieve_message', stepId: 's3' });
    await memory.view(t.thread.id, { origin: 'user', reason: 'read through the API', trigger: 'GET /v1/threads/x' });
    await memory.view(t.thread.id); // the service's own reads (e.g. before a write) are not audited
    await memory.context(t.thread.id);

    const reads = await memory.auditReads(t.thread.id);
    assert.deepEqual(
      reads.map((r) => [r.kind, r.target, r.origin, r.runId, r.stepId, r.stateId]),
      [
        ['read', 'context', 'agent', 'run-1', 's2', t.state.id],
        ['read', 'message', 'agent', 'run-1', 's3', t.state.id],
        ['read', 'thread', 'user', undefined, undefined, t.state.id],
      ],
    );
    assert.deepEqual(reads[0]?.details, { budget: 500, tokens: rendered.tokens, chunks: 2, dropped: 0 });
    assert.deepEqual(reads[1]?.details, { messageId: question.messageId, chunkId: question.id });
    assert.ok(reads.every((r) => r.id.startsWith('read_') && r.threadId === t.thread.id));
    assert.deepEqual(await memory.auditReads(t.thread.id, { target: 'message' }), [reads[1]]);
    // Reads are not operations: the writes' trail is unchanged.
    assert.deepEqual(
      (await memory.audit(t.thread.id)).map((r) => r.kind),
      ['create'],
    );
  });

  test('recording never blocks or fails a rendering: a failing store loses no read, and the records follow once it is back', async () => {
    class FlakyStore extends InMemoryMemoryStore {
      failing = true;
      appends = 0;
      override async appendReads(...args: Parameters<InMemoryMemoryStore['appendReads']>): Promise<void> {
        this.appends++;
        if (this.failing) throw new Error('store unavailable');
        return super.appendReads(...args);
      }
    }
    const store = new FlakyStore();
    const errors: string[] = [];
    const memory = service(store, { readAudit: { flushAfterMs: 1, onError: (err) => errors.push(err.message) } });
    const t = await memory.createThread({ userId: 'u1', chunks: [{ type: 'thinking', content: text('a thought') }], meta: by('user') });
    for (let i = 0; i < 3; i++) assert.equal((await memory.context(t.thread.id, 100, agent)).messages.length, 1);
    assert.equal(store.appends, 0, 'nothing is written on the rendering path');
    await memory.flushReads();
    assert.ok(store.appends > 0 && errors.length > 0 && /could not record 3 read\(s\): store unavailable/.test(errors[0] ?? ''), errors.join('; '));
    store.failing = false;
    const reads = await memory.auditReads(t.thread.id);
    assert.equal(reads.length, 3, 'the failed batch was written with the next one');
    assert.equal(new Set(reads.map((r) => r.id)).size, 3);
  });

  test('with auditReads off nothing is recorded', async () => {
    const memory = service(new InMemoryMemoryStore(), { auditReads: false });
    const t = await memory.createThread({ userId: 'u1', chunks: [{ type: 'thinking', content: text('a thought') }], meta: by('user') });
    await memory.context(t.thread.id, 100, agent);
    assert.deepEqual(await memory.auditReads(t.thread.id), []);
  });
});

describe('compactIfNeeded', () => {
  const stub = new StubModelServer();
  let provider: ModelProvider;
  before(async () => {
    await stub.start();
    provider = stubProvider(stub.url);
  });
  after(() => stub.stop());

  const limits: TokenLimits = { soft: 300, hard: 2000 };
  const delegationText = 'Delegated by the user: book a table for four at an Italian restaurant in Lyon on Friday at 8 pm; budget 60 EUR per person.';
  const streets = ['Mercière', 'Saint-Jean', 'Paul Bert', 'Garibaldi', 'Victor Hugo', 'de la Ré', 'Juiverie', 'Neuve'];
  const listText = streets
    .map((s, i) => `Restaurant ${i + 1}: Trattoria number ${i + 1} on Rue ${s}, open until 23:00, about ${40 + i * 5} EUR per person, rated ${(3.5 + i * 0.1).toFixed(1)}.`)
    .join('\n');
  const stepText = (i: number) => `Step ${i}: called Trattoria ${i}; table ${i % 2 ? 'free' : 'taken'}.`;

  /**
   * delegation (CRITICAL) · weather (DISPOSABLE) · restaurant list (COMPRESSIBLE) ·
   * steps 1–6 · traffic (DISPOSABLE) · steps 7–20 (BATCH_COMPRESSIBLE).
   */
  async function compactionThread(memory: MemoryService) {
    const steps = (from: number, to: number) =>
      Array.from({ length: to - from + 1 }, (_, k): ChunkInput => ({ type: from + k === 1 ? 'user' : k % 2 ? 'action_response' : 'action', content: text(stepText(from + k)) }));
    const created = await memory.createThread({
      userId: 'u1',
      limits,
      chunks: [
        { type: 'delegation', content: text(delegationText), retention: 'CRITICAL' },
        { type: 'environment', content: text('Weather feed for Lyon: cloudy, 14 degrees, light wind from the north-west, humidity 71 percent.'), retention: 'DISPOSABLE' },
        { type: 'environment', content: text(listText) },
        ...steps(1, 6),
        { type: 'environment', content: text('Traffic report: the A6 is congested near Villefranche, 25 minutes of delay northbound.'), retention: 'DISPOSABLE', priority: 10 },
        ...steps(7, 20),
      ],
      meta: by('user'),
    });
    const chunks = created.chunks;
    return {
      thread: created.thread,
      before: chunks,
      critical: chunks[0] as Chunk,
      disposable: [chunks[1], chunks[9]] as Chunk[],
      compressible: chunks[2] as Chunk,
      batch: chunks.filter((c) => c.retention === 'BATCH_COMPRESSIBLE'),
    };
  }

  test('drops DISPOSABLE, summarizes COMPRESSIBLE and the older working flow with memory_summary model calls, never touches CRITICAL', async () => {
    const summarizer: Summarizer = (texts, maxTokens) => summarize(provider, texts, { maxTokens, attempts: 2 });
    const memory = service(await fileStore(newDir()), { summarizer });
    const t = await compactionThread(memory);
    assert.equal(t.compressible.retention, 'COMPRESSIBLE');
    assert.equal(t.batch.length, 20);
    assert.ok(t.before.reduce((n, c) => n + c.tokens, 0) > limits.soft);
    const plan = planCompaction(t.before, limits);

    const listSummary = 'Eight trattorias in Lyon, 40–75 EUR per person, rated 3.5–4.2, all open until 23:00.';
    const flowSummary = 'Called trattorias 1–16: odd-numbered ones have a free table, even-numbered ones are taken.';
    stub.script('', {
      memory_summary: [
        // Too long on purpose: summarize sends it back to be shortened (a second real call).
        { summary: `${listText}\n${listText}` },
        { summary: listSummary },
        { summary: flowSummary },
      ],
    });

    const applied = await memory.compactIfNeeded(t.thread.id);
    assert.equal(applied, 3, 'drop, summarize, batch_summarize');
    assert.deepEqual(
      plan.map((s) => s.kind),
      ['drop', 'summarize', 'batch_summarize'],
    );

    const after = await memory.view(t.thread.id);
    const ids = new Set(after.state.chunkIds);
    for (const d of t.disposable) assert.ok(!ids.has(d.id), 'DISPOSABLE chunks are gone');
    assert.deepEqual(after.chunks[0], t.critical, 'the CRITICAL chunk is untouched');
    assert.ok(!ids.has(t.compressible.id));

    const summary = after.chunks[1] as Chunk;
    assert.equal(textOf(summary), listSummary);
    assert.equal(summary.parentChunkId, t.compressible.id, 'the summary links to what it replaced');
    assert.equal(summary.type, 'environment');
    assert.equal(summary.retention, 'COMPRESSIBLE');

    // The person's words (step 1, a user chunk) stay verbatim; the agent's steps after them are summarized.
    assert.deepEqual(after.chunks[2], t.batch[0]);
    assert.equal(t.batch[0]?.type, 'user');
    const compacted = after.chunks[3] as Chunk;
    assert.equal(compacted.type, 'compacted');
    assert.equal(textOf(compacted), flowSummary);
    // The newest KEEP_RECENT_STEPS working-flow chunks (each its own step here) stay verbatim, after the compacted one.
    const kept = t.batch.slice(-4);
    assert.deepEqual(
      after.chunks.slice(4).map((c) => c.id),
      kept.map((c) => c.id),
    );
    assert.equal(after.chunks.length, 8);

    assert.equal(
      after.state.tokens,
      after.chunks.reduce((n, c) => n + c.tokens, 0),
    );
    assert.ok(after.state.tokens <= projectTokens(t.before, plan), 'no summary is longer than the plan allowed');
    assert.ok(after.state.tokens <= limits.soft, `${after.state.tokens} tokens ≤ soft limit ${limits.soft}`);

    const audit = await memory.audit(t.thread.id);
    const steps = audit.slice(1);
    assert.deepEqual(
      steps.map((r) => r.kind),
      ['delete', 'replace', 'batch_replace'],
    );
    for (const r of steps) assert.equal(r.origin, 'system');
    assert.deepEqual(new Set((steps[0]?.operation as Extract<Operation, { op: 'delete' }>).chunkIds), new Set(t.disposable.map((c) => c.id)));
    assert.equal((steps[1]?.operation as Extract<Operation, { op: 'replace' }>).chunkId, t.compressible.id);
    assert.deepEqual(steps[1]?.newChunkIds, [summary.id]);
    assert.deepEqual(
      (steps[2]?.operation as Extract<Operation, { op: 'batch_replace' }>).chunkIds,
      t.batch.slice(1, 16).map((c) => c.id),
    );
    assert.deepEqual(steps[2]?.newChunkIds, [compacted.id]);
    assert.equal(steps[2]?.toStateId, after.state.id);

    // The model calls: memory_summary requests carrying the original texts.
    const calls = stub.requestsFor('', 'memory_summary');
    assert.equal(calls.length, 3);
    assert.deepEqual(stub.misses, []);
    const userText = (r: StubRequest | undefined) => r?.messages.find((m) => m.role === 'user')?.content ?? '';
    for (const r of calls) {
      const format = r.body.response_format as { type: string; json_schema: { name: string } };
      assert.equal(format.type, 'json_schema');
      assert.equal(format.json_schema.name, 'memory_summary');
    }
    assert.ok(userText(calls[0]).includes(listText));
    assert.match(userText(calls[0]), new RegExp(`at most ${projectedSummaryTokens(t.compressible.tokens)} tokens`));
    assert.match(calls[1]?.messages.at(-1)?.content ?? '', /more than the \d+ allowed; shorten it/, 'the over-long summary was sent back');
    for (let i = 2; i <= 16; i++) assert.ok(userText(calls[2]).includes(stepText(i)), `batch summary request holds step ${i}`);
    // The user's message is not summarized: it stays in the head, verbatim, under its id.
    const message = t.batch[0] as Chunk;
    assert.equal(message.type, 'user');
    assert.ok(!userText(calls[2]).includes(stepText(1)));
    assert.deepEqual(await memory.findMessage(message.messageId as string, { threadIds: [t.thread.id], userId: t.thread.userId }), message);
    assert.ok(!userText(calls[2]).includes(stepText(17)), 'the newest steps are not summarized');

    // Under the soft limit now: nothing more to do, no model call.
    assert.equal(await memory.compactIfNeeded(t.thread.id), 0);
    assert.equal(stub.requests.length, 3);
  });

  test('without a summarizer only DISPOSABLE chunks are dropped', async () => {
    const memory = service(new InMemoryMemoryStore());
    const t = await compactionThread(memory);
    const requests = stub.requests.length;
    assert.equal(await memory.compactIfNeeded(t.thread.id), 1);
    const after = await memory.view(t.thread.id);
    assert.deepEqual(
      after.chunks.map((c) => c.id),
      t.before.filter((c) => c.retention !== 'DISPOSABLE').map((c) => c.id),
    );
    const last = (await memory.audit(t.thread.id)).at(-1);
    assert.equal(last?.kind, 'delete');
    assert.equal(last?.origin, 'system');
    assert.equal(stub.requests.length, requests, 'no model call');
  });

  test('two compactions of one thread at once (a retried step beside its timed-out attempt) both finish: the later one plans again', async () => {
    const memory = service(new InMemoryMemoryStore());
    const report = (n: number) => Array.from({ length: 60 }, (_, i) => `Row ${i + 1} of report ${n}: order ${1000 + i} shipped to warehouse ${i % 7}.`).join('\n');
    const t = await memory.createThread({
      userId: 'u1',
      limits: { soft: 300, hard: 600 },
      chunks: [
        { type: 'delegation', content: text(delegationText), retention: 'CRITICAL' },
        { type: 'action_response', content: text(report(1)), retention: 'OTHERS' },
        { type: 'action_response', content: text(report(2)), retention: 'OTHERS' },
      ],
      meta: by('user'),
    });
    const results = await Promise.allSettled([memory.compactIfNeeded(t.thread.id), memory.compactIfNeeded(t.thread.id)]);
    assert.deepEqual(
      results.map((r) => r.status),
      ['fulfilled', 'fulfilled'],
      JSON.stringify(results.map((r) => (r.status === 'rejected' ? String(r.reason) : r.value))),
    );
    const after = await memory.view(t.thread.id);
    assert.ok(after.chunks.reduce((n, c) => n + c.tokens, 0) <= 600);
  });

  test('OTHERS chunks are shortened by the built-in compression, without a summarizer and without a model call', async () => {
    const memory = service(new InMemoryMemoryStore());
    const report = Array.from({ length: 60 }, (_, i) => `Row ${i + 1}: order ${1000 + i} shipped to warehouse ${i % 7}.`).join('\n');
    const t = await memory.createThread({
      userId: 'u1',
      limits: { soft: 300, hard: 2000 },
      chunks: [
        { type: 'delegation', content: text(delegationText), retention: 'CRITICAL' },
        { type: 'action_response', content: text(report), retention: 'OTHERS' },
        { type: 'thinking', content: text('checking the shipments') },
      ],
      meta: by('user'),
    });
    const [critical, others, thinking] = t.chunks as [Chunk, Chunk, Chunk];
    assert.ok(others.tokens > 300);
    const requests = stub.requests.length;
    assert.equal(await memory.compactIfNeeded(t.thread.id), 1);
    const after = await memory.view(t.thread.id);
    assert.deepEqual(after.chunks[0], critical, 'the CRITICAL chunk is untouched');
    assert.deepEqual(after.chunks[2], thinking);
    const short = after.chunks[1] as Chunk;
    assert.equal(short.parentChunkId, others.id);
    assert.equal(short.retention, 'OTHERS');
    assert.equal(short.type, 'action_response');
    assert.equal(short.tokens, countTextTokens(textOf(short) ?? ''));
    assert.ok(short.tokens <= projectedSummaryTokens(others.tokens), `${short.tokens} tokens`);
    assert.match(textOf(short) ?? '', /^Row 1: order 1000[\s\S]*tokens cut by built-in compaction[\s\S]*Row 60: order 1059 shipped to warehouse 3\.$/);
    const last = (await memory.audit(t.thread.id)).at(-1);
    assert.equal(last?.kind, 'replace');
    assert.equal(last?.origin, 'system');
    assert.match(last?.reason ?? '', /built-in compression \(OTHERS\)/);
    assert.equal(stub.requests.length, requests, 'no model call');
  });

  test('a thread past its hard limit is brought under it without a summarizer; CRITICAL chunks stay, messages keep their full text', async () => {
    const memory = service(new InMemoryMemoryStore());
    const pasted = (n: number) => Array.from({ length: 120 }, (_, i) => `Paragraph ${n}.${i + 1} of the pasted contract, clause on delivery terms.`).join('\n');
    const hardLimits: TokenLimits = { soft: 1500, hard: 3000 };
    const t = await memory.createThread({
      userId: 'u1',
      limits: hardLimits,
      chunks: [
        { type: 'agent', content: text(pasted(0)), retention: 'CRITICAL' },
        { type: 'user', content: text(pasted(1)) },
        { type: 'response', content: text(pasted(2)) },
        { type: 'environment', content: text(pasted(3)), retention: 'EPHEMERAL' },
      ],
      meta: by('user'),
    });
    const [critical, question] = t.chunks as [Chunk, Chunk];
    assert.ok(t.state.tokens > hardLimits.hard && critical.tokens < hardLimits.hard);
    assert.ok((await memory.compactIfNeeded(t.thread.id)) > 0);
    const after = await memory.view(t.thread.id);
    assert.ok(after.state.tokens <= hardLimits.hard, `${after.state.tokens} ≤ ${hardLimits.hard}`);
    assert.deepEqual(after.chunks[0], critical, 'the CRITICAL chunk is untouched');
    assert.deepEqual(
      after.chunks.map((c) => c.type),
      ['agent', 'user', 'response', 'environment'],
      'trimmed in place, nothing dropped',
    );
    const trimmed = (await memory.audit(t.thread.id)).slice(1);
    assert.ok(trimmed.every((r) => r.kind === 'replace' && r.origin === 'system' && /still past the hard limit/.test(r.reason)));
    // The shortened turn names the message it was made from; that id still gives the whole text.
    const shortened = after.chunks[1] as Chunk;
    assert.notEqual(shortened.id, question.id);
    assert.equal(shortened.provenance.messageId, question.messageId);
    assert.deepEqual(await memory.findMessage(question.messageId as string, { threadIds: [t.thread.id], userId: t.thread.userId }), question);
  });

  test('with the offline demo model the summaries are labelled', async () => {
    const demo = new DemoProvider();
    const memory = service(new InMemoryMemoryStore(), { summarizer: (texts, maxTokens) => summarize(demo, texts, { maxTokens, attempts: 2 }) });
    const t = await compactionThread(memory);
    assert.equal(await memory.compactIfNeeded(t.thread.id), 3);
    const after = await memory.view(t.thread.id);
    const made = after.chunks.filter((c) => !t.before.some((b) => b.id === c.id));
    assert.equal(made.length, 2);
    for (const c of made) assert.match(textOf(c) ?? '', /^\[offline demo summary\] /);
    assert.deepEqual(after.chunks[0], t.critical);
    assert.ok(after.state.tokens <= limits.soft);
  });
});
