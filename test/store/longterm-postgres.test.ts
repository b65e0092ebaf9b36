/** The long-term conformance suite on PostgreSQL: a scratch database, two stores as two processes. */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import pg from 'pg';
import { PostgresLongTermStore } from '../../src/store/longterm/postgres-store';
import type { LongTermStore } from '../../src/store/longterm/store';
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
