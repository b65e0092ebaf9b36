/** Journal retention (JOURNAL_RETENTION_DAYS): the sweep removes runs' logs untouched for the retention, and nothing else. */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readdirSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { FileKeyValueStore, JOURNALS, journalDirectories } from '../../src/store/kv';
import { startJournalSweeps, sweepJournals } from '../../src/store/journal-retention';
import { scratchDirs } from '../helpers/scratch-dirs';

const dir = scratchDirs('threadline-journal-retention-');
const DAY_MS = 24 * 60 * 60 * 1000;

/** Every file under `root`, relative. */
function filesUnder(root: string): string[] {
  return readdirSync(root, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => path.relative(root, path.join(e.parentPath, e.name)))
    .sort();
}

function ageAll(root: string, days: number): void {
  const then = new Date(Date.now() - days * DAY_MS);
  for (const file of filesUnder(root)) utimesSync(path.join(root, file), then, then);
}

test('the sweep removes the journal logs of runs untouched since the cutoff, and keeps the rest', async () => {
  const root = dir();
  const store = new FileKeyValueStore(root);
  // Two runs' calls in each journal, and a value outside the journals.
  for (const namespace of Object.values(JOURNALS)) {
    await store.put(namespace, 'wf-old/run-1/1', { result: 'old' });
    await store.put(namespace, 'wf-old/run-1/2', { result: 'old too' });
  }
  await store.put('settings', 'colour', 'green');
  // An entry written before the logs: a file of its own.
  mkdirSync(path.join(root, JOURNALS.steps), { recursive: true });
  writeFileSync(path.join(root, JOURNALS.steps, 'legacy.json'), '{}');
  ageAll(root, 10);
  for (const namespace of Object.values(JOURNALS)) await store.put(namespace, 'wf-new/run-2/1', { result: 'new' });

  const before = filesUnder(root);
  const swept = await sweepJournals(root, new Date(Date.now() - 7 * DAY_MS));
  assert.equal(swept.removed, 2, "the old run's log (every journal's entries), and the legacy entry");
  assert.ok(swept.bytes > 0);
  const after = filesUnder(root);
  assert.equal(after.length, before.length - swept.removed);
  assert.ok(
    after.some((f) => f.startsWith('settings')),
    'values outside the journals stay, however old',
  );
  assert.ok(!existsSync(path.join(root, JOURNALS.steps, 'legacy.json')));
  for (const namespace of Object.values(JOURNALS)) {
    assert.equal(await store.get(namespace, 'wf-old/run-1/1'), undefined, `${namespace}: the old run's entries are gone`);
    assert.deepEqual(await store.get(namespace, 'wf-new/run-2/1'), { result: 'new' }, `${namespace}: the recent run's entries stay`);
  }
  assert.equal(await store.get('settings', 'colour'), 'green');
});

test('a run whose log was swept while this process held it open journals its next call to a new log', async () => {
  const root = dir();
  const store = new FileKeyValueStore(root);
  await store.put(JOURNALS.steps, 'wf/run/1', 'first');
  ageAll(root, 30);
  assert.equal((await sweepJournals(root, new Date(Date.now() - DAY_MS))).removed, 1);
  await store.put(JOURNALS.steps, 'wf/run/2', 'second');
  assert.equal(await store.get(JOURNALS.steps, 'wf/run/2'), 'second');
  assert.equal(await store.get(JOURNALS.steps, 'wf/run/1'), undefined);
  const logs = readdirSync(journalDirectories(root)[0]!.logs);
  assert.equal(logs.length, 1, 'the next entry is on disk, in a new log');
});

test('a missing directory sweeps as nothing; retention 0 never sweeps; a started sweep removes old logs at once', async () => {
  assert.deepEqual(await sweepJournals(path.join(dir(), 'absent'), new Date()), { removed: 0, bytes: 0 });

  const root = dir();
  const store = new FileKeyValueStore(root);
  await store.put(JOURNALS.calls, 'wf/run/1', 'x');
  ageAll(root, 100);
  const messages: string[] = [];
  await startJournalSweeps(root, 0, (m) => messages.push(m))();
  assert.equal(filesUnder(root).length, 1, 'retention 0 keeps everything');

  const stop = startJournalSweeps(root, 7, (m) => messages.push(m));
  await stop(); // waits for the sweep made at the start
  assert.deepEqual(filesUnder(root), []);
  assert.match(messages.join('\n'), /journal sweep: 1 journal files untouched for 7 days removed/);
});
