/**
 * The MCP tool source against real stdio servers, without Temporal: the per-server call timeout,
 * cancellation, and servers that cannot start (reported with what they printed, never fatal).
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { McpConfigError } from '../../src/mcp/config';
import { McpToolSource, mcpToolSourceFor } from '../../src/mcp/tool-source';
import { ToolRegistry } from '../../src/tools/registry';
import { sleepyServer, writeMcpConfig } from '../helpers/mcp-servers';
import { waitFor } from '../helpers/temporal-env';
import { toolContext } from '../helpers/tool-context';

const dir = mkdtempSync(path.join(os.tmpdir(), 'threadline-mcp-source-'));
const marker = path.join(dir, 'sleep-started');
const patientMarker = path.join(dir, 'patient-sleep-started');
const logged: string[] = [];
const noMedia = async (): Promise<string> => {
  throw new Error('these servers return no media');
};
const source = new McpToolSource(
  {
    sleepy: { ...sleepyServer(marker), timeoutMs: 1000, transport: 'stdio' },
    // The same server with a long timeout: a call that is cancelled is still under way when the cancellation comes.
    patient: { ...sleepyServer(patientMarker), timeoutMs: 60_000, transport: 'stdio' },
    missing: { command: path.join(dir, 'no-such-program'), args: [], env: {}, transport: 'stdio' },
    crashing: { command: process.execPath, args: ['-e', 'console.error("bad API token"); process.exit(3)'], env: {}, transport: 'stdio' },
  },
  { callTimeoutMs: 60_000, media: noMedia, connectTimeoutMs: 20_000, log: (m) => logged.push(m) },
);
const registry = new ToolRegistry([], [source]);
after(() => source.close());

test('servers that cannot start are reported (with their last output) and leave no tools; the others start', async () => {
  await source.start();
  assert.deepEqual(registry.names().sort(), ['patient.pid', 'patient.sleep', 'sleepy.pid', 'sleepy.sleep']);
  assert.ok(
    logged.some((m) => /^MCP server "missing" could not be started: .*ENOENT/.test(m)),
    logged.join('\n'),
  );
  assert.ok(
    logged.some((m) => /^MCP server "crashing" could not be started: .*its last output: bad API token/.test(m)),
    logged.join('\n'),
  );
});

test("a call past the server's timeoutMs is a failed outcome; the server stays up for the next call", async () => {
  const pid = source.server('sleepy')?.pid;
  const outcome = await registry.run('sleepy.sleep', { ms: 30_000 }, toolContext());
  assert.deepEqual(outcome, { ok: false, error: 'sleepy.sleep failed: no reply from MCP server "sleepy" within 1000 ms' });
  // The step's idempotency key goes along in the call's _meta.
  assert.deepEqual(await registry.run('sleepy.pid', {}, toolContext()), { ok: true, result: { pid, key: 'run-1/s1/1' } });
});

test('cancelling the step aborts the call (the cancellation propagates, it is no tool failure)', async () => {
  rmSync(patientMarker, { force: true });
  const controller = new AbortController();
  // Far within the server's timeout, and long enough that the cancellation lands while it runs however slow the machine.
  const call = registry.run('patient.sleep', { ms: 30_000 }, toolContext({ signal: controller.signal }));
  await waitFor('the sleep call to start', async () => existsSync(patientMarker));
  const cancelledAt = Date.now();
  controller.abort(new Error('step cancelled'));
  await assert.rejects(call, /step cancelled/);
  assert.ok(Date.now() - cancelledAt < 20_000, 'the call ended when it was cancelled, not when the sleep did');
  assert.equal((await registry.run('patient.pid', {}, toolContext())).ok, true);
});

test('an invalid mcp.json stops the worker from starting, naming the file and the problem; an absent one means no servers', () => {
  const config = { MCP_CALL_TIMEOUT_MS: 1000, dataDir: dir };
  assert.equal(mcpToolSourceFor(config, noMedia), null);
  const file = writeMcpConfig(dir, { fs: { args: ['x'] } });
  assert.throws(
    () => mcpToolSourceFor({ ...config, MCP_CONFIG: file }, noMedia),
    (err: unknown) => err instanceof McpConfigError && err.message.includes(`${file} is not a valid MCP configuration`) && /mcpServers\.fs\.command/.test(err.message),
  );
  writeFileSync(file, readFileSync(file, 'utf8').replace('"args"', '"command": "x", "args"'));
  assert.ok(mcpToolSourceFor({ ...config, MCP_CONFIG: file }, noMedia) instanceof McpToolSource);
});
