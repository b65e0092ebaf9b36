/** Environment parsing (DESIGN.md §4 "Environment"): defaults, coercion and readable errors. */
import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';
import os from 'node:os';
import { cachedWorkflowsFor, loadConfig, runUiUrl } from '../../src/config';

/** The error message loadConfig throws for `env`. */
function problem(env: NodeJS.ProcessEnv): string {
  try {
    loadConfig(env);
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
  return assert.fail(`accepted ${JSON.stringify(env)}`);
}

test('an empty environment gives the documented defaults and no model server', () => {
  const c = loadConfig({});
  assert.equal(c.PORT, 3000);
  assert.equal(c.HOST, '127.0.0.1');
  assert.equal(c.TEMPORAL_NAMESPACE, 'default');
  assert.equal(c.TEMPORAL_UI_PORT, 8233);
  assert.equal(c.TASK_QUEUE, 'threadline');
  assert.equal(c.temporalAddress, '127.0.0.1:7233');
  assert.equal(c.dataDir, path.resolve('./data'));
  assert.equal(c.uiUrl, 'http://127.0.0.1:8233');
  assert.equal(c.OPENAI_API_KEY, undefined);
  assert.equal(c.OPENAI_BASE_URL, undefined);
  assert.ok(c.AGENT_MODEL.length > 0);
  assert.equal(c.MAX_STEPS, 25);
  assert.equal(c.MODEL_REPAIR_ATTEMPTS, 3);
  assert.equal(c.MAX_SUBPLAN_DEPTH, 2);
});

test('numbers are coerced from strings and settings are carried through', () => {
  const c = loadConfig({
    PORT: '8080',
    TEMPORAL_UI_PORT: '9233',
    MAX_STEPS: '7',
    MODEL_TIMEOUT_MS: '1500',
    TEMPORAL_ADDRESS: 'temporal.internal:7233',
    TEMPORAL_NAMESPACE: 'prod',
    TASK_QUEUE: 'agents',
    DATA_DIR: '/var/lib/threadline',
    OPENAI_API_KEY: 'sk-test',
    OPENAI_BASE_URL: 'http://127.0.0.1:11434/v1',
    AGENT_MODEL: 'llama3',
  });
  assert.equal(c.PORT, 8080);
  assert.equal(typeof c.PORT, 'number');
  assert.equal(c.MAX_STEPS, 7);
  assert.equal(c.MODEL_TIMEOUT_MS, 1500);
  assert.equal(c.temporalAddress, 'temporal.internal:7233');
  assert.equal(c.uiUrl, 'http://127.0.0.1:9233');
  assert.equal(c.dataDir, '/var/lib/threadline');
  assert.equal(c.OPENAI_API_KEY, 'sk-test');
  assert.equal(c.OPENAI_BASE_URL, 'http://127.0.0.1:11434/v1');
  assert.equal(c.AGENT_MODEL, 'llama3');
  assert.equal(loadConfig({ TEMPORAL_UI_URL: 'https://temporal.example.com' }).uiUrl, 'https://temporal.example.com');
});

test('a bad PORT gives an error naming PORT', () => {
  for (const PORT of ['abc', '70000', '-1', '80.5']) {
    const message = problem({ PORT });
    assert.match(message, /^Invalid configuration:/, PORT);
    assert.match(message, /\bPORT\b/, PORT);
  }
});

test('every bad variable is listed in one error', () => {
  const message = problem({ PORT: 'x', MAX_STEPS: '0', OPENAI_BASE_URL: 'not a url' });
  assert.match(message, /^ {2}PORT: /m);
  assert.match(message, /^ {2}MAX_STEPS: /m);
  assert.match(message, /^ {2}OPENAI_BASE_URL: /m);
});

test('blank OPENAI_BASE_URL, OPENAI_API_KEY and TEMPORAL_ADDRESS are treated as unset', () => {
  const c = loadConfig({ OPENAI_BASE_URL: '', OPENAI_API_KEY: '', TEMPORAL_ADDRESS: '' });
  assert.equal(c.OPENAI_BASE_URL, undefined);
  assert.equal(c.OPENAI_API_KEY, undefined);
  assert.equal(c.temporalAddress, '127.0.0.1:7233');
});

test('a blank PORT is treated as unset, not as port 0', () => {
  // `PORT=` in a .env file or compose file must not make the API listen on a random port.
  assert.equal(loadConfig({ PORT: '' }).PORT, 3000);
  assert.equal(loadConfig({ TEMPORAL_UI_PORT: '' }).uiUrl, 'http://127.0.0.1:8233');
});

test('every blank variable is unset: names and numbers take their defaults, not "" or 0', () => {
  const blank = Object.fromEntries(
    ['HOST', 'TEMPORAL_NAMESPACE', 'TASK_QUEUE', 'DATA_DIR', 'AGENT_MODEL', 'MAX_SUBPLAN_DEPTH', 'SESSION_IDLE_MINUTES', 'MAX_STEPS', 'MEMORY_STORE'].map((k) => [k, '']),
  );
  const c = loadConfig(blank);
  const defaults = loadConfig({});
  for (const key of Object.keys(blank) as (keyof typeof c)[]) assert.deepEqual(c[key], defaults[key], key);
  assert.equal(c.MAX_SUBPLAN_DEPTH, 2);
  assert.equal(c.TASK_QUEUE, 'threadline');
});

test('runUiUrl links to the run in the Web UI, escaping the namespace and run id', () => {
  const c = loadConfig({ TEMPORAL_NAMESPACE: 'team a' });
  assert.equal(runUiUrl(c, 'run-ada-1'), 'http://127.0.0.1:8233/namespaces/team%20a/workflows/run-ada-1');
  assert.equal(runUiUrl(c, 'run/x#1'), 'http://127.0.0.1:8233/namespaces/team%20a/workflows/run%2Fx%231');
});

test("the worker's workflow cache follows the machine's memory unless WORKER_CACHED_WORKFLOWS sets it", () => {
  const GiB = 2 ** 30;
  assert.equal(cachedWorkflowsFor(1 * GiB), 20);
  assert.equal(cachedWorkflowsFor(8 * GiB), 20);
  assert.equal(cachedWorkflowsFor(24 * GiB), 48);
  assert.equal(cachedWorkflowsFor(256 * GiB), 500);
  assert.equal(loadConfig({}).workerCachedWorkflows, cachedWorkflowsFor(os.totalmem()));
  assert.equal(loadConfig({ WORKER_CACHED_WORKFLOWS: '0' }).workerCachedWorkflows, 0);
  assert.equal(loadConfig({ WORKER_CACHED_WORKFLOWS: '250' }).workerCachedWorkflows, 250);
  assert.match(problem({ WORKER_CACHED_WORKFLOWS: 'lots' }), /WORKER_CACHED_WORKFLOWS/);
});
