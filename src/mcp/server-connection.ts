/**
 * One MCP server, kept connected: started over stdio or reached over Streamable HTTP with the
 * official SDK's client, its tools listed at start and again on `notifications/tools/list_changed`,
 * restarted with exponential back-off when it dies. A call needing a server that is down starts it
 * at once (one attempt per call, so a run never waits on the back-off); a call that fails — the
 * server died under it, timed out, could not be started — throws an error saying so, which the
 * registry turns into an observation the model can react to.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ErrorCode, McpError, type CallToolResult, type Tool } from '@modelcontextprotocol/sdk/types.js';
import type { McpServerSpec } from './config';

export interface McpServerOptions {
  /** Time one call may take (the spec's `timeoutMs` wins). */
  callTimeoutMs: number;
  /** Time to start a server and list its tools. @default 30 s */
  connectTimeoutMs?: number;
  /** Delays between restarts: doubling from `initialMs` up to `maxMs`. @default {initialMs: 500, maxMs: 30 s} */
  backoff?: { initialMs: number; maxMs: number };
  /** Called with the tools whenever the list read from the server differs from the last one. */
  onTools: (tools: readonly Tool[]) => void;
  /** Where connection problems are reported. @default console.warn */
  log?: (message: string) => void;
}

/** Lines of a stdio server's stderr kept, to say why it died. */
const STDERR_LINES = 10;
const CLIENT_INFO = { name: 'threadline', version: '0.1.0' };
/** The `_meta` key of a call's idempotency key (stable across retries of its step). */
export const IDEMPOTENCY_META = 'threadline/idempotency-key';

/** Waits for `promise`, giving up with `onTimeout`'s error after `ms` or when `signal` aborts. */
function bounded<T>(promise: Promise<T>, ms: number, signal: AbortSignal | undefined, onTimeout: () => Error): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', aborted);
    };
    const aborted = () => {
      done();
      reject(signal?.reason instanceof Error ? signal.reason : new Error('aborted'));
    };
    const timer = setTimeout(() => {
      done();
      reject(onTimeout());
    }, ms);
    signal?.addEventListener('abort', aborted, { once: true });
    if (signal?.aborted) aborted();
    promise.then(
      (v) => {
        done();
        resolve(v);
      },
      (e: unknown) => {
        done();
        reject(e);
      },
    );
  });
}

const message = (err: unknown) => (err instanceof Error ? err.message : String(err));

export class McpServerConnection {
  /** The tools last listed by the server; kept while it restarts, so a crash does not change the tool set. */
  tools: readonly Tool[] = [];
  private client: Client | null = null;
  private transport: Transport | null = null;
  private connecting: Promise<Client> | null = null;
  private restartTimer: NodeJS.Timeout | null = null;
  private failures = 0;
  private closed = false;
  private lastProblem = '';
  private readonly stderr: string[] = [];
  private readonly log: (message: string) => void;

  constructor(
    readonly name: string,
    private readonly spec: McpServerSpec,
    private readonly options: McpServerOptions,
  ) {
    this.log = options.log ?? ((m) => console.warn(m));
  }

  /** The pid of a running stdio server (for tests and diagnostics). */
  get pid(): number | null {
    return this.transport instanceof StdioClientTransport ? this.transport.pid : null;
  }

  get connected(): boolean {
    return this.client !== null;
  }

  /** The first connection; a server that cannot start is reported and retried in the background, not fatal. */
  async start(): Promise<void> {
    await this.connect().catch(() => undefined);
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.restartTimer) clearTimeout(this.restartTimer);
    const client = this.client;
    this.client = null;
    await client?.close().catch(() => undefined);
  }

  /**
   * Calls one of its tools. Throws (a message fit for the model) when the server is unreachable,
   * dies during the call or exceeds the call timeout; an abort of `signal` propagates as it is.
   */
  async call(tool: string, args: Record<string, unknown>, signal: AbortSignal, idempotencyKey?: string): Promise<CallToolResult> {
    const timeoutMs = this.spec.timeoutMs ?? this.options.callTimeoutMs;
    const client =
      this.client ??
      (await bounded(this.connect(), timeoutMs, signal, () => new Error(`MCP server "${this.name}" did not start within ${timeoutMs} ms`)).catch((err: unknown) => {
        if (signal.aborted) throw err;
        throw new Error(`MCP server "${this.name}" is unavailable (${message(err)}); it is being restarted, so the call may succeed later`);
      }));
    try {
      // A retried step (its worker died) calls again with the same key, for servers that can use it.
      const meta = idempotencyKey ? { _meta: { [IDEMPOTENCY_META]: idempotencyKey } } : {};
      return (await client.callTool({ name: tool, arguments: args, ...meta }, undefined, { signal, timeout: timeoutMs })) as CallToolResult;
    } catch (err) {
      if (signal.aborted) throw err;
      if (err instanceof McpError && err.code === ErrorCode.RequestTimeout) throw new Error(`no reply from MCP server "${this.name}" within ${timeoutMs} ms`);
      if (err instanceof McpError && err.code !== ErrorCode.ConnectionClosed) throw err;
      // The connection is gone (the process died, the HTTP server went away): start again.
      this.lost(client, message(err));
      throw new Error(`MCP server "${this.name}" failed during the call (${this.lastProblem}); it is being restarted, so the call may succeed later`);
    }
  }

  private connect(): Promise<Client> {
    if (this.closed) return Promise.reject(new Error('closed'));
    if (this.client) return Promise.resolve(this.client);
    if (this.restartTimer) {
      clearTimeout(this.restartTimer);
      this.restartTimer = null;
    }
    this.connecting ??= this.open()
      .then((client) => {
        this.failures = 0;
        return client;
      })
      .catch((err: unknown) => {
        this.lastProblem = `${message(err)}${this.stderrTail()}`;
        this.log(`MCP server "${this.name}" could not be started: ${this.lastProblem}`);
        this.scheduleRestart();
        throw new Error(this.lastProblem);
      })
      .finally(() => {
        this.connecting = null;
      });
    return this.connecting;
  }

  private async open(): Promise<Client> {
    const client = new Client(CLIENT_INFO, {
      capabilities: {},
      listChanged: {
        tools: { autoRefresh: false, onChanged: () => void this.refresh(client).catch((err: unknown) => this.log(`MCP server "${this.name}": tools not listed again: ${message(err)}`)) },
      },
    });
    const transport = this.makeTransport();
    this.transport = transport;
    client.onclose = () => this.lost(client, 'the connection closed');
    const timeout = this.options.connectTimeoutMs ?? 30_000;
    try {
      await client.connect(transport, { timeout });
      await this.refresh(client, timeout);
    } catch (err) {
      client.onclose = undefined;
      await client.close().catch(() => undefined);
      throw err;
    }
    if (this.closed) {
      await client.close();
      throw new Error('closed');
    }
    this.client = client;
    return client;
  }

  private makeTransport(): Transport {
    if (this.spec.transport === 'http') {
      return new StreamableHTTPClientTransport(new URL(this.spec.url), { requestInit: { headers: this.spec.headers } });
    }
    const transport = new StdioClientTransport({
      command: this.spec.command,
      args: this.spec.args,
      env: this.spec.env,
      ...(this.spec.cwd ? { cwd: this.spec.cwd } : {}),
      stderr: 'pipe',
    });
    // Read (so a chatty server never blocks on a full pipe) and keep the last lines, to say why it died.
    transport.stderr?.on('data', (chunk: Buffer) => {
      this.stderr.push(
        ...chunk
          .toString('utf8')
          .split('\n')
          .filter((l) => l.trim() !== ''),
      );
      this.stderr.splice(0, Math.max(0, this.stderr.length - STDERR_LINES));
    });
    return transport;
  }

  private stderrTail(): string {
    const last = this.stderr.at(-1);
    return this.spec.transport === 'stdio' && last ? `; its last output: ${last.slice(0, 300)}` : '';
  }

  /** Lists the tools (every page) and reports them when they changed. */
  private async refresh(client: Client, timeout?: number): Promise<void> {
    const tools: Tool[] = [];
    let cursor: string | undefined;
    do {
      const page = await client.listTools(cursor ? { cursor } : undefined, timeout ? { timeout } : undefined);
      tools.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor);
    if (JSON.stringify(tools) === JSON.stringify(this.tools)) return;
    this.tools = tools;
    this.options.onTools(tools);
  }

  /** The connection `client` is gone: forget it and restart after the back-off. */
  private lost(client: Client, why: string): void {
    if (this.client !== client) return;
    this.client = null;
    client.onclose = undefined;
    void client.close().catch(() => undefined);
    this.lastProblem = `${why}${this.stderrTail()}`;
    if (this.closed) return;
    this.log(`MCP server "${this.name}" stopped: ${this.lastProblem}; restarting`);
    this.scheduleRestart();
  }

  private scheduleRestart(): void {
    if (this.closed || this.restartTimer) return;
    const { initialMs, maxMs } = this.options.backoff ?? { initialMs: 500, maxMs: 30_000 };
    const delay = Math.min(maxMs, initialMs * 2 ** this.failures);
    this.failures++;
    this.restartTimer = setTimeout(() => {
      this.restartTimer = null;
      this.connect().catch(() => undefined);
    }, delay);
    this.restartTimer.unref();
  }
}
