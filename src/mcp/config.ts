/**
 * The MCP servers' configuration: one JSON file in the `mcpServers` format Claude Desktop, Cursor
 * and VS Code use — `command`/`args`/`env` (and `cwd`) start a server over stdio, `url` (and
 * `headers`) reach one over Streamable HTTP. `timeoutMs` (per call) and `disabled` are ours.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';

/** A server's name is the prefix of its tools' names (`<server>.<tool>`). */
const ServerName = z.string().regex(/^[A-Za-z0-9_-]{1,40}$/, 'a server name is 1–40 letters, digits, "_" or "-" (it prefixes its tools: <server>.<tool>)');

const common = {
  /** Time one call may take; MCP_CALL_TIMEOUT_MS when absent. */
  timeoutMs: z.number().int().positive().max(600_000).optional(),
  /** A disabled server is not started. @default false */
  disabled: z.boolean().optional(),
};

const StdioServer = z
  .looseObject({
    type: z.literal('stdio').optional(),
    command: z.string().min(1),
    args: z.array(z.string()).default([]),
    env: z.record(z.string(), z.string()).default({}),
    cwd: z.string().min(1).optional(),
    ...common,
  })
  .transform((s) => ({ ...s, transport: 'stdio' as const }));

const HttpServer = z
  .looseObject({
    type: z.enum(['http', 'streamable-http', 'streamableHttp']).optional(),
    url: z.url({ protocol: /^https?$/ }),
    headers: z.record(z.string(), z.string()).default({}),
    ...common,
  })
  .transform((s) => ({ ...s, transport: 'http' as const }));

/** A server with a `url` is reached over HTTP, any other is started over stdio: each is checked as what it says it is. */
const ServerSpec = z.unknown().transform((value, ctx) => {
  const parsed = (typeof value === 'object' && value !== null && 'url' in value ? HttpServer : StdioServer).safeParse(value);
  if (parsed.success) return parsed.data;
  for (const issue of parsed.error.issues) {
    const message = issue.path[0] === 'command' && issue.code === 'invalid_type' ? 'a server needs "command" (stdio) or "url" (Streamable HTTP)' : issue.message;
    ctx.addIssue({ code: 'custom', message, path: issue.path });
  }
  return z.NEVER;
});

export const McpConfigSchema = z.object({ mcpServers: z.record(ServerName, ServerSpec) });

export type McpServerSpec = z.output<typeof ServerSpec>;
export type McpConfig = z.output<typeof McpConfigSchema>;

export class McpConfigError extends Error {
  override readonly name = 'McpConfigError';
}

/** Parses the file's text; throws McpConfigError naming the file and every problem. */
export function parseMcpConfig(text: string, file: string): McpConfig {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new McpConfigError(`${file} is not valid JSON: ${err instanceof Error ? err.message : String(err)}`);
  }
  const parsed = McpConfigSchema.safeParse(json);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.') || '(top level)'}: ${i.code === 'invalid_key' ? (i.issues[0]?.message ?? i.message) : i.message}`);
    throw new McpConfigError(`${file} is not a valid MCP configuration:\n${lines.join('\n')}`);
  }
  return parsed.data;
}

/** Where the configuration is: MCP_CONFIG, else `DATA_DIR/mcp.json`. */
export const mcpConfigPath = (config: { MCP_CONFIG?: string | undefined; dataDir: string }): string => path.resolve(config.MCP_CONFIG ?? path.join(config.dataDir, 'mcp.json'));

/** The configured servers, the disabled ones left out; none when the file does not exist. */
export function loadMcpConfig(file: string): Record<string, McpServerSpec> {
  if (!existsSync(file)) return {};
  const { mcpServers } = parseMcpConfig(readFileSync(file, 'utf8'), file);
  return Object.fromEntries(Object.entries(mcpServers).filter(([, spec]) => !spec.disabled));
}
