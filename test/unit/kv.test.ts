/** The embedded key-value store (file backend under DATA_DIR, and the in-memory one used by tests). */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { appendFileSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { FileKeyValueStore, JOURNALS, MemoryKeyValueStore } from '../../src/store/kv';
import { scratchDirs } from '../helpers/scratch-dirs';

/** A fresh directory per test, so tests never see each other's data. */
const dir = scratchDirs('threadline-kv-');

test('file store: values round-trip with their JSON shape', async () => {
  const store = new FileKeyValueStore(dir());
  const values: [string, unknown][] = [
    ['object', { a: 1, nested: { list: [1, 'two', null, true] } }],
    ['string', 'green'],
    ['number', 42.5],
    ['null', null],
    ['empty', ''],
    ['array', [{ x: 1 }]],
  ];
  for (const [key, value] of values) await store.put('ns', key, value);
  for (const [key, value] of values) assert.deepEqual(await store.get('ns', key), value, key);
});

test('file store: a missing key or namespace reads as undefined', async () => {
  const store = new FileKeyValueStore(dir());
  assert.equal(await store.get('nowhere', 'nothing'), undefined);
  await store.put('ns', 'a', 1);
  assert.equal(await store.get('ns', 'b'), undefined);
  assert.equal(await store.get('other', 'a'), undefined, 'namespaces are separate');
});

test('file store: a later put replaces the value', async () => {
  const store = new FileKeyValueStore(dir());
  await store.put('ns', 'k', 'old');
  await store.put('ns', 'k', { now: 'new' });
  assert.deepEqual(await store.get('ns', 'k'), { now: 'new' });
});

test('file store: data survives a new store instance on the same directory (a restarted worker)', async () => {
  const where = dir();
  await new FileKeyValueStore(where).put('notes/ada', 'color', 'green');
  assert.equal(await new FileKeyValueStore(where).get('notes/ada', 'color'), 'green');
});

test('file store: keys and namespaces with slashes, percent signs and unicode stay distinct', async () => {
  const store = new FileKeyValueStore(dir());
  const keys = ['a/b', 'a%2fb', 'a_b', '../../etc/passwd', 'ключ', '色 🎨', 'A', 'a', '.', ''];
  const namespaces = ['notes/ada', 'notes%2fada', 'notes/../bob', 'ümlaut ns', 'notes/ada/'];
  for (const ns of namespaces) for (const key of keys) await store.put(ns, key, `${ns}|${key}`);
  for (const ns of namespaces) for (const key of keys) assert.equal(await store.get(ns, key), `${ns}|${key}`, `${ns} / ${key}`);
});

test('file store: the namespace ".." stays inside the store directory', async () => {
  const where = dir();
  const store = new FileKeyValueStore(where);
  for (const ns of ['.', '..']) await store.put(ns, 'k', ns);
  assert.equal(await store.get('.', 'k'), '.');
  assert.equal(await store.get('..', 'k'), '..');
  // Nothing may be written next to the store's directory (where other tests' directories live).
  const outside = (await readdir(path.dirname(where))).filter((x) => !/^t\d+$/.test(x));
  assert.deepEqual(outside, [], 'files written outside the store directory');
});

test('file store: concurrent puts of one key never leave a torn value, and reads during them see a whole value', async () => {
  const store = new FileKeyValueStore(dir());
  // Values of very different sizes make a torn write show up as invalid JSON or a mixed value.
  const values = Array.from({ length: 40 }, (_, i) => ({ i, pad: 'x'.repeat(i % 2 === 0 ? 20_000 : 3) }));
  const seen: unknown[] = [];
  await Promise.all([...values.map((v) => store.put('ns', 'hot', v)), ...values.map(async () => seen.push(await store.get('ns', 'hot')))]);
  const whole = (x: unknown) => x === undefined || values.some((v) => JSON.stringify(v) === JSON.stringify(x));
  assert.ok(seen.every(whole), 'a read saw a partial value');
  assert.ok(whole(await store.get('ns', 'hot')) && (await store.get('ns', 'hot')) !== undefined);
});

test('file store: two store instances on one directory in one process can write the same key at once', async () => {
  // e.g. two workers (or a worker and a tool) in one process sharing DATA_DIR.
  const where = dir();
  const a = new FileKeyValueStore(where);
  const b = new FileKeyValueStore(where);
  const values = Array.from({ length: 20 }, (_, i) => `${i}:${'y'.repeat(i % 2 === 0 ? 20_000 : 3)}`);
  const results = await Promise.allSettled(values.map((v, i) => (i % 2 === 0 ? a : b).put('ns', 'hot', v)));
  const failures = results.filter((r) => r.status === 'rejected').map((r) => String((r as PromiseRejectedResult).reason));
  assert.deepEqual(failures, [], 'puts failed');
  assert.ok(values.includes((await a.get<string>('ns', 'hot')) ?? ''), 'the final value is one of those written');
});

test('memory store: round trip, missing keys, namespaces, and values are copies', async () => {
  const store = new MemoryKeyValueStore();
  const value = { list: [1, 2] };
  await store.put('ns', 'k', value);
  value.list.push(3);
  const read = await store.get<{ list: number[] }>('ns', 'k');
  assert.deepEqual(read, { list: [1, 2] }, 'a later change to the written object does not leak in');
  read?.list.push(4);
  assert.deepEqual(await store.get('ns', 'k'), { list: [1, 2] }, 'a change to a read value does not leak in');
  assert.equal(await store.get('ns', 'missing'), undefined);
  assert.equal(await store.get('other', 'k'), undefined);
});

test('file store, journals: each entry is read back, by this store and by another process on the same directory, across runs', async () => {
  const where = dir();
  const writer = new FileKeyValueStore(where);
  const reader = new FileKeyValueStore(where);
  const key = (run: number, call: number, part = '') => `wf-${run}/run-${run}/${call}${part}`;
  // The reader has read each run's log before the writer adds more: it takes the new lines then.
  for (let call = 1; call <= 20; call++) {
    for (const run of [1, 2]) {
      assert.equal(await reader.get(JOURNALS.calls, key(run, call)), undefined);
      await writer.put(JOURNALS.calls, key(run, call), { value: { run, call, text: 'ü\n\t"'.repeat(call) } });
      await writer.put(JOURNALS.steps, key(run, call, ':action'), { run, call });
    }
  }
  for (const store of [writer, reader, new FileKeyValueStore(where)]) {
    for (let call = 1; call <= 20; call++) {
      for (const run of [1, 2]) {
        assert.deepEqual(await store.get(JOURNALS.calls, key(run, call)), { value: { run, call, text: 'ü\n\t"'.repeat(call) } });
        assert.deepEqual(await store.get(JOURNALS.steps, key(run, call, ':action')), { run, call });
      }
    }
  }
  assert.equal(await reader.get(JOURNALS.steps, key(1, 1)), undefined, 'namespaces and parts stay apart');
  // One log per run for every journal, not a file per entry nor a log per journal.
  assert.equal((await readdir(path.join(where, 'journal.runs'))).length, 2);
  assert.ok(!existsSync(path.join(where, JOURNALS.calls)) && !existsSync(path.join(where, JOURNALS.steps)));
});

test('file store, journals: entries a run journaled before the run logs, in the journal’s own log, are still read', async () => {
  const where = dir();
  const hash = (text: string) => createHash('sha256').update(text).digest('hex').slice(0, 40);
  // As written before: <journal>/runs/<hash of the run>.jsonl, entries hashed by their key alone.
  for (const namespace of [JOURNALS.calls, JOURNALS.steps]) {
    mkdirSync(path.join(where, namespace, 'runs'), { recursive: true });
    const entry = (key: string) => `\n${hash(key)}\t${JSON.stringify({ key, value: `${namespace} ${key}` })}\n`;
    writeFileSync(path.join(where, namespace, 'runs', `${hash('wf/run')}.jsonl`), entry('wf/run/1') + entry('wf/run/2'));
  }
  const store = new FileKeyValueStore(where);
  assert.equal(await store.get(JOURNALS.calls, 'wf/run/1'), `${JOURNALS.calls} wf/run/1`);
  assert.equal(await store.get(JOURNALS.steps, 'wf/run/2'), `${JOURNALS.steps} wf/run/2`);
  // The run's next calls go to its run log; both logs are read.
  await store.put(JOURNALS.calls, 'wf/run/3', 'new');
  const other = new FileKeyValueStore(where);
  assert.equal(await other.get(JOURNALS.calls, 'wf/run/3'), 'new');
  assert.equal(await other.get(JOURNALS.calls, 'wf/run/1'), `${JOURNALS.calls} wf/run/1`);
  assert.equal(await store.get(JOURNALS.calls, 'wf/run/4'), undefined);
  assert.equal(await store.get(JOURNALS.steps, 'wf/run/1'), `${JOURNALS.steps} wf/run/1`);
});

test('file store, journals: a key keeps its first value; a line torn by a crashed writer is skipped and later entries read whole', async () => {
  const where = dir();
  const store = new FileKeyValueStore(where);
  await store.put(JOURNALS.calls, 'wf/run/1', 'first');
  await store.put(JOURNALS.calls, 'wf/run/1', 'second');
  assert.equal(await store.get(JOURNALS.calls, 'wf/run/1'), 'first');
  const [log] = await readdir(path.join(where, 'journal.runs'));
  const file = path.join(where, 'journal.runs', log!);
  // A writer that died mid-entry: its line is cut, with no newline after it.
  const whole = readFileSync(file, 'utf8')
    .split('\n')
    .find((line) => line.includes('first'))!;
  appendFileSync(file, `\n${createHash('sha256').update(`${JOURNALS.calls}\u0000wf/run/2`).digest('hex').slice(0, 40)}${whole.slice(40, -4)}`);
  assert.equal(await store.get(JOURNALS.calls, 'wf/run/2'), undefined, 'an entry still being written (or torn) is not read');
  await store.put(JOURNALS.calls, 'wf/run/3', 'after');
  await store.put(JOURNALS.calls, 'wf/run/2', 'again');
  const other = new FileKeyValueStore(where);
  assert.equal(await other.get(JOURNALS.calls, 'wf/run/3'), 'after');
  assert.equal(await other.get(JOURNALS.calls, 'wf/run/2'), 'again');
  assert.equal(await other.get(JOURNALS.calls, 'wf/run/1'), 'first');
});

test("file store, journals: two writers of one run log each read the other's entries and their own", async () => {
  const where = dir();
  const [a, b] = [new FileKeyValueStore(where), new FileKeyValueStore(where)];
  for (let call = 1; call <= 10; call++) {
    const writer = call % 3 === 0 ? b : a; // runs of entries by one writer, then the other's
    assert.equal(await writer.get(JOURNALS.calls, `wf/run/${call}`), undefined);
    await writer.put(JOURNALS.calls, `wf/run/${call}`, { call });
  }
  for (const store of [a, b, new FileKeyValueStore(where)]) {
    for (let call = 1; call <= 10; call++) assert.deepEqual(await store.get(JOURNALS.calls, `wf/run/${call}`), { call }, `call ${call}`);
  }
});

test('file store, journals: a run log removed while this store keeps it open gets its next entry in a new log', async () => {
  const where = dir();
  const store = new FileKeyValueStore(where);
  await store.put(JOURNALS.calls, 'wf/run/1', 'before');
  const runs = path.join(where, 'journal.runs');
  const [log] = await readdir(runs);
  rmSync(path.join(runs, log!));
  await store.put(JOURNALS.calls, 'wf/run/2', 'after');
  assert.ok(readFileSync(path.join(runs, log!), 'utf8').includes('after'), 'written to the log on disk, not to the removed file');
  assert.equal(await new FileKeyValueStore(where).get(JOURNALS.calls, 'wf/run/2'), 'after');
  assert.equal(await store.get(JOURNALS.calls, 'wf/run/1'), undefined, 'what was removed is gone for this store too');
});

test('file store, journals: an entry written as a file of its own (before the logs) is still read', async () => {
  const where = dir();
  const key = 'wf/run/7';
  mkdirSync(path.join(where, JOURNALS.calls), { recursive: true });
  writeFileSync(path.join(where, JOURNALS.calls, `${createHash('sha256').update(key).digest('hex').slice(0, 40)}.json`), JSON.stringify({ key, value: { value: 'from before' } }));
  assert.deepEqual(await new FileKeyValueStore(where).get(JOURNALS.calls, key), { value: 'from before' });
});
