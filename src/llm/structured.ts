/**
 * One structured model call: send, parse, validate with zod, and on a bad reply
 * send the validation error back and ask again — a bounded number of times.
 */
import { z } from 'zod';
import { buildMessages, parseCallReply, replyJsonSchema, type ModelCallName, type ModelReply } from '../calls/registry';
import type { PlannerCallName } from '../calls/names';
import type { PlannerContext } from '../calls/planner';
import type { ChatMessage } from '../text/chat-message';
import type { ModelProvider, ModelRequest } from './provider';
import { liveCallFor, withTextSink } from './live-tokens';

/** The model kept answering outside the schema; retrying the activity would not help. */
export class InvalidModelReplyError extends Error {
  constructor(
    readonly call: ModelCallName,
    readonly attempts: number,
    readonly lastProblem: string,
  ) {
    super(`the model's ${call} reply was invalid ${attempts} time(s) in a row; last problem: ${lastProblem}`);
    this.name = 'InvalidModelReplyError';
  }
}

/** Parses a reply; returns the value or a description of what is wrong, for the model to fix. */
export function parseReply<N extends ModelCallName>(name: N, text: string): { ok: true; value: ModelReply<N> } | { ok: false; problem: string } {
  let json: unknown;
  try {
    json = JSON.parse(text.trim().replace(/^```(?:json)?\s*|\s*```$/g, ''));
  } catch (err) {
    return { ok: false, problem: `not valid JSON (${err instanceof Error ? err.message : String(err)})` };
  }
  const parsed = parseCallReply(name, json);
  if (!parsed.success) return { ok: false, problem: z.prettifyError(parsed.error).replace(/\n/g, '; ') };
  return { ok: true, value: parsed.data };
}

/** A structured request before its JSON schema is attached. */
export interface StructuredRequest<N extends ModelCallName> {
  name: N;
  messages: ChatMessage[];
  context: ModelRequest['context'];
  /** A sub-agent's model (ModelRequest.model). */
  model?: string;
}

/**
 * Sends a request and returns its validated reply; on a bad reply, sends the
 * reply back with what is wrong and asks again, at most `maxAttempts` times in
 * all. `check` adds a rule the schema cannot express: it returns a problem for
 * the model to fix, or null.
 */
export async function completeStructured<N extends ModelCallName>(
  provider: ModelProvider,
  request: StructuredRequest<N>,
  maxAttempts: number,
  signal?: AbortSignal,
  check?: (value: ModelReply<N>) => string | null,
): Promise<ModelReply<N>> {
  const { name, context, model } = request;
  const messages = [...request.messages];
  let problem = '';
  // Live tokens (src/llm/live-tokens.ts): a run's call streams its human-readable fields while it runs.
  const live = liveCallFor(request);
  try {
    for (let attempt = 1; attempt <= maxAttempts; attempt++) {
      const modelRequest: ModelRequest = { name, schema: replyJsonSchema(name), messages: [...messages], context, ...(model ? { model } : {}) };
      const text = live ? await withTextSink(live.stream(), () => provider.complete(modelRequest, signal)) : await provider.complete(modelRequest, signal);
      const result = parseReply(name, text);
      if (result.ok) {
        const extra = check?.(result.value) ?? null;
        if (extra === null) return result.value;
        problem = extra;
      } else {
        problem = result.problem;
      }
      messages.push({ role: 'assistant', content: text }, { role: 'user', content: `That reply was rejected: ${problem}. Reply again with JSON only, matching the "${name}" schema.` });
    }
  } finally {
    live?.end();
  }
  throw new InvalidModelReplyError(name, maxAttempts, problem);
}

export async function callModel<N extends PlannerCallName>(provider: ModelProvider, ctx: PlannerContext & { call: N }, maxAttempts: number, signal?: AbortSignal): Promise<ModelReply<N>> {
  const model = ctx.state.agent?.model;
  return completeStructured(provider, { name: ctx.call, messages: buildMessages(ctx), context: ctx, ...(model ? { model } : {}) }, maxAttempts, signal);
}
