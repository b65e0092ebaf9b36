/**
 * MCP servers for the tests: the official filesystem and memory servers (dev dependencies, started
 * with this node, never downloaded), the sleepy test server, a Streamable HTTP server built with
 * the SDK's server classes in this process, and the mcp.json that names them.
 */
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';

const nodeServer = (script: string, args: string[] = [], env: Record<string, string> = {}) => ({ command: process.execPath, args: [script, ...args], env });

/** The official filesystem server, allowed into `dir`. */
export const filesystemServer = (dir: string) => nodeServer(require.resolve('@modelcontextprotocol/server-filesystem/dist/index.js'), [dir]);
/** The official memory (knowledge graph) server, keeping its graph in `file`. */
export const memoryServer = (file: string) => nodeServer(require.resolve('@modelcontextprotocol/server-memory/dist/index.js'), [], { MEMORY_FILE_PATH: file });
/** The sleepy server (test/helpers/mcp-sleepy-server.ts), writing its pid to `marker` when a sleep starts. */
export const sleepyServer = (marker: string) => ({ command: process.execPath, args: ['--import', 'tsx', path.join(__dirname, 'mcp-sleepy-server.ts')], env: { SLEEPY_MARKER: marker } });

/** Writes `{mcpServers}` to `dir/mcp.json` and returns its path. */
export function writeMcpConfig(dir: string, mcpServers: Record<string, unknown>): string {
  const file = path.join(dir, 'mcp.json');
  writeFileSync(file, JSON.stringify({ mcpServers }, null, 2));
  return file;
}

export interface HttpMcpServer {
  url: string;
  /** The server of every session so far (one per connected client). */
  sessions: McpServer[];
  stop(): Promise<void>;
}

/** A Streamable HTTP MCP server on a free port; `setup` registers the tools of each session's server. */
export async function startHttpMcpServer(setup: (server: McpServer) => void): Promise<HttpMcpServer> {
  const transports = new Map<string, StreamableHTTPServerTransport>();
  const sessions: McpServer[] = [];
  const httpServer = http.createServer((req, res) => {
    void (async () => {
      const id = req.headers['mcp-session-id'];
      let transport = typeof id === 'string' ? transports.get(id) : undefined;
      if (!transport) {
        const created = new StreamableHTTPServerTransport({ sessionIdGenerator: () => randomUUID(), onsessioninitialized: (sid) => void transports.set(sid, created) });
        const server = new McpServer({ name: 'web', version: '1.0.0' });
        setup(server);
        sessions.push(server);
        await server.connect(created);
        transport = created;
      }
      await transport.handleRequest(req, res);
    })().catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500).end(String(err));
    });
  });
  await new Promise<void>((resolve) => httpServer.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(httpServer.address() as AddressInfo).port}/mcp`,
    sessions,
    async stop() {
      await Promise.all(sessions.map((s) => s.close().catch(() => undefined)));
      httpServer.closeAllConnections();
      await new Promise<void>((resolve) => httpServer.close(() => resolve()));
    },
  };
}
