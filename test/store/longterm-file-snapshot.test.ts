/**
 * The file store's full-text snapshot: a user's BM25 indexes kept beside the log as of an offset, so a
 * cold load reads the records before it without analysing their words again. What a cold store answers
 * from a snapshot must be what it answers from the log alone; a snapshot that does not fit the log (another
 * log, a damaged file, the other sealing) is passed over and the log read whole.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { appendFile, readFile, rm, truncate, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { deserialize } from 'node:v8';
import { test } from 'node:test';
import { analyze } from '../../src/longterm/text';
import { FileLongTermStore } from '../../src/store/longterm/file-store';
import type { LexicalKind } from '../../src/store/longterm/store';
import { PLAIN, sealerFor, type Sealer } from '../../src/store/sealing/sealer';
import type { LongTermService } from '../../src/longterm/service';
import { fileLongTermStores } from '../helpers/longterm-file-stores';
import { scratchDirs } from '../helpers/scratch-dirs';

const openStore = fileLongTermStores();
const dir = scratchDirs('threadline-longterm-snapshot-');
const sealed = sealerFor({ THREADLINE_ENCRYPTION_KEY: `a:${randomBytes(32).toString('base64')}` });

const open = (where: string, sealer: Sealer = PLAIN, snapshotAfterRecords = 50) => openStore(where, { sealer, snapshotAfterRecords });

const WORDS = ['river', 'stone', 'cloud', 'ember', 'frost', 'maple', 'harbor', 'lantern', 'violet', 'copper', 'meadow', 'thistle'];
const sentence = (i: number, n: number) => Array.from({ length: n }, (_, j) => WORDS[(i * 7 + j * j + j) % WORDS.length]).join(' ');
const USER = 'ada';

/** 120 messages in 3 imports and 30 facts (ten of them recorded twice: replaced records), so 60 records cross a snapshot of 50. */
async function fill(svc: LongTermService, from = 0): Promise<void> {
  for (let batch = 0; batch < 3; batch++) {
    const messages = Array.from({ length: 40 }, (_, i) => ({ role: 'user' as const, text: `${sentence(from + batch * 40 + i, 6 + (i % 5))} number ${from + batch * 40 + i}` }));
    await svc.importConversations(USER, [{ messages }], { origin: 'person', reason: 'test' }, () => `session-${from}-${batch}`);
  }
  for (let i = 0; i < 30; i++) {
    await svc.recordFact(
      USER,
      { subject: `${WORDS[i % WORDS.length]} ${from + i}`, predicate: 'relates to', object: WORDS[(i + 3) % WORDS.length] ?? 'x', text: sentence(from + i, 5) },
      { messageIds: [] },
      { origin: 'agent', reason: 'test' },
    );
  }
}

/** A search, which writes the snapshot when it is due, and the turn of the event loop that writes it. */
async function searched(svc: LongTermService): Promise<void> {
  await svc.search(USER, { query: 'river' });
  await new Promise((resolve) => setImmediate(resolve));
}

/** What a user's reader answers to full-text queries of every kind, best first with their scores, and the records found. */
async function answers(store: FileLongTermStore): Promise<unknown> {
  const reader = store.reader(USER);
  const out: unknown[] = [];
  const records = { message: (ids: string[]) => reader.getMessages(ids), fact: (ids: string[]) => reader.getFacts(ids), entity: (ids: string[]) => reader.getEntities(ids) };
  for (const kind of ['message', 'fact', 'entity'] as const satisfies readonly LexicalKind[]) {
    for (const q of ['river stone', 'ember', 'harbor lantern violet', 'number 17', 'copper meadow thistle frost']) {
      const hits = await reader.searchText(kind, { text: q, terms: analyze(q) }, 25);
      out.push(hits, await records[kind](hits.map((h) => h.id)));
    }
  }
  return out;
}

test('a cold store answers from its snapshot what it answers from the log alone, and reads on past it', async () => {
  const where = dir();
  const { svc } = await open(where);
  await fill(svc);
  const snapshot = path.join(where, USER, 'text-index');
  assert.ok(!existsSync(snapshot), 'writes alone write no snapshot');
  await searched(svc);
  assert.ok(existsSync(snapshot), 'a search wrote one, more than 50 records being indexed without one');

  // Records written after the snapshot: a cold store reads them from the log, past the snapshot's offset.
  const { svc: more } = await open(where, PLAIN, 1_000_000);
  await fill(more, 1000);

  const fromSnapshot = await open(where, PLAIN, 1_000_000);
  const withSnapshot = await answers(fromSnapshot.store);
  assert.equal(fromSnapshot.store.restoredSnapshots, 1);

  await rm(snapshot);
  const fromLog = await open(where, PLAIN, 1_000_000);
  assert.deepEqual(withSnapshot, await answers(fromLog.store));
  assert.equal(fromLog.store.restoredSnapshots, 0);
  assert.ok(JSON.stringify(withSnapshot).includes('"score"'), 'the queries found something');

  // Writes after a restore index on top of it: a fact recorded again (same words) and new messages.
  await fill(fromSnapshot.svc, 2000);
  await fill(fromLog.svc, 2000);
  assert.deepEqual(await answers(fromSnapshot.store), await answers(fromLog.store));
});

test('a snapshot that does not fit the log, or is damaged, is passed over and the log read whole', async () => {
  const where = dir();
  const { svc } = await open(where);
  await fill(svc);
  await searched(svc);
  const snapshot = path.join(where, USER, 'text-index');
  const records = path.join(where, USER, 'records.jsonl');
  const expected = await answers((await open(where, PLAIN, 1_000_000)).store);
  const good = await readFile(snapshot);

  // The log cut before the snapshot's offset (a restored backup): the snapshot covers records it no longer has.
  const log = await readFile(records);
  const firstLines = log.subarray(0, log.indexOf(10, log.length / 3) + 1);
  await writeFile(records, firstLines);
  const cut = await open(where, PLAIN, 1_000_000);
  const cutAnswers = await answers(cut.store);
  assert.equal(cut.store.restoredSnapshots, 0);
  await rm(snapshot);
  assert.deepEqual(cutAnswers, await answers((await open(where, PLAIN, 1_000_000)).store));

  // Another log as long: a letter of a text just before the snapshot's offset differs.
  await writeFile(snapshot, good);
  const { offset } = deserialize(good) as { offset: number };
  const other = Buffer.from(log);
  const text = other.lastIndexOf('"text":"', offset) + 8;
  assert.ok(text > offset - 256 && text < offset);
  other[text] = other[text] === 0x71 ? 0x72 : 0x71;
  await writeFile(records, other);
  const changed = await open(where, PLAIN, 1_000_000);
  await answers(changed.store);
  assert.equal(changed.store.restoredSnapshots, 0);

  // A damaged snapshot: a warning, and the log read whole.
  await writeFile(records, log);
  await writeFile(snapshot, good.subarray(0, good.length / 2));
  const warnings: string[] = [];
  const warn = console.warn;
  console.warn = (message: string) => warnings.push(message);
  try {
    const damaged = await open(where, PLAIN, 1_000_000);
    assert.deepEqual(await answers(damaged.store), expected);
    assert.equal(damaged.store.restoredSnapshots, 0);
  } finally {
    console.warn = warn;
  }
  assert.match(warnings.join('\n'), /full-text snapshot .* was not read/);

  // A torn line after the snapshot's offset (a writer that crashed) leaves the snapshot good.
  await writeFile(snapshot, good);
  await appendFile(records, '{"kind":"message","rec');
  const torn = await open(where, PLAIN, 1_000_000);
  assert.deepEqual(await answers(torn.store), expected);
  assert.equal(torn.store.restoredSnapshots, 1);
  await truncate(records, log.length);
});

test('with encryption at rest the snapshot is sealed, and a store of the other sealing passes it over', async () => {
  const where = dir();
  const { svc } = await open(where, sealed);
  await fill(svc);
  await searched(svc);
  const snapshot = path.join(where, USER, 'text-index');
  const bytes = await readFile(snapshot, 'utf8');
  assert.ok(bytes.startsWith('{'), 'sealed: JSON of the sealed bytes');
  for (const word of ['river', 'harbor', 'lantern', 'thistl']) assert.ok(!bytes.includes(word), `no plain term "${word}" in the sealed snapshot`);

  const again = await open(where, sealed, 1_000_000);
  const withSnapshot = await answers(again.store);
  assert.equal(again.store.restoredSnapshots, 1);
  await rm(snapshot);
  assert.deepEqual(withSnapshot, await answers((await open(where, sealed, 1_000_000)).store));

  // A plain snapshot is not taken by a sealed store (it would be the index of terms kept in the clear).
  const plainWhere = dir();
  const plain = await open(plainWhere);
  await fill(plain.svc);
  await searched(plain.svc);
  assert.ok(existsSync(path.join(plainWhere, USER, 'text-index')));
  const sealedStore = await open(plainWhere, sealed, 1_000_000);
  await answers(sealedStore.store);
  assert.equal(sealedStore.store.restoredSnapshots, 0);
});
