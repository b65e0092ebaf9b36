/**
 * A model provider answers one structured call: messages in, JSON text out.
 * Validation and repair live in `structured.ts`, above every provider.
 */
import type { MemoryPassName, ModelCallName, TaskStateSummaryReply } from '../planning/schemas';
import type { PlannerContext } from './prompts';
import type { MessageRouteContext } from './message-route';
import type { ApprovalEditContext } from './approval-edit';
import type { TreeContext } from './tree-prompts';
import type { ChatMessage } from '../text/chat-message';

/** What a `memory_summary` call is made from: the texts to summarize and the summary's token allowance. */
export interface SummaryContext {
  call: 'memory_summary';
  texts: string[];
  maxTokens: number;
}

/** What a `task_state_summary` call is made from: the session's TaskState so far and the older turns to fold into it. */
export interface TaskStateSummaryContext {
  call: 'task_state_summary';
  previous: TaskStateSummaryReply;
  turns: { role: 'user' | 'assistant'; text: string }[];
}

/**
 * What a long-term memory pass is made from (seed 002): `memory_extraction` after invocations,
 * `memory_promotion` at a conversation's end. Offline providers read it instead of prose.
 */
export interface MemoryPassContext {
  call: MemoryPassName;
  /** The invocations' goals (extraction), or the conversation's first request (promotion). */
  goals: string[];
  /** What happened, oldest first: the person's and the agent's words, tool calls and results. */
  transcript: { role: 'user' | 'assistant' | 'tool'; text: string }[];
  /** Facts already known about the person, as sentences (so the model adds only what is new). */
  known: string[];
}

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
  context: PlannerContext | TreeContext | SummaryContext | TaskStateSummaryContext | MemoryPassContext | MessageRouteContext | ApprovalEditContext;
}

/** Tells a session's TaskState summary request from the others. */
export function isTaskStateSummaryContext(context: ModelRequest['context']): context is TaskStateSummaryContext {
  return context.call === 'task_state_summary' && 'turns' in context;
}

/** Tells a long-term memory pass's context from the others. */
export function isMemoryPassContext(context: ModelRequest['context']): context is MemoryPassContext {
  return (context.call === 'memory_extraction' || context.call === 'memory_promotion') && 'transcript' in context;
}

/** Tells a summary request's context from a planner's. */
export function isSummaryContext(context: ModelRequest['context']): context is SummaryContext {
  return context.call === 'memory_summary' && 'texts' in context;
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
