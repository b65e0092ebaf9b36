/**
 * MCP servers as a tool source: every tool of every configured server, named `<server>.<tool>`,
 * its arguments checked against the tool's own JSON Schema (Ajv), its result turned into the
 * step's observation with binaries saved (the worker: in its blob store) and referenced. The set follows
 * the servers: listed at start, again when one announces a change.
 */
import { existsSync } from 'node:fs';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import type { Config } from '../config';
import { jsonSchemaInput } from '../tools/json-schema-input';
import type { ToolSource } from '../tools/source';
import { defineTool, type ToolDefinition } from '../tools/tool';
import { loadMcpConfig, mcpConfigPath, type McpServerSpec } from './config';
import { resultText, resultValue, type SaveMedia } from './results';
import type { McpServerConnection, McpServerOptions } from './server-connection';

/** Longest tool name a plan step may carry (src/planning/step-spec.ts). */
const MAX_TOOL_NAME = 100;

export interface McpToolSourceOptions extends Omit<McpServerOptions, 'onTools'> {
  /** Where images, audio and blobs from tool results are saved (the worker: its blob store, sealed and swept). */
  media: SaveMedia;
}

export class McpToolSource implements ToolSource {
  readonly name = 'mcp';
  private readonly servers = new Map<string, McpServerConnection>();
  private readonly listeners = new Set<() => void>();
  private current: ToolDefinition[] = [];
  private readonly save: SaveMedia;
  private readonly log: (message: string) => void;

  constructor(specs: Record<string, McpServerSpec>, options: McpToolSourceOptions) {
    this.save = options.media;
    this.log = options.log ?? ((m) => console.warn(m));
    // The MCP SDK (≈ 4 MB of heap) is loaded only by a worker that has servers to connect to.
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- an import would load it with this module
    const { McpServerConnection } = require('./server-connection') as typeof import('./server-connection');
    for (const [name, spec] of Object.entries(specs)) {
      this.servers.set(name, new McpServerConnection(name, spec, { ...options, onTools: () => this.rebuild() }));
    }
  }

  /** A configured server's connection (tests and the benchmark look at its process). */
  server(name: string): McpServerConnection | undefined {
    return this.servers.get(name);
  }

  /** Starts every server and lists its tools; one that cannot start is reported and retried, not fatal. */
  async start(): Promise<void> {
    await Promise.all([...this.servers.values()].map((s) => s.start()));
  }

  async close(): Promise<void> {
    await Promise.all([...this.servers.values()].map((s) => s.close()));
  }

  /** One line for the worker's start-up message: each server and how many tools it offers, or that it is down. */
  summary(): string {
    return [...this.servers.values()].map((s) => `${s.name} (${s.connected ? `${s.tools.length} tools` : 'not started'})`).join(', ');
  }

  tools(): readonly ToolDefinition[] {
    return this.current;
  }

  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private rebuild(): void {
    this.current = [...this.servers.values()].flatMap((server) => server.tools.flatMap((tool) => this.define(server, tool) ?? []));
    for (const listener of this.listeners) listener();
  }

  /** One tool as a ToolDefinition, or null (reported) when it cannot be offered. */
  private define(server: McpServerConnection, tool: Tool): ToolDefinition | null {
    const name = `${server.name}.${tool.name}`;
    if (name.length > MAX_TOOL_NAME) {
      this.log(`MCP tool ${name} left out: names are at most ${MAX_TOOL_NAME} characters`);
      return null;
    }
    let input: ReturnType<typeof jsonSchemaInput>;
    try {
      input = jsonSchemaInput(tool.inputSchema);
    } catch (err) {
      this.log(`MCP tool ${name} left out: its input schema does not compile (${err instanceof Error ? err.message : String(err)})`);
      return null;
    }
    return defineTool({
      name,
      description: tool.description ?? tool.title ?? `the tool ${tool.name} of the MCP server ${server.name}`,
      input,
      parameters: tool.inputSchema,
      handler: async (args, ctx) => {
        const result = await server.call(tool.name, args, ctx.signal, ctx.idempotencyKey);
        if (result.isError) throw new Error(resultText(result) || 'the tool reported an error');
        return resultValue(result, this.save);
      },
    });
  }
}

/**
 * The MCP tool source a worker's configuration asks for (MCP_CONFIG, else DATA_DIR/mcp.json), or
 * null when there is no such file. An invalid file throws McpConfigError, naming every problem.
 */
export function mcpToolSourceFor(config: Pick<Config, 'MCP_CONFIG' | 'MCP_CALL_TIMEOUT_MS' | 'dataDir'>, media: SaveMedia): McpToolSource | null {
  const file = mcpConfigPath(config);
  if (!existsSync(file)) {
    if (config.MCP_CONFIG) console.warn(`MCP_CONFIG names ${file}, which does not exist: no MCP servers`);
    return null;
  }
  const specs = loadMcpConfig(file);
  return new McpToolSource(specs, { callTimeoutMs: config.MCP_CALL_TIMEOUT_MS, media });
}
