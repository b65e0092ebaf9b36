/**
 * docker-compose.yml describes the same cluster as `npm run cluster` (scripts/cluster-settings.mjs):
 * server version, shards, databases, schema steps, dynamic config, search attributes, services, and
 * the number of workers and APIs. A change to one that is not made to the other fails here.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { before, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { parse } from 'yaml';
import { z } from 'zod';

const ROOT = path.join(__dirname, '..', '..');

const Settings = z.object({
  serverVersion: z.string(),
  uiServerVersion: z.string(),
  numHistoryShards: z.number().int().min(16),
  sqlPlugin: z.literal('postgres12'),
  databases: z.object({ temporal: z.string(), visibility: z.string(), memory: z.string() }),
  schema: z.array(z.object({ database: z.enum(['temporal', 'visibility']), dir: z.string() })),
  services: z.array(z.string()),
  namespace: z.string(),
  namespaceRetention: z.string(),
  searchAttributes: z.array(z.object({ name: z.string(), type: z.string() })),
  dynamicConfig: z.record(z.string(), z.unknown()),
  threadlineWorkers: z.number().int(),
  threadlineApis: z.number().int(),
});
type Settings = z.infer<typeof Settings>;

const Service = z.object({
  image: z.string().optional(),
  command: z.union([z.string(), z.array(z.string())]).optional(),
  entrypoint: z.union([z.string(), z.array(z.string())]).optional(),
  environment: z.record(z.string(), z.union([z.string(), z.number(), z.null()])).optional(),
  volumes: z.array(z.string()).optional(),
  deploy: z.object({ replicas: z.number().int() }).optional(),
});
type Service = z.infer<typeof Service>;
const Compose = z.object({ services: z.record(z.string(), Service) });

let cluster: Settings;
let serverEnv: Record<string, string>;
let services: Record<string, Service>;

before(async () => {
  // A plain-Node module (scripts run before `npm ci`); loaded at run time and checked at this edge.
  const mod = (await import(pathToFileURL(path.join(ROOT, 'scripts', 'cluster-settings.mjs')).href)) as { CLUSTER: unknown; serverEnvironment: (s: unknown) => unknown };
  cluster = Settings.parse(mod.CLUSTER);
  serverEnv = z.record(z.string(), z.string()).parse(mod.serverEnvironment(mod.CLUSTER));
  services = Compose.parse(parse(readFileSync(path.join(ROOT, 'docker-compose.yml'), 'utf8'), { merge: true })).services;
});

const service = (name: string): Service => {
  const s = services[name];
  assert.ok(s, `docker-compose.yml has a ${name} service`);
  return s;
};
const text = (v: string | string[] | undefined): string => (Array.isArray(v) ? v.join(' ') : (v ?? ''));
/** The default of `${VAR:-default}` in an image reference, or the literal tag. */
const tagOf = (image: string | undefined): string =>
  /:(?:\$\{[A-Z_]+:-([^}]+)\}|([^:/]+))$/
    .exec(image ?? '')
    ?.slice(1)
    .find(Boolean) ?? '';

test('every Temporal service runs alone, on the server version the CLI embeds, from the shared config', () => {
  for (const name of cluster.services) {
    const s = service(`temporal-${name}`);
    assert.match(s.image ?? '', /^temporalio\/server:/);
    assert.equal(tagOf(s.image), cluster.serverVersion, `temporal-${name} image version`);
    assert.deepEqual(s.command, [name]);
    assert.match(text(s.entrypoint), /--config etc\/threadline\/temporal --env cluster .*start --service "\$\$0"/);
    assert.ok(s.volumes?.includes('./deploy/temporal:/etc/threadline/temporal:ro'), `temporal-${name} mounts deploy/temporal`);
  }
  assert.ok(!services.temporal, 'no all-in-one temporal service beside the separate ones');
});

test('shards and databases are the cluster script’s', () => {
  for (const name of cluster.services) {
    const env = service(`temporal-${name}`).environment ?? {};
    for (const [key, value] of Object.entries(serverEnv)) assert.equal(String(env[key]), value, `temporal-${name} ${key}`);
    assert.equal(env.DYNAMIC_CONFIG_FILE_PATH, '/etc/threadline/temporal/dynamicconfig.yaml');
  }
  assert.equal(serverEnv.NUM_HISTORY_SHARDS, String(cluster.numHistoryShards));
  const url = String(service('worker').environment?.DATABASE_URL ?? '');
  assert.equal(new URL(url.replace(/\$\{[^}]+\}/g, 'x')).pathname, `/${cluster.databases.memory}`, 'the memory store has its own database');
});

test('the dynamic config file both load holds the cluster’s settings', () => {
  const file = z.record(z.string(), z.array(z.object({ value: z.unknown() }))).parse(parse(readFileSync(path.join(ROOT, 'deploy', 'temporal', 'dynamicconfig.yaml'), 'utf8')));
  assert.deepEqual(Object.fromEntries(Object.entries(file).map(([k, v]) => [k, v.map((c) => c.value)])), Object.fromEntries(Object.entries(cluster.dynamicConfig).map(([k, v]) => [k, [v]])));
});

test('the schema job runs the cluster’s schema steps with the server’s SQL tool', () => {
  const job = service('temporal-schema');
  assert.equal(job.environment?.SQL_PLUGIN, cluster.sqlPlugin);
  const lines = text(job.command)
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l.startsWith('temporal-sql-tool'));
  const expected = cluster.schema.flatMap(({ database, dir }) => {
    const db = cluster.databases[database];
    return [
      `temporal-sql-tool --db ${db} create-database --defaultdb postgres || true`,
      `temporal-sql-tool --db ${db} setup-schema -v 0.0`,
      `temporal-sql-tool --db ${db} update-schema -d "$$schema/${dir}/versioned"`,
    ];
  });
  assert.deepEqual(lines, expected);
  assert.match(text(job.command), /schema=\/etc\/temporal\/schema\/postgresql\/v12\n/);
});

test('the setup job registers the namespace and the search attributes the cluster registers', () => {
  const setup = text(service('temporal-setup').command);
  assert.match(setup, new RegExp(`namespace create .* --retention ${cluster.namespaceRetention}`));
  assert.equal(service('temporal-setup').environment?.TEMPORAL_NAMESPACE, cluster.namespace);
  const names = /for name in ([\w ]+); do/.exec(setup)?.[1]?.split(' ');
  assert.deepEqual(
    names,
    cluster.searchAttributes.map((a) => a.name),
  );
  for (const a of cluster.searchAttributes) assert.equal(a.type, 'Keyword');
  assert.match(setup, /--type Keyword/);
});

test('as many Threadline workers and APIs as the cluster, and the same Web UI version', () => {
  assert.equal(service('worker').deploy?.replicas, cluster.threadlineWorkers);
  const apis = Object.entries(services).filter(([, s]) => text(s.command).includes('dist/api/server.js'));
  assert.equal(apis.length, cluster.threadlineApis);
  for (const [name, s] of [['worker', service('worker')], ...apis] as const) {
    assert.equal(s.environment?.MEMORY_STORE, 'postgres', `${name} MEMORY_STORE`);
    assert.equal(s.environment?.TEMPORAL_ADDRESS, 'temporal-frontend:7233', `${name} TEMPORAL_ADDRESS`);
    // The workers are versions of one deployment, as in `npm run cluster`.
    assert.equal(s.environment?.WORKER_DEPLOYMENT, 'threadline', `${name} WORKER_DEPLOYMENT`);
  }
  assert.equal(tagOf(service('temporal-ui').image), cluster.uiServerVersion);
});
