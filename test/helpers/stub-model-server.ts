/**
 * A stub OpenAI-compatible Chat Completions server for tests: the real `openai`
 * client talks HTTP to it. Replies are scripted per goal and per call name;
 * a request with no scripted reply left gets a 500 and is recorded as a miss,
 * so a test never passes on replies it did not expect.
 *
 * It also answers `POST /embeddings` deterministically (stubEmbedding): a hashed bag of
 * concepts, where a small synonym table maps words that share no stem ("feline", "cat") to one
 * concept — so a test can show dense retrieval finding what lexical retrieval cannot.
 */
import { createHash } from 'node:crypto';
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

/**
 * An unscripted `message_route` (a session's message while a run waits) is a reply to the newest
 * question, as before sessions asked: tests script the call only where they mean a new request.
 */
const ROUTE_AS_REPLY = { route: 'reply' };

/** The token usage the stub reports for every reply. */
export const STUB_USAGE = { prompt: 100, completion: 20, cached: 40 };

/** Words that mean one thing to the stub's embedding model (and share no stem). */
const SYNONYMS: Record<string, string> = {
  feline: 'cat',
  kitty: 'cat',
  kitten: 'cat',
  cats: 'cat',
  canine: 'dog',
  puppy: 'dog',
  hound: 'dog',
  dogs: 'dog',
  automobile: 'car',
  vehicle: 'car',
  sedan: 'car',
  cars: 'car',
  physician: 'doctor',
  medic: 'doctor',
  doctors: 'doctor',
  smashed: 'broke',
  shattered: 'broke',
  broken: 'broke',
  break: 'broke',
  knocked: 'broke',
  pottery: 'vase',
  urn: 'vase',
  vases: 'vase',
  residence: 'home',
  house: 'home',
  dwelling: 'home',
};
const STOP = new Set([
  'a',
  'an',
  'the',
  'my',
  'our',
  'your',
  'i',
  'we',
  'you',
  'it',
  'is',
  'was',
  'did',
  'do',
  'of',
  'to',
  'in',
  'on',
  'off',
  'over',
  'and',
  'what',
  'which',
  'who',
  'at',
  'for',
  'with',
]);

/** The stub model's embedding of `text`: concepts hashed into `dimensions` signed buckets, unit length. */
export function stubEmbedding(text: string, dimensions = 64): number[] {
  const v = new Array<number>(dimensions).fill(0);
  for (const word of text.toLowerCase().match(/[a-z0-9]+/g) ?? []) {
    if (STOP.has(word)) continue;
    const concept = SYNONYMS[word] ?? word;
    const hash = createHash('sha256').update(concept).digest();
    v[hash.readUInt32LE(0) % dimensions]! += hash[4]! & 1 ? 1 : -1;
  }
  const norm = Math.sqrt(v.reduce((sum, x) => sum + x * x, 0));
  return norm > 0 ? v.map((x) => x / norm) : v;
}

export interface StubEmbeddingRequest {
  model: string;
  input: string[];
  dimensions?: number;
}

export type StubReply = unknown | ((req: StubRequest) => unknown);
export type StubScript = Partial<Record<string, StubReply[]>>;
/** One streamed reply, as `StubModelServer.streams` records it. */
export type StubStream = StubModelServer['streams'][number];

export class StubModelServer {
  readonly requests: StubRequest[] = [];
  readonly misses: StubRequest[] = [];
  /** Every `POST /embeddings`, answered or not. */
  readonly embeddingRequests: StubEmbeddingRequest[] = [];
  /** The next this many embeddings requests get a 500 (a server hiccup). */
  embeddingFailures = 0;
  /** Every embeddings request gets a 503 (the embeddings server is down). */
  embeddingsDown = false;
  private readonly scripts = new Map<string, StubScript>();
  private server?: http.Server;
  url = '';
  /** Extra latency per reply, to widen windows in crash tests. */
  delayMs = 0;
  /**
   * Live tokens: answer a `stream: true` request as Server-Sent Events, the reply's content cut into
   * pieces of `chunkChars` with `chunkDelayMs` between them (off: a plain JSON completion, as servers
   * that do not stream answer; the provider must take it whole).
   */
  streaming = false;
  chunkChars = 8;
  chunkDelayMs = 0;
  /** The next this many streamed replies break off (the connection is destroyed) after half their pieces. */
  failMidStream = 0;
  /** Only streamed replies to this call name (e.g. `final_answer`) count for `failMidStream`. */
  failMidStreamOf?: string;
  /** The content type a streamed reply is sent with (a server may get it wrong). */
  streamContentType = 'text/event-stream; charset=utf-8';
  /** Answer a streaming request with a 400, as a server that knows no `stream_options` might. */
  refuseStreaming = false;
  /** A plain (not streamed) reply waits as long as its stream would have taken (the benchmark's streaming-off row). */
  pacePlain = false;
  /** When each streamed reply sent its first piece and its last (performance.now()), in order; `pieceAt` each piece's time. */
  readonly streams: { name: string; goal: string; content: string; firstChunkAt: number; pieceAt: number[]; endedAt?: number; broken?: boolean }[] = [];
  /**
   * Called before each piece of a streamed reply is sent (`index` from 0): a promise it returns holds the
   * stream there until it settles, so a test can have a reader come mid-reply however slow the machine is.
   */
  beforePiece?: (stream: StubStream, index: number) => unknown;
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

  private embed(raw: string, res: http.ServerResponse): void {
    const body = JSON.parse(raw) as { model?: string; input?: string | string[]; dimensions?: number };
    const input = typeof body.input === 'string' ? [body.input] : (body.input ?? []);
    this.embeddingRequests.push({ model: String(body.model ?? ''), input, ...(body.dimensions ? { dimensions: body.dimensions } : {}) });
    const json = (status: number, payload: unknown) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(payload));
    if (this.embeddingsDown || this.embeddingFailures > 0) {
      if (!this.embeddingsDown) this.embeddingFailures--;
      json(this.embeddingsDown ? 503 : 500, { error: { message: 'stub: embeddings unavailable' } });
      return;
    }
    json(200, {
      object: 'list',
      model: String(body.model ?? 'stub-embed'),
      data: input.map((text, index) => ({ object: 'embedding', index, embedding: stubEmbedding(text, body.dimensions ?? 64) })),
      usage: { prompt_tokens: input.length, total_tokens: input.length },
    });
  }

  /** A reply as a Chat Completions stream: content pieces, a finishing chunk, the usage chunk, `[DONE]`. */
  private async stream(res: http.ServerResponse, request: StubRequest, content: string): Promise<void> {
    const { body } = request;
    const id = `chatcmpl-${this.requests.length}`;
    const base = { id, object: 'chat.completion.chunk', created: Math.floor(Date.now() / 1000), model: String(body.model ?? 'stub') };
    const write = (data: unknown) => res.write(`data: ${JSON.stringify(data)}\n\n`);
    res.writeHead(200, { 'content-type': this.streamContentType, 'cache-control': 'no-cache' });
    res.socket?.setNoDelay(true);
    const pieces: string[] = [];
    for (let i = 0; i < content.length; i += this.chunkChars) pieces.push(content.slice(i, i + this.chunkChars));
    const breaks = this.failMidStream > 0 && (this.failMidStreamOf === undefined || this.failMidStreamOf === request.name);
    const breakAt = breaks ? Math.max(1, Math.floor(pieces.length / 2)) : -1;
    if (breakAt >= 0) this.failMidStream--;
    const record: (typeof this.streams)[number] = { name: request.name, goal: request.goal, content, firstChunkAt: 0, pieceAt: [] };
    this.streams.push(record);
    write({ ...base, choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }] });
    for (let i = 0; i < pieces.length; i++) {
      if (i === breakAt) {
        record.broken = true;
        record.endedAt = performance.now();
        res.destroy();
        return;
      }
      const hold = this.beforePiece?.(record, i);
      if (hold instanceof Promise) await hold;
      if (i === 0) record.firstChunkAt = performance.now();
      record.pieceAt.push(performance.now());
      write({ ...base, choices: [{ index: 0, delta: { content: pieces[i] }, finish_reason: null }] });
      if (this.chunkDelayMs > 0 && i < pieces.length - 1) await new Promise((r) => setTimeout(r, this.chunkDelayMs));
    }
    write({ ...base, choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] });
    const options = body.stream_options as { include_usage?: boolean } | undefined;
    if (options?.include_usage) {
      write({
        ...base,
        choices: [],
        usage: {
          prompt_tokens: STUB_USAGE.prompt,
          completion_tokens: STUB_USAGE.completion,
          total_tokens: STUB_USAGE.prompt + STUB_USAGE.completion,
          prompt_tokens_details: { cached_tokens: STUB_USAGE.cached },
        },
      });
    }
    res.write('data: [DONE]\n\n');
    record.endedAt = performance.now();
    res.end();
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    let raw = '';
    for await (const chunk of req) raw += chunk;
    // Exactly /v1/embeddings: a wrong base URL gets the 404 a real server would give.
    if (req.method === 'POST' && req.url === '/v1/embeddings') {
      this.embed(raw, res);
      return;
    }
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
    const fallback = !queue || queue.length === 0 ? (this.fallback?.(request) ?? (name === 'message_route' ? ROUTE_AS_REPLY : undefined)) : undefined;
    if ((!queue || queue.length === 0) && fallback === undefined) {
      this.misses.push(request);
      res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: `stub: no scripted ${name} reply for goal "${goal}"` } }));
      return;
    }
    if (this.refuseStreaming && body.stream === true) {
      res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: 'stub: unknown parameter stream_options' } }));
      return;
    }
    const next = fallback !== undefined ? fallback : queue!.shift();
    const reply: unknown = typeof next === 'function' ? await (next as (r: StubRequest) => unknown)(request) : next;
    if (this.delayMs > 0) await new Promise((r) => setTimeout(r, this.delayMs));
    const content = typeof reply === 'string' ? reply : JSON.stringify(reply);
    if (this.streaming && body.stream === true) {
      await this.stream(res, request, content);
      return;
    }
    if (this.pacePlain && this.chunkDelayMs > 0) await new Promise((r) => setTimeout(r, (Math.ceil(content.length / this.chunkChars) - 1) * this.chunkDelayMs));
    res.writeHead(200, { 'content-type': 'application/json' }).end(
      JSON.stringify({
        id: `chatcmpl-${this.requests.length}`,
        object: 'chat.completion',
        created: Math.floor(Date.now() / 1000),
        model: String(body.model ?? 'stub'),
        choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', content } }],
        // Fixed figures, so tests can count calls through the usage they add up to.
        usage: {
          prompt_tokens: STUB_USAGE.prompt,
          completion_tokens: STUB_USAGE.completion,
          total_tokens: STUB_USAGE.prompt + STUB_USAGE.completion,
          prompt_tokens_details: { cached_tokens: STUB_USAGE.cached },
        },
      }),
    );
  }
}
