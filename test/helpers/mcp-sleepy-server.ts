/**
 * A small stdio MCP server for the tests that need a call in flight: `sleep` writes the server's
 * pid to $SLEEPY_MARKER when it starts and then waits (so a test can kill the process mid-call);
 * `pid` says which process answers (so a test sees the restart) and the call's idempotency key. Run with `node --import tsx`.
 */
import { writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';

const server = new McpServer({ name: 'sleepy', version: '1.0.0' });
server.registerTool('sleep', { description: 'Waits ms milliseconds.', inputSchema: { ms: z.number().int().min(0) } }, async ({ ms }, extra) => {
  if (process.env.SLEEPY_MARKER) writeFileSync(process.env.SLEEPY_MARKER, String(process.pid));
  await sleep(ms, undefined, { signal: extra.signal }).catch(() => undefined);
  return { content: [{ type: 'text', text: `slept ${ms} ms` }] };
});
server.registerTool('pid', { description: 'The process id of this server, and the idempotency key the call came with.', inputSchema: {} }, async (_args, extra) => {
  const result = { pid: process.pid, key: extra._meta?.['threadline/idempotency-key'] ?? null };
  return { content: [{ type: 'text', text: JSON.stringify(result) }], structuredContent: result };
});
void server.connect(new StdioServerTransport());
