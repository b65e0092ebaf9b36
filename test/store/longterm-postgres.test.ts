/** The long-term conformance suite on PostgreSQL: a scratch database, two stores as two processes. */
import { after, before } from 'node:test';
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
