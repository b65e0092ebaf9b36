/**
 * Any OpenAI-compatible Chat Completions server, through the `openai` client.
 * The client does not retry (maxRetries 0): the Temporal activity owns retries,
 * so two layers never multiply each other's attempts and timeouts.
 */
import { SpanKind, SpanStatusCode, trace, type Span } from '@opentelemetry/api';
import OpenAI from 'openai';
import type { ModelProvider, ModelRequest } from './provider';
import { ModelUnavailableError } from './provider';
import { reportUsage } from '../usage/usage';

/** Spans of model calls, named and attributed by OpenTelemetry's GenAI conventions; no-ops without tracing. */
const tracer = trace.getTracer('threadline-llm');

export interface OpenAIProviderOptions {
  apiKey?: string;
  baseURL?: string;
  model: string;
  timeoutMs: number;
}

export class OpenAIProvider implements ModelProvider {
  readonly label: string;
  private readonly client: OpenAI;

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
    let completion;
    try {
      completion = await this.client.chat.completions.create(
        {
          model: request.model ?? this.options.model,
          messages: request.messages,
          response_format: {
            type: 'json_schema',
            // strict: false — step args are free-form objects, which strict mode cannot express.
            json_schema: { name: request.name, schema: request.schema, strict: false },
          },
        },
        { signal },
      );
    } catch (err) {
      if (err instanceof OpenAI.APIError && err.status !== undefined && err.status < 500 && err.status !== 429 && err.status !== 408) {
        // 4xx other than rate limits and timeouts will not get better by retrying.
        throw Object.assign(new Error(`model server refused the request (${err.status}): ${err.message}`), { nonRetryable: true });
      }
      throw new ModelUnavailableError(`model server unavailable: ${err instanceof Error ? err.message : String(err)}`, err instanceof OpenAI.APIError ? err.status : undefined);
    }
    const usage = completion.usage;
    span.setAttribute('gen_ai.response.model', completion.model);
    if (usage) span.setAttributes({ 'gen_ai.usage.input_tokens': usage.prompt_tokens, 'gen_ai.usage.output_tokens': usage.completion_tokens });
    if (usage) reportUsage({ promptTokens: usage.prompt_tokens, completionTokens: usage.completion_tokens, cachedTokens: usage.prompt_tokens_details?.cached_tokens ?? 0 });
    const content = completion.choices[0]?.message?.content;
    // An empty reply is a bad reply, repaired like invalid JSON.
    return content ?? '';
  }
}
