/**
 * The conformance suite against the embedded file store, plus what only files
 * have: separate OS processes writing one thread, torn lines left by a crash,
 * and locks left behind or held by another process.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { linkSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { appendFile, link, mkdir, readFile, rm, stat, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import type { MemoryStore } from '../../src/store/memory-store';
import { FileMemoryStore, fileSafe } from '../../src/store/memory/file-store';
import { createMemoryStore } from '../../src/store/memory/select-store';
import { scratchDirs } from '../helpers/scratch-dirs';
import { Fixture, memoryStoreConformance } from './memory-store.conformance';

/** A fresh directory per test. */
const dir = scratchDirs('threadline-file-store-');

async function open(where: string): Promise<FileMemoryStore> {
  const store = new FileMemoryStore(where);
  await store.setup();
  return store;
}

memoryStoreConformance(
  'file',
  async () => {
    const where = dir();
    const store = await open(where);
    const opened: MemoryStore[] = [store];
    return {
      store,
      reopen: async () => {
        const another = await open(where);
        opened.push(another);
        return another;
      },
      storedBytes: () => store.storedBytes(),
      cleanup: async () => {
        for (const s of opened) await s.end();
        await rm(where, { recursive: true, force: true });
      },
    };
  },
  { persistent: true },
);

const CHILD = `
const { FileMemoryStore } = require(process.env.MODULE);
(async () => {
  const store = new FileMemoryStore(process.env.ROOT);
  await store.setup();
  const w = process.env.WRITER;
  for (let i = 0; i < Number(process.env.COMMITS); i++) {
    const now = new Date().toISOString();
    const chunk = { id: 'chunk_' + w + '_' + i, type: 'thinking', content: { kind: 'text', text: 'from ' + w }, priority: 40, retention: 'BATCH_COMPRESSIBLE',
      agentModifiable: true, parentChunkId: null, provenance: {}, messageId: null, tokens: 1, createdAt: now };
    const opId = 'op_' + w + '_' + i;
    for (let attempt = 0; ; attempt++) {
      const thread = await store.getThread(process.env.THREAD);
      const head = await store.getState(thread.headStateId);
      const state = { id: 'state_' + w + '_' + i + '_' + attempt, threadId: thread.id, parentStateId: head.id, seq: head.seq + 1,
        chunkIds: [...head.chunkIds, chunk.id], tokens: head.tokens + 1, operationId: opId, createdAt: now };
      const record = { id: opId, threadId: thread.id, kind: 'add', origin: 'agent', reason: 'child', trigger: 'test', operation: null, details: null,
        fromStateId: head.id, toStateId: state.id, newChunkIds: [chunk.id], at: now };
      try {
        await store.commit({ threadId: thread.id, expectedHeadStateId: head.id, state, chunks: [chunk], record });
        break;
      } catch (err) {
        if (err.name !== 'HeadMovedError') throw err;
      }
    }
  }
  await store.end();
})().catch((err) => { console.error(err); process.exit(1); });
`;

function runChild(env: Record<string, string>): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', '-e', CHILD], { env: { ...process.env, ...env }, stdio: ['ignore', 'inherit', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`writer ${env.WRITER} exited with ${code}: ${stderr}`))));
  });
}

test('file store: three OS processes writing one thread lose no update', async () => {
  const where = dir();
  const store = await open(where);
  const f = new Fixture();
  const created = f.newThread({ chunks: 1 });
  await store.createThread(created);
  const writers = ['a', 'b', 'c'];
  const commits = 15;
  await Promise.all(
    writers.map((w) => runChild({ MODULE: path.resolve(__dirname, '../../src/store/memory/file-store.ts'), ROOT: where, THREAD: created.thread.id, WRITER: w, COMMITS: String(commits) })),
  );

  // This process read the thread before the children wrote; it must see their writes now.
  const records = await store.listOperations(created.thread.id);
  assert.deepEqual(
    records.map((r) => r.seq),
    Array.from({ length: 1 + writers.length * commits }, (_, i) => i + 1),
  );
  const thread = await store.getThread(created.thread.id);
  const head = thread && (await store.getState(thread.headStateId));
  const expected = [...created.state.chunkIds, ...writers.flatMap((w) => Array.from({ length: commits }, (_, i) => `chunk_${w}_${i}`))];
  assert.deepEqual(head?.chunkIds.slice().sort(), expected.sort());
  for (const w of writers) {
    const own: string[] | undefined = head?.chunkIds.filter((id) => id.startsWith(`chunk_${w}_`));
    assert.deepEqual(
      own,
      Array.from({ length: commits }, (_, i) => `chunk_${w}_${i}`),
      `writer ${w}'s chunks keep their order`,
    );
  }
  records.forEach((r, i) => i > 0 && assert.equal(r.fromStateId, records[i - 1]?.toStateId));
  await store.end();
});

test('file store: torn lines from a crashed write are ignored on read and cut off by the next writer', async () => {
  const where = dir();
  const store = await open(where);
  const f = new Fixture();
  const created = f.newThread();
  await store.createThread(created);
  const first = f.change(created.state, [f.chunk('kept')]);
  await store.commit(first);

  // A crash before the record line: a whole chunk and state line without their record, then torn halves.
  const threadDir = path.join(where, 'threads', fileSafe(created.thread.id));
  const orphan = f.change(first.state, [f.chunk('orphan')]);
  await appendFile(path.join(threadDir, 'chunks.jsonl'), `${JSON.stringify(orphan.chunks[0])}\n{"id":"chunk_torn","ty`);
  await appendFile(path.join(threadDir, 'states.jsonl'), `${JSON.stringify({ ...orphan.state, chunkIds: undefined, snapshot: orphan.state.chunkIds, splice: null })}\n{"id":"state_to`);
  await appendFile(path.join(threadDir, 'operations.jsonl'), '{"record":{"id":"op_torn","seq":3');

  const restarted = await open(where);
  assert.equal((await restarted.getThread(created.thread.id))?.headStateId, first.state.id);
  assert.equal((await restarted.listOperations(created.thread.id)).length, 2);
  assert.equal(await restarted.getState(orphan.state.id), undefined, 'a state without its record was never committed');
  assert.deepEqual(
    (await restarted.listStates(created.thread.id)).map((s) => s.stateId),
    [created.state.id, first.state.id],
  );

  const next = f.change(first.state, [f.chunk('after the crash')]);
  assert.equal((await restarted.commit(next)).record.seq, 3);
  for (const file of ['chunks.jsonl', 'states.jsonl', 'operations.jsonl']) {
    const text = await readFile(path.join(threadDir, file), 'utf8');
    assert.ok(text.endsWith('\n'));
    for (const line of text.trimEnd().split('\n')) assert.doesNotThrow(() => JSON.parse(line), `${file}: ${line.slice(0, 60)}`);
  }
  const again = await open(where);
  assert.deepEqual(await again.getState(next.state.id), next.state);
  assert.deepEqual(await again.getChunks(next.state.chunkIds), [...created.chunks, ...first.chunks, ...next.chunks]);
  for (const s of [store, restarted, again]) await s.end();
});

test("file store: a thread's creation cuts a torn line off the thread index and reads nothing else of it", async () => {
  const where = dir();
  const store = await open(where);
  const f = new Fixture();
  const first = f.newThread();
  await store.createThread(first);
  const index = path.join(where, 'index', 'threads.jsonl');
  // A creation that crashed mid-line, and (as a stand-in for the many lines a long-lived store holds) a
  // line no parser takes before it: reading the index whole made each creation cost all the threads before it.
  const whole = await readFile(index, 'utf8');
  await writeFile(index, `not json, never parsed by a creation\n${whole}{"threadId":"thread_torn","us`);
  const second = f.newThread();
  await store.createThread(second);
  const lines = (await readFile(index, 'utf8')).split('\n');
  assert.equal(lines.pop(), '', 'the index ends with a whole line');
  assert.deepEqual(
    lines.slice(1).map((line) => (JSON.parse(line) as { threadId: string }).threadId),
    [first.thread.id, second.thread.id],
    'the torn line is cut off and the new one appended after the last whole line',
  );
  await writeFile(index, lines.slice(1).join('\n') + '\n');
  const restarted = await open(where);
  assert.deepEqual((await restarted.listThreads({})).map((t) => t.id).sort(), [first.thread.id, second.thread.id].sort());
  for (const s of [store, restarted]) await s.end();
});

test('file store: a listing sees the threads another process created since its last one, in time order', async () => {
  const where = dir();
  const [api, worker] = [await open(where), await open(where)];
  const f = new Fixture();
  const at = (minutes: number) => new Date(Date.UTC(2031, 0, 1) + minutes * 60_000).toISOString();
  const first = f.newThread({ createdAt: at(1) });
  await worker.createThread(first);
  assert.deepEqual(
    (await api.listThreads({ userId: f.userId })).map((t) => t.id),
    [first.thread.id],
  );
  // Indexed after the first listing: one newer, one older (a slow creator's line lands late).
  const newer = f.newThread({ createdAt: at(3) });
  const older = f.newThread({ createdAt: at(0) });
  for (const t of [newer, older]) await worker.createThread(t);
  assert.deepEqual(
    (await api.listThreads({ userId: f.userId })).map((t) => t.id),
    [newer.thread.id, first.thread.id, older.thread.id],
  );
  assert.deepEqual(
    (await api.listThreads({ limit: 2 })).map((t) => t.id),
    [newer.thread.id, first.thread.id],
  );
  for (const s of [api, worker]) await s.end();
});

test('file store: a commit waits for a lock held by another process and takes over one left by a dead process', async () => {
  const where = dir();
  const store = await open(where);
  const f = new Fixture();
  const created = f.newThread();
  await store.createThread(created);
  const lockDir = path.join(where, 'threads', fileSafe(created.thread.id), 'lock');
  /** Commits `change` while another process's entry (made just before) holds the lock: it waits, then lands once the entry is gone. */
  const waitsWhileHeld = async (change: ReturnType<Fixture['change']>, message: string): Promise<void> => {
    let done = false;
    const pending = store.commit(change).then((r) => {
      done = true;
      return r;
    });
    await new Promise((r) => setTimeout(r, 400));
    assert.equal(done, false, message);
    await rm(lockDir, { recursive: true });
    assert.equal((await pending).status, 'committed');
  };

  // Held (fresh mtime): the commit waits until it is released.
  await mkdir(lockDir);
  const first = f.change(created.state, [f.chunk()]);
  await waitsWhileHeld(first, 'the commit waits while the lock is held');

  // Left behind (older than the 10 s stale timeout): taken over.
  await mkdir(lockDir);
  const old = new Date(Date.now() - 60_000);
  await utimes(lockDir, old, old);
  const started = Date.now();
  const takenOver = f.change(first.state, [f.chunk()]);
  assert.equal((await store.commit(takenOver)).status, 'committed');
  assert.ok(Date.now() - started < 5_000, 'a stale lock does not block for long');

  // A directory lock, as above, is an older process's; so is a lock file (src/store/file-lock.ts).
  // A held lock file blocks too, and a stale one is taken over.
  const second = f.change(takenOver.state, [f.chunk()]);
  await writeFile(lockDir, '');
  await waitsWhileHeld(second, 'the commit waits while a lock file is held');
  await writeFile(lockDir, '');
  await utimes(lockDir, old, old);
  const third = f.change(second.state, [f.chunk()]);
  assert.equal((await store.commit(third)).status, 'committed');
  await assert.rejects(stat(lockDir), { code: 'ENOENT' }, 'released: no lock entry is left');

  // This version's entry is a hard link to the lock's base file: one held by another process of this
  // version blocks, and one it left behind is taken over.
  const base = `${lockDir}.base`;
  await link(base, lockDir);
  const fourth = f.change(third.state, [f.chunk()]);
  await waitsWhileHeld(fourth, 'the commit waits while a linked lock entry is held');
  await link(base, lockDir);
  await utimes(base, old, old);
  assert.equal((await store.commit(f.change(fourth.state, [f.chunk()]))).status, 'committed');
  await assert.rejects(stat(lockDir), { code: 'ENOENT' }, 'released: no lock entry is left');
  await store.end();
});

test('file store: a thread goes on past the most links one inode takes (its index entries link to a further copy of its id)', async () => {
  const where = dir();
  const store = await open(where);
  const f = new Fixture();
  const created = f.newThread();
  await store.createThread(created);
  const threadDir = path.join(where, 'threads', fileSafe(created.thread.id));
  const idFile = path.join(threadDir, 'id');

  // A long conversation's thread, in links: fill the id file's link count up to what the file system
  // allows (ext4: 65,000), in a directory of its own beside the store.
  const filler = path.join(where, 'filler');
  mkdirSync(filler);
  let limited = false;
  for (let i = 0; i < 70_000 && !limited; i++) {
    try {
      linkSync(idFile, path.join(filler, String(i)));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EMLINK') throw err;
      limited = true;
    }
  }

  let head = created.state;
  const commits = [];
  for (let i = 0; i < 3; i++) {
    const change = f.change(head, [f.chunk(`past the limit ${i}`)]);
    assert.equal((await store.commit(change)).status, 'committed', `commit ${i} past the link limit`);
    commits.push(change);
    head = change.state;
  }
  if (limited) {
    assert.equal(statSync(path.join(threadDir, 'id.1')).nlink, 1 + 2 * commits.length, "each new entry links to the id file's next copy");
    assert.equal(readFileSync(path.join(threadDir, 'id.1'), 'utf8'), created.thread.id);
  } else console.log('# this file system took 70,000 links to one inode: no copy was needed');

  // Another process finds every state and chunk by its bare id, before the limit and after it.
  const again = await open(where);
  assert.deepEqual(await again.getState(created.state.id), created.state);
  assert.deepEqual(await again.getState(head.id), head);
  assert.deepEqual(await again.getChunks(head.chunkIds), [...created.chunks, ...commits.flatMap((c) => c.chunks)]);
  // A restarted writer finds the copy in use and goes on.
  const next = f.change(head, [f.chunk('after a restart')]);
  assert.equal((await again.commit(next)).status, 'committed');
  assert.deepEqual(await (await open(where)).getChunks([next.chunks[0]!.id]), next.chunks);
  for (const s of [store, again]) await s.end();
  await rm(filler, { recursive: true, force: true });
});

test('createMemoryStore picks the backend from configuration, the file store under DATA_DIR/memory by default', async () => {
  const dataDir = dir();
  const store = createMemoryStore({ dataDir });
  assert.equal(store.kind, 'file');
  assert.equal((store as FileMemoryStore).root, path.join(dataDir, 'memory'));
  await store.setup();
  const f = new Fixture();
  const created = f.newThread();
  await store.createThread(created);
  assert.deepEqual(await new FileMemoryStore(path.join(dataDir, 'memory')).getThread(created.thread.id), created.thread);
  await store.end();
  assert.equal(createMemoryStore({ MEMORY_STORE: 'memory', dataDir }).kind, 'memory');
  assert.equal(createMemoryStore({ MEMORY_STORE: 'file', dataDir }).kind, 'file');
  assert.throws(() => createMemoryStore({ MEMORY_STORE: 'postgres', dataDir }), /DATABASE_URL/);
  const pg = createMemoryStore({ MEMORY_STORE: 'postgres', DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/test', dataDir });
  assert.equal(pg.kind, 'postgres');
  await pg.end();
});
