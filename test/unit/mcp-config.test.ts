/** The mcpServers configuration file (src/mcp/config.ts): what it accepts and how it explains what it refuses. */
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { loadMcpConfig, mcpConfigPath, McpConfigError, parseMcpConfig } from '../../src/mcp/config';

test('stdio and Streamable HTTP servers in the widely used format, with defaults', () => {
  const config = parseMcpConfig(
    JSON.stringify({
      mcpServers: {
        filesystem: { command: 'npx', args: ['-y', '@modelcontextprotocol/server-filesystem', '/tmp'] },
        memory: { command: 'node', env: { MEMORY_FILE_PATH: '/tmp/m.jsonl' }, timeoutMs: 5000 },
        remote: { url: 'https://example.com/mcp', headers: { Authorization: 'Bearer x' } },
        typed: { type: 'http', url: 'http://127.0.0.1:9000/mcp', description: "other clients' keys are kept" },
      },
    }),
    'mcp.json',
  );
  assert.deepEqual(config.mcpServers.filesystem, { command: 'npx', args: ['-y', '@modelcontextprotocol/server-filesystem', '/tmp'], env: {}, transport: 'stdio' });
  assert.deepEqual(config.mcpServers.memory, { command: 'node', args: [], env: { MEMORY_FILE_PATH: '/tmp/m.jsonl' }, timeoutMs: 5000, transport: 'stdio' });
  assert.equal(config.mcpServers.remote?.transport, 'http');
  assert.equal(config.mcpServers.typed?.transport, 'http');
});

test('every problem is named with its place, in one error', () => {
  const bad = { mcpServers: { 'has space': { command: 'x' }, nothing: {}, args: { command: 'x', args: [1] }, ftp: { url: 'ftp://host/mcp' }, slow: { command: 'x', timeoutMs: -1 } } };
  assert.throws(
    () => parseMcpConfig(JSON.stringify(bad), '/etc/mcp.json'),
    (err: unknown) => {
      assert.ok(err instanceof McpConfigError);
      assert.match(err.message, /^\/etc\/mcp\.json is not a valid MCP configuration:/);
      assert.match(err.message, /mcpServers\.has space: a server name is 1–40 letters/);
      assert.match(err.message, /mcpServers\.nothing\.command: a server needs "command" \(stdio\) or "url" \(Streamable HTTP\)/);
      assert.match(err.message, /mcpServers\.args\.args\.0: .*expected string/);
      assert.match(err.message, /mcpServers\.ftp\.url: /);
      assert.match(err.message, /mcpServers\.slow\.timeoutMs: /);
      return true;
    },
  );
  assert.throws(() => parseMcpConfig('{"mcpServers": ', 'mcp.json'), /^McpConfigError: mcp\.json is not valid JSON/);
  assert.throws(() => parseMcpConfig('{"servers": {}}', 'mcp.json'), /mcpServers: /);
});

test('the file is MCP_CONFIG or DATA_DIR/mcp.json; absent means no servers; disabled servers are left out', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'threadline-mcp-config-'));
  assert.equal(mcpConfigPath({ dataDir: dir }), path.join(dir, 'mcp.json'));
  assert.equal(mcpConfigPath({ MCP_CONFIG: '/srv/tools.json', dataDir: dir }), '/srv/tools.json');
  assert.deepEqual(loadMcpConfig(path.join(dir, 'mcp.json')), {});
  writeFileSync(path.join(dir, 'mcp.json'), JSON.stringify({ mcpServers: { on: { command: 'a' }, off: { command: 'b', disabled: true } } }));
  assert.deepEqual(Object.keys(loadMcpConfig(path.join(dir, 'mcp.json'))), ['on']);
});
