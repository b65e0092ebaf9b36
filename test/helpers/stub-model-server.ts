/**
 * A stub OpenAI-compatible Chat Completions server for tests: the real `openai`
 * client talks HTTP to it. Replies are scripted per goal and per call name;
 * a request with no scripted reply left gets a 500 and is recorded as a miss,
 * so a test never passes on replies it did not expect.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface StubRequest {
  /** `response_format.json_schema.name`, e.g. "execution_plan". */
  name: string;
  goal: string;
  messages: { role: string; content: string }[];
  body: Record<string, unknown>;
}

/** A reply: an object (sent as JSON), a raw string (sent as-is, e.g. invalid JSON), or a function of the request (a promise is awaited: a test can hold a reply back). */
/** The last message of a request: the prompt of that call. */
export const lastMessage = (request: Pick<StubRequest, 'messages'> | undefined): string => request?.messages.at(-1)?.content ?? '';

/** The token usage the stub reports for every reply. */
export const STUB_USAGE = { prompt: 100, completion: 20, cached: 40 };

export type StubReply = unknown | ((req: StubRequest) => unknown);
export type StubScript = Partial<Record<string, StubReply[]>>;

export class StubModelServer {
  readonly requests: StubRequest[] = [];
  readonly misses: StubRequest[] = [];
  private readonly scripts = new Map<string, StubScript>();
  private server?: http.Server;
  url = '';
  /** Extra latency per reply, to widen windows in crash tests. */
  delayMs = 0;
  /**
   * Replies for requests no script covers (the chaos test's goals are made up as it goes, and a
   * call repeated after a crash must get the same reply again): undefined still counts as a miss.
   */
  fallback?: (req: StubRequest) => unknown;

  /** Scripts the replies for runs whose goal is exactly `goal`. */
  script(goal: string, script: StubScript): void {
    this.scripts.set(goal, script);
  }

  requestsFor(goal: string, name?: string): StubRequest[] {
    return this.requests.filter((r) => r.goal === goal && (name === undefined || r.name === name));
  }

  async start(): Promise<string> {
    this.server = http.createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/v1`;
    return this.url;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    let raw = '';
    for await (const chunk of req) raw += chunk;
    if (req.method !== 'POST' || !req.url?.endsWith('/chat/completions')) {
      res.writeHead(404).end();
      return;
    }
    const body = JSON.parse(raw) as Record<string, unknown>;
    const messages = (body.messages ?? []) as StubRequest['messages'];
    const format = body.response_format as { json_schema?: { name?: string } } | undefined;
    const name = format?.json_schema?.name ?? '';
    // The planner's own request is the last user message; earlier ones may be working memory.
    const userText = [...messages].reverse().find((m) => m.role === 'user' && /^Goal: /m.test(m.content))?.content ?? '';
    const goal = /^Goal: (.*)$/m.exec(userText)?.[1] ?? '';
    const request: StubRequest = { name, goal, messages, body };
    this.requests.push(request);
    const queue = this.scripts.get(goal)?.[name];
    const fallback = !queue || queue.length === 0 ? this.fallback?.(request) : undefined;
    if ((!queue || queue.length === 0) && fallback === undefined) {
      this.misses.push(request);
      res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: `stub: no scripted ${name} reply for goal "${goal}"` } }));
      return;
    }
    const next = fallback !== undefined ? fallback : queue!.shift();
    const reply: unknown = typeof next === 'function' ? await (next as (r: StubRequest) => unknown)(request) : next;
    if (this.delayMs > 0) await new Promise((r) => setTimeout(r, this.delayMs));
    const content = typeof reply === 'string' ? reply : JSON.stringify(reply);
    res.writeHead(200, { 'content-type': 'application/json' }).end(
      JSON.stringify({
        id: `chatcmpl-${this.requests.length}`,
        object: 'chat.completion',
        created: Math.floor(Date.now() / 1000),
        model: String(body.model ?? 'stub'),
        choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', content } }],
        // Fixed figures, so tests can count calls through the usage they add up to.
        usage: { prompt_tokens: STUB_USAGE.prompt, completion_tokens: STUB_USAGE.completion, total_tokens: STUB_USAGE.prompt + STUB_USAGE.completion, prompt_tokens_details: { cached_tokens: STUB_USAGE.cached } },
      }),
    );
  }
}
