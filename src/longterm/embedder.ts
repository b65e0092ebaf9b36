/**
 * Dense embeddings for long-term memory (EMBEDDING_MODEL): any OpenAI-compatible `/embeddings`
 * endpoint through the real `openai` client. Inputs go in batches; a 408, 429, 5xx or a
 * connection failure is retried with backoff, other refusals fail at once with a message that
 * says what to fix. After a call fails for good, the embedder fails fast for a cool-down, so a
 * server that is down slows no write: callers store records without vectors and carry on.
 */
import OpenAI from 'openai';
import { z } from 'zod';
import type { Config } from '../config';
import { beforeModelCall, reportUsage } from '../usage/usage';
import { normalized } from './vectors';

export interface Embedder {
  readonly model: string;
  /** Unit-length vectors of `texts`, in order; throws EmbeddingError when the endpoint fails. */
  embed(texts: readonly string[]): Promise<Float32Array[]>;
}

export class EmbeddingError extends Error {
  constructor(
    message: string,
    /** False when retrying cannot help (a wrong model name, key or URL). */
    readonly retryable: boolean,
  ) {
    super(message);
    this.name = 'EmbeddingError';
  }
}

export interface OpenAIEmbedderOptions {
  model: string;
  baseURL?: string | undefined;
  apiKey?: string | undefined;
  /** Asked of models that can shorten their vectors; also checked on every reply. */
  dimensions?: number | undefined;
  /** One request. @default 20000 */
  timeoutMs?: number;
  /** Inputs per request. @default 64 */
  batchSize?: number;
  /** Attempts of one request, the first included. @default 3 */
  attempts?: number;
  /** Backoff before the second attempt, doubled after each. @default 500 */
  retryDelayMs?: number;
  /** After a request failed for good, calls fail at once for this long. @default 30000 */
  cooldownMs?: number;
}

/** Longer inputs are cut: embedding models take a few thousand tokens, and the head says what a record is about. */
export const MAX_INPUT_CHARS = 8000;

const EmbeddingsReply = z.object({
  data: z.array(z.object({ index: z.number().int().min(0), embedding: z.array(z.number().finite()).min(1) })),
  usage: z.object({ prompt_tokens: z.number().int().min(0) }).optional(),
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export class OpenAIEmbedder implements Embedder {
  readonly model: string;
  private readonly client: OpenAI;
  private readonly endpoint: string;
  private readonly batchSize: number;
  private readonly attempts: number;
  private readonly retryDelayMs: number;
  private readonly cooldownMs: number;
  private downUntil = 0;
  private lastFailure = '';

  constructor(private readonly options: OpenAIEmbedderOptions) {
    this.model = options.model;
    this.endpoint = `${options.baseURL ?? 'https://api.openai.com/v1'}/embeddings`;
    this.batchSize = Math.max(1, options.batchSize ?? 64);
    this.attempts = Math.max(1, options.attempts ?? 3);
    this.retryDelayMs = options.retryDelayMs ?? 500;
    this.cooldownMs = options.cooldownMs ?? 30_000;
    this.client = new OpenAI({
      // Local OpenAI-compatible servers often need no key; the client insists on one.
      apiKey: options.apiKey ?? 'not-needed',
      baseURL: options.baseURL,
      timeout: options.timeoutMs ?? 20_000,
      // Retries are ours (below): the cool-down needs to know when they are spent.
      maxRetries: 0,
    });
  }

  async embed(texts: readonly string[]): Promise<Float32Array[]> {
    const out: Float32Array[] = [];
    for (let start = 0; start < texts.length; start += this.batchSize) out.push(...(await this.request(texts.slice(start, start + this.batchSize))));
    return out;
  }

  private async request(batch: readonly string[]): Promise<Float32Array[]> {
    if (Date.now() < this.downUntil) throw new EmbeddingError(`embeddings endpoint ${this.endpoint} unavailable (cooling down after: ${this.lastFailure})`, true);
    // Embeddings count against the user's token budget like chat calls: a refusal is not an outage (no cool-down).
    await beforeModelCall();
    // Empty inputs are refused by OpenAI; a blank stands in (it is similar to nothing much).
    const input = batch.map((t) => (t.trim() === '' ? ' ' : t.slice(0, MAX_INPUT_CHARS)));
    let failure: EmbeddingError | undefined;
    for (let attempt = 0; attempt < this.attempts; attempt++) {
      if (attempt > 0) await sleep(this.retryDelayMs * 2 ** (attempt - 1));
      try {
        return this.vectorsOf(
          await this.client.embeddings.create({ model: this.model, input, encoding_format: 'float', ...(this.options.dimensions ? { dimensions: this.options.dimensions } : {}) }),
          batch.length,
        );
      } catch (err) {
        failure = this.explain(err);
        if (!failure.retryable) break;
      }
    }
    const error = failure ?? new EmbeddingError('embeddings request failed', true);
    this.lastFailure = error.message;
    this.downUntil = Date.now() + this.cooldownMs;
    throw error;
  }

  private vectorsOf(reply: unknown, count: number): Float32Array[] {
    const parsed = EmbeddingsReply.safeParse(reply);
    if (!parsed.success) throw new EmbeddingError(`embeddings endpoint ${this.endpoint} sent a reply that is not an embeddings list: ${parsed.error.issues[0]?.message ?? ''}`, false);
    if (parsed.data.usage) reportUsage({ promptTokens: parsed.data.usage.prompt_tokens, completionTokens: 0, cachedTokens: 0 }, this.model);
    const vectors: Float32Array[] = new Array<Float32Array>(count);
    for (const item of parsed.data.data) if (item.index < count) vectors[item.index] = normalized(item.embedding);
    const length = vectors[0]?.length;
    for (let i = 0; i < count; i++) {
      const v = vectors[i];
      if (!v) throw new EmbeddingError(`embeddings endpoint ${this.endpoint} returned no vector for input ${i} of ${count}`, false);
      if (v.length !== length || (this.options.dimensions && v.length !== this.options.dimensions)) {
        throw new EmbeddingError(`embeddings endpoint ${this.endpoint} returned vectors of length ${v.length}, expected ${this.options.dimensions ?? length} (EMBEDDING_DIMENSIONS)`, false);
      }
    }
    return vectors;
  }

  private explain(err: unknown): EmbeddingError {
    if (err instanceof EmbeddingError) return err;
    if (err instanceof OpenAI.APIError && err.status !== undefined) {
      const retryable = err.status === 408 || err.status === 429 || err.status >= 500;
      const hint =
        err.status === 401 || err.status === 403
          ? ' — check EMBEDDING_API_KEY (or OPENAI_API_KEY)'
          : err.status === 404
            ? ` — check EMBEDDING_BASE_URL (it should end before /embeddings) and that model "${this.model}" exists (EMBEDDING_MODEL)`
            : err.status === 400 || err.status === 422
              ? ` — check EMBEDDING_MODEL ("${this.model}") and EMBEDDING_DIMENSIONS`
              : '';
      return new EmbeddingError(`embeddings endpoint ${this.endpoint} answered ${err.status}: ${err.message}${hint}`, retryable);
    }
    // Connection refused, reset, timed out: the server may come back.
    return new EmbeddingError(`embeddings endpoint ${this.endpoint} unreachable: ${err instanceof Error ? err.message : String(err)}`, true);
  }
}

export type EmbeddingConfig = Pick<Config, 'EMBEDDING_MODEL' | 'EMBEDDING_BASE_URL' | 'EMBEDDING_API_KEY' | 'EMBEDDING_DIMENSIONS' | 'EMBEDDING_TIMEOUT_MS' | 'OPENAI_BASE_URL' | 'OPENAI_API_KEY'>;

/** The configured embedder, or none without EMBEDDING_MODEL (then nothing is called or downloaded). */
export function embedderFromConfig(config: Partial<EmbeddingConfig>): Embedder | undefined {
  if (!config.EMBEDDING_MODEL) return undefined;
  return new OpenAIEmbedder({
    model: config.EMBEDDING_MODEL,
    baseURL: config.EMBEDDING_BASE_URL ?? config.OPENAI_BASE_URL,
    apiKey: config.EMBEDDING_API_KEY ?? config.OPENAI_API_KEY,
    dimensions: config.EMBEDDING_DIMENSIONS,
    ...(config.EMBEDDING_TIMEOUT_MS ? { timeoutMs: config.EMBEDDING_TIMEOUT_MS } : {}),
  });
}
