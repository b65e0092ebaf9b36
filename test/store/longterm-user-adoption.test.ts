/**
 * Upgrading past "ids differing only in case are one user": long-term memory a user kept under
 * `Alice` (the file store's folder, PostgreSQL's rows) moves to the user's key when that spelling is
 * first used again, before its first read, and is then found under any spelling; it never moves over
 * memory the key already has.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { LongTermService } from '../../src/longterm/service';
import { FileLongTermStore } from '../../src/store/longterm/file-store';
import { PostgresLongTermStore } from '../../src/store/longterm/postgres-store';
import type { LongTermStore } from '../../src/store/longterm/store';
import { keyedByUser } from '../../src/store/longterm/user-keyed';
import { createDatabase, dropDatabases } from '../helpers/scratch-postgres';

const meta = { origin: 'system' as const, reason: 'adoption test' };
let databaseUrl = '';
const dirs: string[] = [];
before(async () => {
  databaseUrl = await createDatabase();
});
after(async () => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  await dropDatabases();
});

const backends: [string, () => LongTermStore][] = [
  [
    'file',
    () => {
      const dir = dirs.at(-1) as string;
      return new FileLongTermStore(dir);
    },
  ],
  ['postgres', () => new PostgresLongTermStore(databaseUrl)],
];

for (const [name, open] of backends) {
  describe(`${name}: memory under an old spelling`, () => {
    test('moves to the key on first use, found under every spelling; memory the key already has is never overwritten', async () => {
      dirs.push(mkdtempSync(path.join(os.tmpdir(), 'threadline-adopt-')));
      const tag = randomBytes(3).toString('hex');
      const spelt = `Alice${tag}`;
      const other = `Bob${tag}`;
      // What an earlier release wrote: straight into the store, under the spelling.
      const raw = open();
      await raw.setup();
      const before = new LongTermService({ store: raw, auditReads: false });
      await before.importConversations(spelt, [{ sessionId: 's1', messages: [{ role: 'user', text: 'my violin teacher is called Ingrid' }] }], meta, () => 's1');
      await before.importConversations(other, [{ sessionId: 's1', messages: [{ role: 'user', text: 'old words about a trombone' }] }], meta, () => 's1');
      await before.importConversations(other.toLowerCase(), [{ sessionId: 's2', messages: [{ role: 'user', text: 'new words about a cello' }] }], meta, () => 's2');
      await raw.end();

      const store = open();
      await store.setup();
      const now = new LongTermService({ store: keyedByUser(store), auditReads: false });
      try {
        // The application goes on calling the user as it always did: that spelling's memory moves to the key,
        assert.match((await now.search(spelt, { query: 'violin teacher' }))[0]?.text ?? '', /Ingrid/);
        // and from then on every spelling finds it.
        assert.match((await now.search(spelt.toUpperCase(), { query: 'violin teacher' }))[0]?.text ?? '', /Ingrid/);
        // The key already had memory: it is kept, and the old spelling's is left where it was.
        assert.match((await now.search(other, { query: 'cello' }))[0]?.text ?? '', /cello/);
        assert.equal((await now.search(other, { query: 'trombone' })).length, 0);
      } finally {
        await store.end();
      }
    });
  });
}
