/**
 * The stores with encryption at rest (THREADLINE_ENCRYPTION_KEY): both conformance suites, unchanged,
 * on the file store and on PostgreSQL with a sealer; what they write holds none of the words in
 * plain text; data written before encryption was on, and sealed with a key since rotated out to
 * THREADLINE_ENCRYPTION_OLD_KEYS, still reads and is still found by search.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readdir, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Client } from 'pg';
import { LongTermService } from '../../src/longterm/service';
import type { MemoryStore } from '../../src/store/memory-store';
import { FileMemoryStore } from '../../src/store/memory/file-store';
import { PostgresMemoryStore } from '../../src/store/memory/postgres-store';
import { FileLongTermStore } from '../../src/store/longterm/file-store';
import { PostgresLongTermStore } from '../../src/store/longterm/postgres-store';
import type { LongTermStore } from '../../src/store/longterm/store';
import { FileKeyValueStore } from '../../src/store/kv';
import { PLAIN, sealerFor, type Sealer } from '../../src/store/sealing/sealer';
import { scratchDirs } from '../helpers/scratch-dirs';
import { createDatabase, dropDatabases } from '../helpers/scratch-postgres';
import { longTermConformance } from './longterm.conformance';
import { memoryStoreConformance } from './memory-store.conformance';

const dir = scratchDirs('threadline-sealed-');
const key = (name: string) => `${name}:${randomBytes(32).toString('base64')}`;
const A = key('a');
const B = key('b');
/** Sealing with A. */
const sealed = sealerFor({ THREADLINE_ENCRYPTION_KEY: A });
/** After rotation: B seals, A still opens. */
const rotated = sealerFor({ THREADLINE_ENCRYPTION_KEY: B, THREADLINE_ENCRYPTION_OLD_KEYS: A });

let databaseUrl = '';
before(async () => {
  databaseUrl = await createDatabase();
});
after(dropDatabases);

/** Every file under `root`, as text. */
async function allFiles(root: string): Promise<string> {
  const entries = await readdir(root, { recursive: true, withFileTypes: true });
  const texts = await Promise.all(entries.filter((e) => e.isFile()).map((e) => readFile(path.join(e.parentPath, e.name), 'utf8')));
  return texts.join('\n');
}

/** Every row of the long-term and memory tables, as text. */
async function allRows(): Promise<string> {
  const client = new Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    // Not longterm_entity_names: entity names stay readable for pg_trgm (docs/encryption-at-rest.md).
    const tables = ['longterm_records', 'longterm_audit', 'memory_chunks', 'memory_operations'];
    const rows = await Promise.all(tables.map((t) => client.query(`SELECT t::text AS row FROM ${t} t`)));
    return rows.flatMap((r) => r.rows.map((x: { row: string }) => x.row)).join('\n');
  } finally {
    await client.end();
  }
}

describe('sealed: conformance', () => {
  memoryStoreConformance(
    'file, sealed',
    async () => {
      const where = dir();
      const opened: MemoryStore[] = [];
      const open = async () => {
        const store = new FileMemoryStore(where, { sealer: sealed });
        await store.setup();
        opened.push(store);
        return store;
      };
      const store = await open();
      return {
        store,
        reopen: open,
        storedBytes: () => store.storedBytes(),
        cleanup: async () => {
          for (const s of opened) await s.end();
          await rm(where, { recursive: true, force: true });
        },
      };
    },
    { persistent: true, growthOps: 1000 },
  );

  memoryStoreConformance(
    'postgres, sealed',
    async () => {
      const opened: MemoryStore[] = [];
      const open = async () => {
        const store = new PostgresMemoryStore(databaseUrl, { sealer: sealed });
        await store.setup();
        opened.push(store);
        return store;
      };
      const store = await open();
      return { store, reopen: open, storedBytes: () => store.storedBytes(), cleanup: async () => void (await Promise.all(opened.map((s) => s.end()))) };
    },
    { persistent: true, growthOps: 1000 },
  );

  longTermConformance('file, sealed', async () => {
    const where = dir();
    const opened: LongTermStore[] = [];
    const open = async () => {
      const store = new FileLongTermStore(where, { sealer: sealed });
      await store.setup();
      opened.push(store);
      return store;
    };
    return {
      store: await open(),
      reopen: open,
      cleanup: async () => {
        await Promise.all(opened.map((s) => s.end()));
        await rm(where, { recursive: true, force: true });
      },
    };
  });

  longTermConformance('postgres, sealed', async () => {
    const opened: LongTermStore[] = [];
    const open = async () => {
      const store = new PostgresLongTermStore(databaseUrl, { sealer: sealed });
      await store.setup();
      opened.push(store);
      return store;
    };
    return { store: await open(), reopen: open, cleanup: async () => void (await Promise.all(opened.map((s) => s.end()))) };
  });
});

const meta = { origin: 'person' as const, reason: 'import' };

/** A message id that does not spell the word (ids stay readable). */
const idOf = (word: string) => `m-${word.length}-${word.charCodeAt(0)}`;

/** Imports one conversation holding `word`, and states a fact holding it. */
async function remember(store: LongTermStore, userId: string, word: string): Promise<void> {
  const svc = new LongTermService({ store });
  await svc.importConversations(userId, [{ sessionId: `s${idOf(word)}`, messages: [{ id: idOf(word), role: 'user', text: `The ${word} arrives on Tuesday` }] }], meta, () => 's');
  await svc.recordFact(userId, { subject: 'I', predicate: 'ordered', object: word, text: `I ordered a ${word}` }, { messageIds: [idOf(word)] }, meta);
  await svc.flushReads();
}

async function found(store: LongTermStore, userId: string, word: string): Promise<string[]> {
  const svc = new LongTermService({ store });
  const results = await svc.search(userId, { query: `when does the ${word} arrive?`, k: 5, kinds: ['message'] }, meta);
  await svc.flushReads();
  return results.filter((r) => r.id === idOf(word)).map((r) => r.id);
}

for (const backend of ['file', 'postgres'] as const) {
  describe(`sealed: ${backend} long-term store`, () => {
    let where = '';
    before(() => {
      where = dir();
    });
    const open = async (sealer: Sealer) => {
      const store = backend === 'file' ? new FileLongTermStore(where, { sealer }) : new PostgresLongTermStore(databaseUrl, { sealer });
      await store.setup();
      return store;
    };
    const raw = () => (backend === 'file' ? allFiles(where) : allRows());

    test('plain rows, then rows sealed with key a, then rows sealed with key b after rotation: all read and are found; none sealed is readable', async () => {
      const user = `u${randomBytes(4).toString('hex')}`;
      const plain = await open(PLAIN);
      await remember(plain, user, 'harmonium');
      await plain.end();

      const first = await open(sealed);
      await remember(first, user, 'theremin');
      assert.deepEqual(await found(first, user, 'harmonium'), [idOf('harmonium')], 'a row from before encryption is found');
      assert.deepEqual(await found(first, user, 'theremin'), [idOf('theremin')]);
      await first.end();

      const second = await open(rotated);
      await remember(second, user, 'glockenspiel');
      for (const word of ['harmonium', 'theremin', 'glockenspiel']) assert.deepEqual(await found(second, user, word), [idOf(word)], `${word} is found after rotation`);
      const facts = await second.reader(user).listFacts({});
      assert.deepEqual(facts.map((f) => f.object).sort(), ['glockenspiel', 'harmonium', 'theremin']);
      await second.end();

      const text = await raw();
      assert.ok(text.includes('harmonium'), 'the row written before encryption stays as it was');
      for (const word of ['theremin', 'glockenspiel']) assert.ok(!text.includes(word), `"${word}" is stored in plain text: ${text.split('\n').find((l) => l.includes(word))}`);
      // Without key a, what it sealed does not open.
      const withoutA = await open(sealerFor({ THREADLINE_ENCRYPTION_KEY: B }));
      await assert.rejects(withoutA.reader(user).listFacts({}), /encryption key a, which is not configured/);
      await withoutA.end();
    });
  });
}

test('sealed: the key-value store (notes, step journal) seals its files; files from before still read', async () => {
  const where = dir();
  await new FileKeyValueStore(where).put('notes/ada', 'old', 'VALUE-BEFORE');
  const store = new FileKeyValueStore(where, sealed);
  await store.put('notes/ada', 'pin', 'VALUE-SEALED-4711');
  assert.equal(await store.get('notes/ada', 'pin'), 'VALUE-SEALED-4711');
  assert.equal(await store.get('notes/ada', 'old'), 'VALUE-BEFORE');
  assert.equal(await new FileKeyValueStore(where, rotated).get('notes/ada', 'pin'), 'VALUE-SEALED-4711');
  const text = await allFiles(where);
  assert.ok(!text.includes('VALUE-SEALED-4711') && !text.includes('"pin"'));
});
