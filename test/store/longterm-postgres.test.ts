/** The long-term conformance suite on PostgreSQL: a scratch database, two stores as two processes. */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import pg from 'pg';
import { predicateKey } from '../../src/longterm/facts';
import { LongTermService } from '../../src/longterm/service';
import { MIGRATIONS, MIGRATIONS_TABLE_SQL } from '../../src/store/memory/migrations';
import { PostgresLongTermStore } from '../../src/store/longterm/postgres-store';
import type { LongTermRecord, LongTermStore } from '../../src/store/longterm/store';
import { normalized } from '../../src/longterm/vectors';
import { sealerFor } from '../../src/store/sealing/sealer';
import { createDatabase, dropDatabases } from '../helpers/scratch-postgres';
import { longTermConformance } from './longterm.conformance';

let databaseUrl = '';
before(async () => {
  databaseUrl = await createDatabase();
});
after(dropDatabases);

longTermConformance('postgres', async () => {
  const opened: LongTermStore[] = [];
  const open = async () => {
    const store = new PostgresLongTermStore(databaseUrl);
    await store.setup();
    opened.push(store);
    return store;
  };
  return { store: await open(), reopen: open, cleanup: async () => void (await Promise.all(opened.map((s) => s.end()))) };
});

test('BM25 statistics follow the rows: puts, replacements and repeated puts in one section count as a recount does', async () => {
  const store = new PostgresLongTermStore(databaseUrl);
  await store.setup();
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    const user = `stats_${Date.now().toString(36)}`;
    const message = (id: string, text: string) => ({ kind: 'message' as const, record: { id, userId: user, sessionId: 's', role: 'user' as const, text, at: '2024-01-01T00:00:00.000Z' } });
    await store.write(user, async (tx) => tx.put([message('a', 'pottery class on Saturday'), message('b', 'a pottery bowl'), message('b', 'a blue pottery bowl')]));
    await store.write(user, async (tx) => tx.put([message('a', 'violin lesson on Saturday'), message('c', 'blue violin')]));
    const { rows: counted } = await db.query<{ kind: string; term: string; df: number }>('SELECT kind, term, df FROM longterm_term_stats WHERE user_id = $1 AND df <> 0 ORDER BY kind, term', [user]);
    const { rows: recount } = await db.query<{ kind: string; term: string; df: number }>(
      'SELECT kind, term, count(*)::int AS df FROM longterm_records, unnest(tsvector_to_array(terms)) AS term WHERE user_id = $1 GROUP BY kind, term ORDER BY kind, term',
      [user],
    );
    assert.deepEqual(counted, recount);
    assert.equal(counted.find((r) => r.term === 'potteri')?.df, 1, 'the replaced row no longer counts its old terms');
    const { rows: kinds } = await db.query<{ docs: string; terms: string }>('SELECT docs::text, terms::text FROM longterm_kind_stats WHERE user_id = $1', [user]);
    assert.deepEqual(kinds, [{ docs: '3', terms: '8' }]);
    // BM25: the rare term outweighs the common one.
    const hits = await store.reader(user).searchText('message', { text: 'blue lesson', terms: ['blue', 'lesson'] }, 3);
    assert.deepEqual(
      hits.map((h) => h.id),
      ['a', 'c', 'b'],
    );
  } finally {
    await db.end();
    await store.end();
  }
});

test('migrations 9 and 10 on a database written before them: pending index entries merged, every record still found, names spelt alike too', async () => {
  const url = await createDatabase();
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  const user = 'before_9';
  const message = (id: string, text: string) => ({ kind: 'message' as const, record: { id, userId: user, sessionId: 's', role: 'user' as const, text, at: '2024-01-01T00:00:00.000Z' } });
  const entity = { kind: 'entity' as const, record: { id: 'entity_nora', userId: user, name: 'Nora', type: 'person', aliases: [], createdAt: '2024-01-01T00:00:00.000Z' } };
  try {
    // The schema as it was at migration 8, and rows written by the store then.
    await db.query(MIGRATIONS_TABLE_SQL);
    for (const m of MIGRATIONS.filter((m) => m.version <= 8)) {
      await db.query(m.sql);
      await db.query('INSERT INTO memory_migrations (version, name) VALUES ($1, $2)', [m.version, m.name]);
    }
    // Today's store writes migration 14's column too (null for these kinds): there for the write only.
    await db.query('ALTER TABLE longterm_records ADD COLUMN predicate_base text');
    const early = new PostgresLongTermStore(url);
    await early.write(user, async (tx) => tx.put([message('a', 'pottery class on Saturday'), message('b', 'a blue pottery bowl'), message('c', 'violin lesson'), entity]));
    await early.end();
    await db.query('ALTER TABLE longterm_records DROP COLUMN predicate_base');
    const matches = async () => (await db.query<{ n: string }>("SELECT count(*)::text AS n FROM longterm_records WHERE kind = 'message' AND terms @@ 'potteri'::tsquery")).rows[0]?.n;
    assert.equal(await matches(), '2');

    const store = new PostgresLongTermStore(url);
    await store.setup();
    try {
      const { rows: versions } = await db.query<{ version: number }>('SELECT version FROM memory_migrations WHERE version > 8 ORDER BY version');
      assert.deepEqual(
        versions.map((v) => v.version),
        MIGRATIONS.filter((m) => m.version > 8).map((m) => m.version),
      );
      const { rows: options } = await db.query<{ reloptions: string[] }>("SELECT reloptions FROM pg_class WHERE relname = 'longterm_records_terms_message'");
      assert.deepEqual(options[0]?.reloptions, ['gin_pending_list_limit=256']);
      const reader = store.reader(user);
      const hits = await reader.searchText('message', { text: 'blue pottery', terms: ['blue', 'potteri'] }, 10);
      assert.deepEqual(
        hits.map((h) => h.id),
        ['b', 'a'],
      );
      assert.deepEqual(await reader.searchText('message', { text: 'cello', terms: ['cello'] }, 10), []);
      const similar = await reader.similarEntities(['norah'], 0.5, 5);
      assert.deepEqual(
        similar.map((s) => s.entity.id),
        ['entity_nora'],
      );
      assert.deepEqual(await reader.similarEntities(['nxrxh'], 0.5, 5), [], 'the caller’s threshold holds, as before');
      assert.equal((await db.query<{ t: string }>("SELECT current_setting('pg_trgm.similarity_threshold') AS t")).rows[0]?.t, '0.3', 'the setting is restored');
    } finally {
      await store.end();
    }
  } finally {
    await db.end();
  }
});

test('a reader reads a record once: later reads of it by id are answered from what it read', async () => {
  const store = new PostgresLongTermStore(databaseUrl);
  await store.setup();
  try {
    const user = `once_${Date.now().toString(36)}`;
    const message = (id: string, text: string) => ({ kind: 'message' as const, record: { id, userId: user, sessionId: 's', role: 'user' as const, text, at: '2024-01-01T00:00:00.000Z' } });
    await store.write(user, async (tx) => tx.put([message('a', 'first text')]));
    const reader = store.reader(user);
    assert.equal((await reader.getMessages(['a']))[0]?.text, 'first text');
    await store.write(user, async (tx) => tx.put([message('a', 'second text')]));
    assert.equal((await reader.getMessages(['a', 'a']))[1]?.text, 'first text', 'the same reader: what it read');
    assert.equal((await store.reader(user).getMessages(['a']))[0]?.text, 'second text', 'a new reader (a new request) reads the row');
  } finally {
    await store.end();
  }
});

test('sealed rows holding the 17-character term hashes of before are still found, and move to the short hashes when put again', async () => {
  const sealer = sealerFor({ THREADLINE_ENCRYPTION_KEY: `legacy:${Buffer.alloc(32, 3).toString('base64')}` });
  const store = new PostgresLongTermStore(databaseUrl, { sealer });
  await store.setup();
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    const user = `legacy_${Date.now().toString(36)}`;
    const message = { kind: 'message' as const, record: { id: 'a', userId: user, sessionId: 's', role: 'user' as const, text: 'pottery class', at: '2024-01-01T00:00:00.000Z' } };
    await store.write(user, async (tx) => tx.put([message]));
    // As a row written before: each term's legacy hash (h + 16 hex) in the row and in the statistics.
    const forms = (term: string) => sealer.queryTerms(term).filter((f) => f !== term);
    const [short, legacy] = [(t: string) => forms(t).find((f) => f.startsWith('g')) ?? '', (t: string) => forms(t).find((f) => f.startsWith('h')) ?? ''];
    assert.equal(short('potteri').length, 9);
    assert.equal(legacy('potteri').length, 17);
    await db.query('UPDATE longterm_records SET terms = array_to_tsvector($2::text[]) WHERE user_id = $1', [user, ['potteri', 'class'].map(legacy)]);
    for (const t of ['potteri', 'class']) await db.query('UPDATE longterm_term_stats SET term = $3 WHERE user_id = $1 AND term = $2', [user, short(t), legacy(t)]);
    const found = async () => (await store.reader(user).searchText('message', { text: 'pottery', terms: ['potteri'] }, 5)).map((h) => h.id);
    assert.deepEqual(await found(), ['a']);
    await store.write(user, async (tx) => tx.put([message]));
    const { rows } = await db.query<{ term: string; df: number }>('SELECT term, df FROM longterm_term_stats WHERE user_id = $1 AND df <> 0 ORDER BY term', [user]);
    assert.deepEqual(
      rows,
      [short('class'), short('potteri')].sort().map((term) => ({ term, df: 1 })),
    );
    assert.deepEqual(await found(), ['a']);
  } finally {
    await db.end();
    await store.end();
  }
});

test('every query term common: the rows holding two of them rank first, and rows with one fill up to the limit', async () => {
  const store = new PostgresLongTermStore(databaseUrl);
  await store.setup();
  try {
    const user = `common_${Date.now().toString(36)}`;
    const message = (id: string, text: string) => ({ kind: 'message' as const, record: { id, userId: user, sessionId: 's', role: 'user' as const, text, at: '2024-01-01T00:00:00.000Z' } });
    // More rows with each word than a search reads from one term (CANDIDATE_BUDGET), two with both.
    const rows = [
      ...Array.from({ length: 400 }, (_, i) => message(`p${i}`, `pottery ${i}`)),
      ...Array.from({ length: 450 }, (_, i) => message(`v${i}`, `violin ${i}`)),
      message('both1', 'pottery violin'),
      message('both2', 'violin pottery 7'),
    ];
    await store.write(user, async (tx) => tx.put(rows));
    const reader = store.reader(user);
    const hits = await reader.searchText('message', { text: 'pottery violin', terms: ['potteri', 'violin'] }, 5);
    assert.equal(hits.length, 5);
    assert.deepEqual(
      hits.slice(0, 2).map((h) => h.id),
      ['both1', 'both2'],
    );
    assert.ok(
      hits.slice(2).every((h) => h.id.startsWith('p')),
      'then the rarer word alone',
    );
  } finally {
    await store.end();
  }
});

test('facts stored before migration 14 are found by their predicate, and keyed (a keyed hash when sealed) at the next start', async () => {
  const sealer = sealerFor({ THREADLINE_ENCRYPTION_KEY: `keyed:${Buffer.alloc(32, 5).toString('base64')}` });
  const store = new PostgresLongTermStore(databaseUrl, { sealer });
  await store.setup();
  const svc = new LongTermService({ store });
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  const meta = { origin: 'agent' as const, reason: 'test' };
  try {
    const user = `unkeyed_${Date.now().toString(36)}`;
    const lives = await svc.recordFact(user, { subject: 'I', predicate: 'live in', object: 'Lisbon', text: 'The user lives in Lisbon' }, { messageIds: [] }, meta);
    const likes = await svc.recordFact(user, { subject: 'I', predicate: 'likes', object: 'tea', text: 'The user likes tea' }, { messageIds: [] }, meta);
    const ana = await svc.recordFact(user, { subject: 'Ana', predicate: 'lives in', object: 'Porto', text: 'Ana lives in Porto' }, { messageIds: [] }, meta);
    const stored = async () =>
      new Map(
        (await db.query<{ id: string; predicate_base: string | null }>("SELECT id, predicate_base FROM longterm_records WHERE user_id = $1 AND kind = 'fact'", [user])).rows.map((r) => [
          r.id,
          r.predicate_base,
        ]),
      );
    const base = (p: string) => predicateKey(p).base;
    assert.equal((await stored()).get(lives.fact.id), sealer.indexTerm(base('live in')), 'a keyed hash, not the base itself');
    assert.notEqual(sealer.indexTerm(base('live in')), base('live in'));

    // As the rows of a database migrated to 14: no base yet.
    await db.query('UPDATE longterm_records SET predicate_base = NULL WHERE user_id = $1', [user]);
    const livesIn = async () => (await store.reader(user).listFacts({ subjectIds: [lives.fact.subjectId], openOnly: true, predicateBase: base('lives in') })).map((f) => f.id);
    assert.deepEqual(await livesIn(), [lives.fact.id]);
    const again = await svc.recordFact(user, { subject: 'I', predicate: 'lives in', object: 'Lisbon', text: 'The user lives in Lisbon' }, { messageIds: [] }, meta);
    assert.deepEqual([again.outcome, again.fact.id], ['strengthened', lives.fact.id], 'an unkeyed fact is still the one a repeat strengthens');

    const next = new PostgresLongTermStore(databaseUrl, { sealer });
    await next.setup();
    try {
      const keyed = await stored();
      assert.deepEqual(
        [lives, likes, ana].map((f) => keyed.get(f.fact.id)),
        ['live in', 'likes', 'lives in'].map((p) => sealer.indexTerm(base(p))),
      );
      assert.deepEqual(await livesIn(), [lives.fact.id]);
      assert.deepEqual(
        (await next.reader(user).listFacts({ subjectIds: [lives.fact.subjectId], predicateBase: base('like') })).map((f) => f.id),
        [likes.fact.id],
      );
    } finally {
      await next.end();
    }
  } finally {
    await svc.flushReads();
    await db.end();
    await store.end();
  }
});

test("dense search from the vectors a process keeps: another process's new and replaced vectors are seen, and a kind over the bound is scored in SQL alike", async () => {
  const [a, b] = [new PostgresLongTermStore(databaseUrl), new PostgresLongTermStore(databaseUrl)];
  const small = new PostgresLongTermStore(databaseUrl, { vectorCacheFloats: 5 });
  await Promise.all([a.setup(), b.setup(), small.setup()]);
  try {
    const user = `dense_${Date.now().toString(36)}`;
    const message = (id: string): LongTermRecord => ({ kind: 'message', record: { id, userId: user, sessionId: 's', role: 'user', text: id, at: '2024-01-01T00:00:00.000Z' } });
    const query = normalized([1, 0, 0]);
    const ids = async (store: PostgresLongTermStore) => (await store.reader(user).nearest(['message'], query, 2)).map((h) => h.id);
    await a.write(user, async (tx) => {
      tx.put(['m1', 'm2', 'm3'].map(message));
      tx.putVectors([
        { kind: 'message', id: 'm1', vector: normalized([1, 0.1, 0]) },
        { kind: 'message', id: 'm2', vector: normalized([1, 0.5, 0]) },
        { kind: 'message', id: 'm3', vector: normalized([0, 1, 0]) },
      ]);
    });
    assert.deepEqual(await ids(a), ['m1', 'm2']);
    await b.write(user, async (tx) => {
      tx.put([message('m4')]);
      tx.putVectors([
        { kind: 'message', id: 'm4', vector: normalized([1, 0.3, 0]) },
        { kind: 'message', id: 'm1', vector: normalized([0, 0, 1]) },
      ]);
    });
    assert.deepEqual(await ids(a), ['m4', 'm2'], 'the vectors the other process wrote, one of them replacing one held');
    assert.deepEqual(await ids(small), ['m4', 'm2'], 'more vectors than its bound: scored in SQL');
    const scores = async (store: PostgresLongTermStore) => (await store.reader(user).nearest(['message', 'fact'], query, 4)).map((h) => `${h.kind}:${h.id}:${h.score.toFixed(6)}`);
    assert.deepEqual(await scores(a), await scores(small));
  } finally {
    await Promise.all([a.end(), b.end(), small.end()]);
  }
});

test('migration 15 numbers the vectors stored before it, and dense search finds them', async () => {
  const url = await createDatabase();
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  try {
    await db.query(MIGRATIONS_TABLE_SQL);
    for (const m of MIGRATIONS.filter((m) => m.version <= 14)) {
      await db.query(m.sql);
      await db.query('INSERT INTO memory_migrations (version, name) VALUES ($1, $2)', [m.version, m.name]);
    }
    const early = new PostgresLongTermStore(url);
    const user = 'before_15';
    await early.write(user, async (tx) => tx.put([{ kind: 'message', record: { id: 'm1', userId: user, sessionId: 's', role: 'user', text: 'hello', at: '2024-01-01T00:00:00.000Z' } }]));
    await early.end();
    // As the store wrote a vector before migration 15: the array alone.
    await db.query("UPDATE longterm_records SET embedding = '{0.6,0.8}'::real[] WHERE user_id = $1", [user]);
    const store = new PostgresLongTermStore(url);
    await store.setup();
    try {
      const hits = await store.reader(user).nearest(['message'], normalized([0.6, 0.8]), 5);
      assert.deepEqual(
        hits.map((h) => h.id),
        ['m1'],
      );
      assert.ok(Math.abs((hits[0]?.score ?? 0) - 1) < 1e-6);
    } finally {
      await store.end();
    }
  } finally {
    await db.end();
  }
});
