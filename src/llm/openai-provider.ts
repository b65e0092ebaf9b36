/**
 * Any OpenAI-compatible Chat Completions server, through the `openai` client.
 * The client does not retry (maxRetries 0): the Temporal activity owns retries,
 * so two layers never multiply each other's attempts and timeouts.
 *
 * Live tokens (issue 29): when a call has a text sink (a run's call that someone could be
 * watching, src/llm/live-tokens.ts) and streaming is on (MODEL_STREAM), the request asks for
 * `stream: true` and the reply's text goes to the sink as it arrives; the call still returns the
 * whole text, and reports the same usage (`stream_options.include_usage`). A server that answers
 * a streaming request with a plain JSON completion (many stubs and small servers do) is read as
 * one: no error, no second request.
 */
import { SpanKind, SpanStatusCode, trace, type Span } from '@opentelemetry/api';
import OpenAI from 'openai';
import { Stream } from 'openai/core/streaming';
import type { ChatCompletion, ChatCompletionChunk, ChatCompletionCreateParamsNonStreaming } from 'openai/resources/chat/completions';
import type { ModelProvider, ModelRequest } from './provider';
import { currentTextSink, type TextSink } from './live-tokens';
import { ModelUnavailableError } from './provider';
import { beforeModelCall, reportUsage } from '../usage/usage';

/** Spans of model calls, named and attributed by OpenTelemetry's GenAI conventions; no-ops without tracing. */
const tracer = trace.getTracer('threadline-llm');

export interface OpenAIProviderOptions {
  apiKey?: string;
  baseURL?: string;
  model: string;
  /** Time the request may take to answer; while a reply streams, the longest silence between two pieces. */
  timeoutMs: number;
  /** Stream replies that someone could be watching (MODEL_STREAM). @default true */
  stream?: boolean;
}

interface Completed {
  content: string;
  model: string;
  usage?: ChatCompletion['usage'];
}

export class OpenAIProvider implements ModelProvider {
  readonly label: string;
  private readonly client: OpenAI;
  /** The server refused a streaming request as malformed: this provider asks without streaming from then on. */
  private refusesStreaming = false;

  constructor(private readonly options: OpenAIProviderOptions) {
    this.label = options.model;
    this.client = new OpenAI({
      // Local OpenAI-compatible servers often need no key; the client insists on one.
      apiKey: options.apiKey ?? 'not-needed',
      baseURL: options.baseURL,
      timeout: options.timeoutMs,
      maxRetries: 0,
    });
  }

  complete(request: ModelRequest, signal?: AbortSignal): Promise<string> {
    const model = request.model ?? this.options.model;
    const attributes = { 'gen_ai.operation.name': 'chat', 'gen_ai.system': 'openai', 'gen_ai.request.model': model, 'threadline.reply_name': request.name };
    return tracer.startActiveSpan(`chat ${model}`, { kind: SpanKind.CLIENT, attributes }, async (span) => {
      try {
        return await this.call(request, span, signal);
      } catch (err) {
        span.recordException(err instanceof Error ? err : String(err));
        span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
        throw err;
      } finally {
        span.end();
      }
    });
  }

  private async call(request: ModelRequest, span: Span, signal?: AbortSignal): Promise<string> {
    // The user's token budget may refuse the call (src/usage/budget.ts); a repair attempt is a call too.
    await beforeModelCall();
    const body: ChatCompletionCreateParamsNonStreaming = {
      model: request.model ?? this.options.model,
      messages: request.messages,
      response_format: {
        type: 'json_schema',
        // strict: false — step args are free-form objects, which strict mode cannot express.
        json_schema: { name: request.name, schema: request.schema, strict: false },
      },
    };
    const sink = this.options.stream === false || this.refusesStreaming ? undefined : currentTextSink();
    let completed: Completed;
    try {
      completed = sink ? await this.streamedOrPlain(body, sink, signal) : fromCompletion(await this.client.chat.completions.create(body, { signal }));
    } catch (err) {
      if (err instanceof OpenAI.APIError && err.status !== undefined && err.status < 500 && err.status !== 429 && err.status !== 408) {
        // 4xx other than rate limits and timeouts will not get better by retrying.
        throw Object.assign(new Error(`model server refused the request (${err.status}): ${err.message}`), { nonRetryable: true });
      }
      throw new ModelUnavailableError(`model server unavailable: ${err instanceof Error ? err.message : String(err)}`, err instanceof OpenAI.APIError ? err.status : undefined);
    }
    const { usage } = completed;
    span.setAttribute('gen_ai.response.model', completed.model);
    if (usage) span.setAttributes({ 'gen_ai.usage.input_tokens': usage.prompt_tokens, 'gen_ai.usage.output_tokens': usage.completion_tokens });
    if (usage) reportUsage({ promptTokens: usage.prompt_tokens, completionTokens: usage.completion_tokens, cachedTokens: usage.prompt_tokens_details?.cached_tokens ?? 0 });
    // An empty reply is a bad reply, repaired like invalid JSON.
    return completed.content;
  }

  /**
   * A server that refused a streaming request as malformed (400, 422: it knows no `stream_options`,
   * say) is asked once more without streaming, and not asked to stream again.
   */
  private async streamedOrPlain(body: ChatCompletionCreateParamsNonStreaming, sink: TextSink, signal?: AbortSignal): Promise<Completed> {
    try {
      return await this.streamed(body, sink, signal);
    } catch (err) {
      if (!(err instanceof OpenAI.APIError && (err.status === 400 || err.status === 422))) throw err;
      this.refusesStreaming = true;
      return fromCompletion(await this.client.chat.completions.create(body, { signal }));
    }
  }

  /**
   * A streaming request: the reply's pieces go to `sink` as they arrive. A plain JSON answer (a
   * server that does not stream) is taken whole. A reply that falls silent for `timeoutMs` is
   * aborted (the client's own timeout ends when the headers arrive).
   */
  private async streamed(body: ChatCompletionCreateParamsNonStreaming, sink: TextSink, signal?: AbortSignal): Promise<Completed> {
    const controller = new AbortController();
    const abort = () => controller.abort(signal?.reason);
    if (signal?.aborted) abort();
    signal?.addEventListener('abort', abort, { once: true });
    let silent = false;
    let timer: NodeJS.Timeout | undefined;
    const quiet = () => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        silent = true;
        controller.abort();
      }, this.options.timeoutMs);
    };
    try {
      const response = await this.client.chat.completions.create({ ...body, stream: true, stream_options: { include_usage: true } }, { signal: controller.signal }).asResponse();
      quiet();
      if (!(response.headers.get('content-type') ?? '').includes('text/event-stream')) return fromBody(await response.text(), body.model, sink);
      const done: Completed = { content: '', model: body.model };
      for await (const chunk of Stream.fromSSEResponse<ChatCompletionChunk>(response, controller)) {
        quiet();
        if (chunk.model) done.model = chunk.model;
        if (chunk.usage) done.usage = chunk.usage;
        const piece = chunk.choices?.[0]?.delta?.content;
        if (piece) {
          done.content += piece;
          try {
            sink(piece);
          } catch {
            // live tokens are best effort; the reply is what counts
          }
        }
      }
      return done;
    } catch (err) {
      if (silent) throw new Error(`the reply stream was silent for ${this.options.timeoutMs} ms`);
      throw err;
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', abort);
    }
  }
}

/**
 * A reply that did not come as `text/event-stream`: a plain completion (a server that does not
 * stream), or a stream sent under another content type (read line by line, all at once).
 */
function fromBody(text: string, model: string, sink: TextSink): Completed {
  const trimmed = text.trimStart();
  if (!trimmed.startsWith('data:') && !trimmed.startsWith('event:') && !trimmed.startsWith(':')) return fromCompletion(JSON.parse(text) as ChatCompletion);
  const done: Completed = { content: '', model };
  for (const line of text.split(/\r?\n/)) {
    if (!line.startsWith('data:')) continue;
    const data = line.slice(5).trim();
    if (data === '' || data === '[DONE]') continue;
    const chunk = JSON.parse(data) as Partial<ChatCompletionChunk> & { error?: { message?: string } };
    if (chunk.error) throw new Error(`the model server's stream said: ${chunk.error.message ?? 'error'}`);
    if (chunk.model) done.model = chunk.model;
    if (chunk.usage) done.usage = chunk.usage;
    const piece = chunk.choices?.[0]?.delta?.content;
    if (piece) done.content += piece;
  }
  if (done.content) sink(done.content);
  return done;
}

function fromCompletion(completion: ChatCompletion): Completed {
  return { content: completion.choices?.[0]?.message?.content ?? '', model: completion.model, ...(completion.usage ? { usage: completion.usage } : {}) };
}
