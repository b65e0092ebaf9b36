/**
 * The file store's per-user indexes are bounded: past `maxUsers` the least recently used user's is
 * dropped (its files closed), and a dropped user's next read rebuilds it from the log unchanged.
 */
import assert from 'node:assert/strict';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import type { LongTermService } from '../../src/longterm/service';
import { fileLongTermStores } from '../helpers/longterm-file-stores';
import { scratchDirs } from '../helpers/scratch-dirs';

// The reads recorded last, then the files, before the directories go.
const openStore = fileLongTermStores();
const dir = scratchDirs('threadline-longterm-cache-');

async function open(maxUsers: number, where = dir()) {
  return { ...(await openStore(where, { maxUsers })), where };
}

const remember = (svc: LongTermService, userId: string, text: string) =>
  svc.importConversations(userId, [{ messages: [{ role: 'user', text }] }], { origin: 'person', reason: 'test' }, () => `session-${userId}`);

test('past maxUsers, the least recently used user is dropped and rebuilt from its files on its next use', async () => {
  const { store, svc } = await open(2);
  await remember(svc, 'ada', 'my cat is called Pixel');
  await remember(svc, 'bob', 'my dog is called Rex');
  assert.equal(store.loadedUsers, 2);
  // Ada is used again, so Bob is now the least recent one and goes when a third user comes.
  assert.equal((await svc.search('ada', { query: 'cat' })).length, 1);
  await remember(svc, 'cyd', 'my car is red');
  assert.equal(store.loadedUsers, 2);
  // Bob's memory is still there: his index is rebuilt from the log (and Ada's, the least recent now, goes).
  const bob = await svc.search('bob', { query: 'dog Rex' });
  assert.deepEqual(
    bob.map((r) => r.text),
    ['my dog is called Rex'],
  );
  assert.equal(store.loadedUsers, 2);
  // A thousand users through a store bounded at two hold two indexes, not a thousand.
  for (let i = 0; i < 50; i++) await svc.search(`user-${i}`, { query: 'anything' });
  assert.equal(store.loadedUsers, 2);
  assert.equal((await svc.search('ada', { query: 'Pixel' }))[0]?.text, 'my cat is called Pixel');
});

test('a user dropped while a write of theirs is in flight loses nothing', async () => {
  const { svc } = await open(1);
  const writes = [remember(svc, 'eve', 'first note of eve'), remember(svc, 'fay', 'first note of fay'), remember(svc, 'eve', 'second note of eve')];
  await Promise.all(writes);
  const texts = (await svc.search('eve', { query: 'note eve', k: 10 })).map((r) => r.text).sort();
  assert.deepEqual(texts, ['first note of eve', 'second note of eve']);
});

test("a process's first write of a user reads only the end of the user's audit, cutting a torn line", async () => {
  const { svc, where } = await open(10);
  await remember(svc, 'gus', 'my bike is blue');
  const auditFile = path.join(
    where,
    (await readdir(where)).find((d) => d.includes('gus'))!,
    'audit.jsonl',
  );
  const before = await readFile(auditFile, 'utf8');
  // A line no parser takes (a stand-in for the many a long-lived user has: reading them all made the first
  // write 0.5 s at 50,000), then a crashed writer's torn line.
  await writeFile(auditFile, `not json, never parsed by a write\n${before}{"at":"2026-11-29T`);
  const restarted = await open(10, where);
  await remember(restarted.svc, 'gus', 'my bike has two bells');
  const lines = (await readFile(auditFile, 'utf8')).split('\n');
  assert.equal(lines.pop(), '', 'the audit ends with a whole line');
  for (const line of lines.slice(1)) assert.doesNotThrow(() => JSON.parse(line), line.slice(0, 60));
  await writeFile(auditFile, `${lines.slice(1).join('\n')}\n`);
  const again = await open(10, where);
  const entries = await again.store.auditLog('gus');
  assert.ok(entries.length > before.trimEnd().split('\n').length, 'the entries before and after the torn line are all there');
});
