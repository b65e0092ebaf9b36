/**
 * One structured model call: send, parse, validate with zod, and on a bad reply
 * send the validation error back and ask again — a bounded number of times.
 */
import { z } from 'zod';
import { MODEL_CALLS, type ModelCallName, type ModelReply, replyJsonSchema } from '../planning/schemas';
import { buildMessages, type PlannerContext } from './prompts';
import type { ChatMessage, ModelProvider } from './provider';

/** The model kept answering outside the schema; retrying the activity would not help. */
export class InvalidModelReplyError extends Error {
  constructor(readonly call: ModelCallName, readonly attempts: number, readonly lastProblem: string) {
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
  const parsed = MODEL_CALLS[name].safeParse(json);
  if (!parsed.success) return { ok: false, problem: z.prettifyError(parsed.error).replace(/\n/g, '; ') };
  return { ok: true, value: parsed.data as ModelReply<N> };
}

export async function callModel<N extends ModelCallName>(
  provider: ModelProvider,
  ctx: PlannerContext & { call: N },
  maxAttempts: number,
  signal?: AbortSignal,
): Promise<ModelReply<N>> {
  const messages: ChatMessage[] = buildMessages(ctx);
  let problem = '';
  for (let attempt = 1; attempt <= maxAttempts; attempt++) {
    const text = await provider.complete({ name: ctx.call, schema: replyJsonSchema(ctx.call), messages: [...messages], context: ctx }, signal);
    const result = parseReply(ctx.call, text);
    if (result.ok) return result.value;
    problem = result.problem;
    messages.push(
      { role: 'assistant', content: text },
      { role: 'user', content: `That reply was rejected: ${problem}. Reply again with JSON only, matching the "${ctx.call}" schema.` },
    );
  }
  throw new InvalidModelReplyError(ctx.call, maxAttempts, problem);
}
