/**
 * A model provider answers one structured call: messages in, JSON text out.
 * Validation and repair live in `structured.ts`, above every provider.
 */
import type { ModelCallName } from '../planning/schemas';
import type { PlannerContext } from './prompts';

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

export interface ModelRequest {
  name: ModelCallName;
  /** JSON Schema of the reply (sent as response_format.json_schema.schema). */
  schema: Record<string, unknown>;
  messages: ChatMessage[];
  /** The structured context the messages were rendered from; offline providers read it instead of prose. */
  context: PlannerContext;
}

export interface ModelProvider {
  /** Shown in ExecutionState.model and logs, e.g. "gpt-5-mini" or "offline-demo". */
  readonly label: string;
  complete(request: ModelRequest, signal?: AbortSignal): Promise<string>;
}

/** A failure worth retrying later (network, 5xx, 429): the activity's retry policy handles it. */
export class ModelUnavailableError extends Error {
  constructor(message: string, readonly status?: number) {
    super(message);
    this.name = 'ModelUnavailableError';
  }
}
