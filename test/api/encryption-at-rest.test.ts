/**
 * Threadline's own data encrypted at rest (issue 32, item 1), end to end: the real Temporal server,
 * a worker and the API with THREADLINE_ENCRYPTION_KEY, on the file store and on real PostgreSQL. After
 * a run (goal, tool arguments, tool result, answer) and an import, every file under DATA_DIR and every
 * row of Threadline's tables is read raw: none holds those words in plain text — while the API reads
 * the run back and search still finds the imported message.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Client } from 'pg';
import type { SearchHit } from '../../src/longterm/contract';
import { openLongTerm, type OpenLongTerm } from '../../src/store/longterm/open-longterm';
import { answer, cont, respondStep, toolStep } from '../helpers/scenarios';
import { requestJson } from '../helpers/http';
import { startRunsApi, type RunsApi } from '../helpers/runs-api';
import { createDatabase, dropDatabases } from '../helpers/scratch-postgres';
import { StubModelServer } from '../helpers/stub-model-server';
import { testConfig, waitFor } from '../helpers/temporal-env';

/** Words of the run and the import that must never be stored in plain text. */
const SECRETS = ['SECRET-GOAL-31', 'SECRET-PIN-4711', 'SECRET-ANSWER-9', 'Zanzibar-Quokka'];

/** Every file under `root`, as text (binary files as latin1, so any plain word shows). */
async function filesUnder(root: string): Promise<{ file: string; text: string }[]> {
  const entries = await readdir(root, { recursive: true, withFileTypes: true });
  return Promise.all(
    entries
      .filter((e) => e.isFile())
      .map(async (e) => {
        const file = path.join(e.parentPath, e.name);
        return { file, text: (await readFile(file)).toString('latin1') };
      }),
  );
}

/** Every row of every table of the database, as text — but longterm_entity_names (entity names stay readable: docs/encryption-at-rest.md). */
async function rowsOf(databaseUrl: string): Promise<{ file: string; text: string }[]> {
  const client = new Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const { rows: tables } = await client.query<{ name: string }>("SELECT tablename AS name FROM pg_tables WHERE schemaname = 'public' AND tablename <> 'longterm_entity_names'");
    assert.ok(tables.some((t) => t.name === 'memory_chunks') && tables.some((t) => t.name === 'longterm_records'));
    const out: { file: string; text: string }[] = [];
    for (const { name } of tables) {
      const { rows } = await client.query<{ row: string }>(`SELECT t::text AS row FROM ${name} t`);
      out.push(...rows.map((r) => ({ file: name, text: r.row })));
    }
    return out;
  } finally {
    await client.end();
  }
}

for (const backend of ['file', 'postgres'] as const) {
  describe(`encryption at rest: ${backend} store`, () => {
    const stub = new StubModelServer();
    let api: RunsApi;
    let longterm: OpenLongTerm;
    let databaseUrl = '';
    const key = `k1:${randomBytes(32).toString('base64')}`;

    before(async () => {
      if (backend === 'postgres') databaseUrl = await createDatabase();
      const config = testConfig({ THREADLINE_ENCRYPTION_KEY: key, ...(backend === 'postgres' ? { MEMORY_STORE: 'postgres', DATABASE_URL: databaseUrl } : { MEMORY_STORE: 'file' }) });
      longterm = await openLongTerm(config);
      api = await startRunsApi(stub, { config, app: { longterm: { longterm: longterm.longterm, onImported: async () => null } } });
    });
    after(async () => {
      await api?.stop();
      await longterm?.close();
      if (backend === 'postgres') await dropDatabases();
    });

    test('after a run and an import, no file or row holds the goal, tool arguments, tool result, answer or imported message in plain text; search finds the import', async () => {
      const goal = 'keep SECRET-GOAL-31 in my notes';
      stub.script(goal, {
        execution_plan: [{ steps: [toolStep('notes_write', { key: 'pin', value: 'SECRET-PIN-4711' }), toolStep('notes_read', { key: 'pin' }), respondStep] }],
        replan_decision: [cont, cont],
        final_answer: [answer('Stored SECRET-ANSWER-9.')],
      });
      const userId = `alice-${randomBytes(3).toString('hex')}`;
      const started = await requestJson<{ runId: string }>(api.url, 'POST', '/v1/runs', { userId, goal });
      assert.equal(started.status, 201);
      const done = await waitFor('the run to complete', async () => {
        const res = await requestJson<{ status: string; finalAnswer: string | null; observations: { content: string }[] }>(api.url, 'GET', `/v1/runs/${started.body.runId}`);
        return res.body.status === 'completed' ? res.body : null;
      });
      assert.equal(done.finalAnswer, 'Stored SECRET-ANSWER-9.');
      assert.ok(done.observations.some((o) => o.content.includes('SECRET-PIN-4711')));

      const imported = await requestJson<{ imported: number }>(api.url, 'POST', `/v1/users/${userId}/memory/import`, {
        conversations: [{ sessionId: 'trip', messages: [{ id: 'ext-1', role: 'user', text: 'Our Zanzibar-Quokka expedition leaves from the northern harbour.' }] }],
      });
      assert.equal(imported.status, 201);
      const search = await requestJson<{ results: SearchHit[] }>(api.url, 'POST', `/v1/users/${userId}/memory/search`, { query: 'where does the quokka expedition leave from?', k: 3 });
      assert.equal(search.status, 200);
      assert.equal(search.body.results[0]?.id, 'ext-1');
      assert.match(search.body.results[0]?.text ?? '', /Zanzibar-Quokka/);
      await longterm.longterm.flushReads();

      const stored = [...(await filesUnder(api.env.config.dataDir)), ...(backend === 'postgres' ? await rowsOf(databaseUrl) : [])];
      const words = stored.reduce((n, s) => n + s.text.length, 0);
      assert.ok(words > 2000, `only ${words} characters stored: the run wrote to another place`);
      assert.ok(
        stored.some((s) => s.text.includes('"$sealed"')),
        'sealed values are stored',
      );
      // The analyzed terms too (the full-text index's words): lower case, as the analyzer folds them.
      for (const secret of [...SECRETS, 'zanzibar', 'quokka']) {
        const leak = stored.find((s) => s.text.includes(secret));
        assert.equal(leak, undefined, `"${secret}" is stored in plain text in ${leak?.file}: ${leak?.text.slice(Math.max(0, leak.text.indexOf(secret) - 200), leak.text.indexOf(secret) + 100)}`);
      }
    });
  });
}
