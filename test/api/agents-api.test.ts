/**
 * `GET /v1/agents` over real HTTP, from the API server as `npm run api` starts it (startApi):
 * the profiles of AGENTS_CONFIG, behind the same authentication as every route.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import pino from 'pino';
import { startApi } from '../../src/api/server';
import { requestJson } from '../helpers/http';
import { testConfig } from '../helpers/temporal-env';

const silent = pino({ level: 'silent' });
const ADMIN_KEY = 'admin-bootstrap-key-for-agents-01';

test('GET /v1/agents lists the configured agents, only with a valid key', async () => {
  const config = testConfig({ PORT: '0', THREADLINE_AUTH: 'apikey', THREADLINE_ADMIN_KEY: ADMIN_KEY });
  const file = path.join(config.dataDir, 'team.json');
  writeFileSync(
    file,
    JSON.stringify({
      agents: [
        { name: 'researcher', description: 'Looks things up.', instructions: 'secret instructions', tools: ['calculator', 'notes_read'], model: 'small-model' },
        { name: 'organiser', description: 'Organises.', instructions: 'more secret instructions', engine: 'tree' },
      ],
    }),
  );
  const api = await startApi({ ...config, AGENTS_CONFIG: file }, { logger: silent });
  try {
    const anonymous = await requestJson<{ error: { code: string } }>(api.url, 'GET', '/v1/agents');
    assert.equal(anonymous.status, 401);
    assert.equal(anonymous.body.error.code, 'unauthorized');
    const res = await requestJson<{ agents: unknown[] }>(api.url, 'GET', '/v1/agents', undefined, { authorization: `Bearer ${ADMIN_KEY}` });
    assert.equal(res.status, 200);
    // Name, description, tools (null: every tool), engine and model; the instructions stay on the server.
    assert.deepEqual(res.body, {
      agents: [
        { name: 'researcher', description: 'Looks things up.', tools: ['calculator', 'notes_read'], engine: 'plan', model: 'small-model' },
        { name: 'organiser', description: 'Organises.', tools: null, engine: 'tree' },
      ],
    });
  } finally {
    await api.close();
  }
});

test('without an agents file the list is empty; a bad file stops the API naming the file and field', async () => {
  const config = testConfig({ PORT: '0' });
  const api = await startApi(config, { logger: silent });
  try {
    const res = await requestJson<{ agents: unknown[] }>(api.url, 'GET', '/v1/agents');
    assert.deepEqual([res.status, res.body], [200, { agents: [] }]);
  } finally {
    await api.close();
  }
  const bad = path.join(config.dataDir, 'agents.json');
  writeFileSync(bad, JSON.stringify({ agents: [{ name: 'x', description: 'd', instructions: 'i', engine: 'graph' }] }));
  await assert.rejects(startApi(config, { logger: silent }), (err: Error) => err.message.startsWith(`${bad} is not a valid agents file:\n  agents.0.engine: `));
});
