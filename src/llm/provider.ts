/**
 * A model provider answers one structured call: messages in, JSON text out.
 * Validation and repair live in `structured.ts`, above every provider.
 */
import type { CallContext, ModelCallName } from '../calls/registry';
import type { ChatMessage } from '../text/chat-message';

export interface ModelRequest {
  name: ModelCallName;
  /** JSON Schema of the reply (sent as response_format.json_schema.schema). */
  schema: Record<string, unknown>;
  messages: ChatMessage[];
  /**
   * The model to ask instead of the provider's own (a sub-agent's `model`). Providers that cannot
   * switch models (the offline demo) ignore it.
   */
  model?: string;
  /** The structured context the messages were rendered from; offline providers read it instead of prose. */
  context: CallContext;
}

export interface ModelProvider {
  /** Shown in ExecutionState.model and logs, e.g. "gpt-5-mini" or "offline-demo". */
  readonly label: string;
  complete(request: ModelRequest, signal?: AbortSignal): Promise<string>;
}

/** A failure worth retrying later (network, 5xx, 429): the activity's retry policy handles it. */
export class ModelUnavailableError extends Error {
  constructor(
    message: string,
    readonly status?: number,
  ) {
    super(message);
    this.name = 'ModelUnavailableError';
  }
}
