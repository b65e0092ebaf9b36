/** docker-compose.yml as deployed: no default secrets, auth and encryption on, nothing public, the admin key the APIs' only. */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { parse } from 'yaml';
import { z } from 'zod';

const compose = readFileSync(path.join(__dirname, '..', '..', 'docker-compose.yml'), 'utf8');
const lines = compose.split('\n').filter((l) => !l.trim().startsWith('#'));

test('docker-compose.yml has no default secrets and turns auth and encryption on', () => {
  for (const secret of ['POSTGRES_PASSWORD', 'THREADLINE_DB_PASSWORD', 'THREADLINE_ADMIN_KEY', 'THREADLINE_ENCRYPTION_KEY']) {
    const uses = lines.filter((l) => l.includes(`\${${secret}`));
    assert.ok(uses.length > 0, `${secret} is used`);
    for (const use of uses) assert.match(use, new RegExp(`\\$\\{${secret}:\\?`), `${secret} must be required, not defaulted: ${use.trim()}`);
  }
  assert.ok(
    lines.some((l) => /^\s*THREADLINE_AUTH:\s*apikey\s*$/.test(l)),
    'THREADLINE_AUTH: apikey',
  );
});

test('docker-compose.yml publishes nothing beyond loopback: the API is reached through a TLS proxy', () => {
  const published = lines.filter((l) => /^\s*-\s*"[^"]*:\d+"\s*(#.*)?$/.test(l)).map((l) => l.trim());
  assert.ok(
    published.some((p) => p.endsWith(':3000"')),
    'the API is published',
  );
  assert.deepEqual(
    published.filter((p) => !p.startsWith('- "127.0.0.1:')),
    [],
  );
});

const Services = z.object({ services: z.record(z.string(), z.object({ command: z.array(z.string()).optional(), environment: z.record(z.string(), z.unknown()).optional() })) });

test('only the APIs get the admin key: not the workers, which run tools and MCP servers a model chooses', () => {
  const { services } = Services.parse(parse(compose, { merge: true }));
  const runs = (s: { command?: string[] }, entry: string) => (s.command ?? []).includes(entry);
  const workers = Object.values(services).filter((s) => runs(s, 'dist/worker.js'));
  const apis = Object.values(services).filter((s) => runs(s, 'dist/api/server.js'));
  assert.ok(workers.length > 0 && apis.length > 0);
  for (const worker of workers) assert.equal(worker.environment?.THREADLINE_ADMIN_KEY, undefined);
  for (const api of apis) assert.match(String(api.environment?.THREADLINE_ADMIN_KEY), /^\$\{THREADLINE_ADMIN_KEY:\?/);
});

test('npm start and npm run cluster start their workers without the admin key', async () => {
  const root = path.join(__dirname, '..', '..');
  const lib = (await import(pathToFileURL(path.join(root, 'scripts', 'lib.mjs')).href)) as { workerEnv: (env: Record<string, string>) => Record<string, string> };
  assert.deepEqual(lib.workerEnv({ THREADLINE_ADMIN_KEY: 'k', THREADLINE_ENCRYPTION_KEY: 'e', PATH: '/bin' }), { MALLOC_ARENA_MAX: '2', THREADLINE_ENCRYPTION_KEY: 'e', PATH: '/bin' });
  assert.equal(lib.workerEnv({ MALLOC_ARENA_MAX: '4' }).MALLOC_ARENA_MAX, '4', "an operator's own setting wins");
  for (const script of ['start.mjs', 'cluster.mjs']) {
    const starts = readFileSync(path.join(root, 'scripts', script), 'utf8')
      .split('\n')
      .filter((l) => /startChild\(.*nodeWorker\(/.test(l));
    assert.ok(starts.length > 0, script);
    for (const line of starts) assert.match(line, /workerEnv\(/, `${script}: ${line.trim()}`);
  }
});

test('Threadline connects to PostgreSQL as its own role, not as Temporal’s superuser', () => {
  const { services } = Services.parse(parse(compose, { merge: true }));
  const temporalUser = String(services.postgresql?.environment?.POSTGRES_USER);
  const threadline = Object.values(services).filter((s) => s.environment?.DATABASE_URL !== undefined);
  assert.ok(threadline.length >= 3, 'the workers and the APIs');
  for (const s of threadline) {
    const url = new URL(String(s.environment?.DATABASE_URL).replace(/\$\{[^}]+\}/g, 'x'));
    assert.equal(url.username, 'threadline');
    assert.notEqual(url.username, temporalUser);
    assert.match(String(s.environment?.DATABASE_URL), /^postgres:\/\/threadline:\$\{THREADLINE_DB_PASSWORD:\?/);
  }
  const setup = (services['threadline-db-setup']?.command ?? []).join('\n');
  assert.match(setup, /CREATE ROLE threadline LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE/);
  assert.match(setup, /CREATE DATABASE threadline OWNER threadline/);
});

test('every way the worker starts gives it the same node flags and malloc setting, and the API its source-map flags', async () => {
  const root = path.join(__dirname, '..', '..');
  const lib = (await import(pathToFileURL(path.join(root, 'scripts', 'lib.mjs')).href)) as {
    WORKER_NODE_FLAGS: readonly string[];
    WORKER_ENV_DEFAULTS: Readonly<Record<string, string>>;
    SOURCE_MAP_FLAGS: readonly string[];
    nodeWorker: () => string[];
    nodeDist: (entry: string) => string[];
  };
  assert.ok(lib.WORKER_NODE_FLAGS.includes('--max-semi-space-size=8') && lib.WORKER_NODE_FLAGS.includes('--max-old-space-size=1024'));
  const { services } = Services.parse(parse(compose, { merge: true }));
  const composeWorker = Object.values(services).find((s) => (s.command ?? []).includes('dist/worker.js'))!.command!;
  const dockerfile = readFileSync(path.join(root, 'Dockerfile'), 'utf8');
  const dockerCmd = z.array(z.string()).parse(JSON.parse(/^CMD (\[.*\])$/m.exec(dockerfile)![1]!));
  const { worker: npmWorker, api: npmApi } = z.object({ scripts: z.object({ worker: z.string(), api: z.string() }) }).parse(JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'))).scripts;
  for (const flag of lib.WORKER_NODE_FLAGS) {
    assert.ok(lib.nodeWorker().includes(flag), `nodeWorker: ${flag}`);
    assert.ok(composeWorker.includes(flag), `docker-compose.yml: ${flag}`);
    assert.ok(dockerCmd.includes(flag), `Dockerfile: ${flag}`);
    assert.ok(npmWorker.split(' ').includes(flag), `npm run worker: ${flag}`);
  }
  const composeApis = Object.values(services).filter((s) => (s.command ?? []).includes('dist/api/server.js'));
  const hook = lib.SOURCE_MAP_FLAGS.map((flag) => /^--require=\.\/dist\/(.+)\.js$/.exec(flag)?.[1]).find(Boolean);
  assert.ok(hook && existsSync(path.join(root, 'src', `${hook}.ts`)), 'the --require hook is built from src/');
  for (const flag of lib.SOURCE_MAP_FLAGS) {
    assert.ok(lib.nodeWorker().includes(flag) && lib.nodeDist('api/server').includes(flag), `scripts/lib.mjs: ${flag}`);
    assert.ok(composeWorker.includes(flag) && composeApis.every((api) => api.command!.includes(flag)), `docker-compose.yml: ${flag}`);
    assert.ok(dockerCmd.includes(flag) && dockerfile.includes(`${lib.SOURCE_MAP_FLAGS.join(' ')} dist/api/server.js`), `Dockerfile: ${flag}`);
    assert.ok(npmWorker.split(' ').includes(flag) && npmApi.split(' ').includes(flag), `npm run worker / api: ${flag}`);
  }
  for (const [name, value] of Object.entries(lib.WORKER_ENV_DEFAULTS)) {
    assert.match(dockerfile, new RegExp(`^\\s*(ENV )?${name}=${value}\\b`, 'm'), `Dockerfile: ${name}`);
    assert.ok(npmWorker.includes(`${name}=\${${name}:-${value}}`), `npm run worker: ${name}`);
  }
});
