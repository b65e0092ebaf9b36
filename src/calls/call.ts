/**
 * One model call, whole: its wire name, the zod schema of its reply (the JSON Schema sent in
 * `response_format` is derived from it), the prompt built from its context, and the offline demo
 * model's answer to it. Each call is one file of this folder; `registry.ts` lists them.
 */
import type { z } from 'zod';
import type { ChatMessage } from '../text/chat-message';

/** A kind of context a call is made from, and how to tell it from the others (offline providers read the context, not the prose). */
export interface ContextKind<C extends { call: string }> {
  /** Named in the error when a call gets another kind, e.g. "a SummaryContext (texts, maxTokens)". */
  readonly label: string;
  is(context: { call: string }): context is C;
}

export interface ModelCall<N extends string, S extends z.ZodType, C extends { call: string }> {
  readonly name: N;
  /** The reply's schema: the model's JSON is validated with it, repaired when it fails. */
  readonly schema: S;
  readonly context: ContextKind<C>;
  /** The prompt: the messages the call sends. */
  messages(ctx: C): ChatMessage[];
  /** The offline demo model's reply: deterministic rules instead of a language model. */
  demo(ctx: C): z.infer<S>;
}

/** Declares a call; the identity function that keeps each field's type exact. */
export const modelCall = <N extends string, S extends z.ZodType, C extends { call: string }>(call: ModelCall<N, S, C>): ModelCall<N, S, C> => call;
