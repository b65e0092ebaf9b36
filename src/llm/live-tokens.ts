/**
 * Live tokens on the model-call side (issue 29). An activity runs inside a token scope (set by the
 * worker's interceptor, src/activities/live-tokens-interceptor.ts: the call's idempotency key, its
 * attempt, the publisher); `completeStructured` opens a LiveCall for each structured call of a run
 * and hands its text sink to the provider, which feeds it the reply's text as it streams. The sink
 * parses the partial JSON (the `partial-json` package) and publishes what grew of the reply's
 * human-readable fields. Nothing here reaches Temporal: the activity's result is the whole,
 * validated reply, as before.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { createHash } from 'node:crypto';
import { Allow, parse } from 'partial-json';
import { MAX_DELTA_CHARS, type LivePublisher } from '../live/messages';
import type { ModelRequest } from './provider';

/** What an activity's model calls stream under. */
export interface TokenScope {
  publisher: LivePublisher;
  /** The activity's idempotency key: the same for every attempt of the call, and after a crash. */
  key: string;
  /** The activity's attempt (1 first). */
  attempt: number;
  /** Structured calls of each reply name made so far in this attempt (a call's id counts them). */
  ordinals?: Map<string, number>;
}

const scopes = new AsyncLocalStorage<TokenScope>();
const sinks = new AsyncLocalStorage<TextSink>();

/** Runs `fn` (an activity) with the scope its model calls stream under. */
export const withTokenScope = <T>(scope: TokenScope, fn: () => Promise<T>): Promise<T> => scopes.run({ ...scope, ordinals: new Map() }, fn);

/** Receives the reply's text as it arrives, piece by piece. */
export type TextSink = (text: string) => void;

/** Runs `fn` (a provider's `complete`) with a sink for its reply's text. */
export const withTextSink = <T>(sink: TextSink, fn: () => Promise<T>): Promise<T> => sinks.run(sink, fn);

/** The sink of the call in progress, if anyone could be listening: a provider streams only then. */
export const currentTextSink = (): TextSink | undefined => sinks.getStore();

/**
 * The reply fields a person reads, by the keys that name them: a plan's steps' descriptions and
 * questions, a thought, an answer, a question, a tree's subtask goals, a summary. Other fields
 * (decisions, tool names, arguments) are not streamed.
 */
const HUMAN_KEYS = new Set(['answer', 'thought', 'description', 'question', 'result', 'summary', 'assessment', 'lesson', 'goal', 'name']);
/** Containers walked into for those keys (never a tool's `args` or a blueprint's `params`). */
const LIST_KEYS = new Set(['steps', 'subtasks']);
/** The calls whose replies are streamed: the run's own planning, thinking and answering. */
const STREAMED_CALLS = new Set(['execution_plan', 'replan_decision', 'reasoning', 'final_answer', 'task_tree', 'react_action', 'reflection', 'task_summary']);
/** Past this much reply text, a call stops streaming (re-parsing it on every piece would cost more than it shows). */
const MAX_STREAMED_TEXT = 64 * 1024;

/** The human-readable string fields of a partial reply, by path (`answer`, `steps[0].description`). */
export function humanFields(value: unknown, prefix = ''): [string, string][] {
  const out: [string, string][] = [];
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return out;
  for (const [key, field] of Object.entries(value as Record<string, unknown>)) {
    const path = prefix ? `${prefix}.${key}` : key;
    if (typeof field === 'string' && HUMAN_KEYS.has(key)) out.push([path, field]);
    else if (LIST_KEYS.has(key) && Array.isArray(field)) field.forEach((item, i) => out.push(...humanFields(item, `${path}[${i}]`)));
  }
  return out;
}

/** Parses as much of a reply's JSON as has arrived; undefined while nothing useful has (or it is not JSON). */
export function parsePartialReply(text: string): unknown {
  const trimmed = text.replace(/^\s*```(?:json)?\s*/, '');
  if (!trimmed.trimStart().startsWith('{')) return undefined;
  try {
    return parse(trimmed, Allow.ALL) as unknown;
  } catch {
    return undefined;
  }
}

/**
 * Turns a reply's growing text into deltas of its human-readable fields: each call of `push`
 * returns what was added to which field since the last. A field's value only ever grows in a
 * partial parse; one that does not (a model that rewrote it) is left as it was — the final text is
 * the state's.
 */
export class FieldDeltas {
  private text = '';
  private readonly sent = new Map<string, string>();

  push(piece: string): { field: string; delta: string }[] {
    this.text += piece;
    if (this.text.length > MAX_STREAMED_TEXT) return [];
    const out: { field: string; delta: string }[] = [];
    for (const [field, value] of humanFields(parsePartialReply(this.text))) {
      const before = this.sent.get(field) ?? '';
      if (value.length <= before.length || !value.startsWith(before)) continue;
      this.sent.set(field, value);
      const delta = value.slice(before.length);
      for (let i = 0; i < delta.length; i += MAX_DELTA_CHARS) out.push({ field, delta: delta.slice(i, i + MAX_DELTA_CHARS) });
    }
    return out;
  }
}

/** One structured call of a run, streamed: `stream()` before each request (a repair asks again), `end()` after the last. */
export interface LiveCall {
  callId: string;
  /** Announces a (new) streaming of the call and returns the sink for its text. */
  stream(): TextSink;
  end(): void;
}

/** The id of a run's call: the same on every attempt of its activity and after a crash, distinct for each call the activity makes. */
export function callIdOf(key: string, name: string, ordinal: number): string {
  return createHash('sha256').update(`${key}\n${name}\n${ordinal}`).digest('base64url').slice(0, 16);
}

/** A LiveCall for a run's structured call, when it is one that streams and someone could be listening. */
export function liveCallFor(request: Pick<ModelRequest, 'name' | 'context'>): LiveCall | undefined {
  const scope = scopes.getStore();
  if (!scope || !STREAMED_CALLS.has(request.name) || !scope.publisher.wanted()) return undefined;
  const context = request.context as { state?: { runId?: string; sessionId?: string | null; currentStepId?: string | null }; step?: { id?: string }; task?: { index?: string } };
  const state = context.state;
  if (!state?.runId) return undefined;
  const ordinals = scope.ordinals ?? new Map<string, number>();
  const ordinal = (ordinals.get(request.name) ?? 0) + 1;
  ordinals.set(request.name, ordinal);
  const callId = callIdOf(scope.key, request.name, ordinal);
  const runId = state.runId;
  const sessionId = state.sessionId ?? undefined;
  const stepId = context.step?.id;
  const taskIndex = context.task?.index;
  const { publisher } = scope;
  let streamings = 0;
  /** Publishes what the current streaming's sink took and has not parsed yet. */
  let flush = (): void => undefined;
  return {
    callId,
    stream() {
      flush();
      streamings++;
      // A repair asks again within the attempt: the hub resets the call as after a retry.
      publisher.publish({ t: 'start', runId, ...(sessionId ? { sessionId } : {}), callId, attempt: scope.attempt + streamings - 1 });
      const deltas = new FieldDeltas();
      let seq = 0;
      // Pieces that arrive together (one network read holds several; a provider may hand its reply over
      // at once) are parsed together, once, right after: the partial parse reads the whole reply so far,
      // so parsing at every piece cost O(length²) a reply.
      let queued = '';
      const publishQueued = () => {
        const text = queued;
        queued = '';
        for (const { field, delta } of deltas.push(text)) {
          publisher.publish({ t: 'token', runId, ...(sessionId ? { sessionId } : {}), callId, ...(stepId ? { stepId } : {}), ...(taskIndex ? { taskIndex } : {}), field, delta, seq: ++seq });
        }
      };
      flush = () => {
        if (queued !== '') publishQueued();
      };
      return (text) => {
        if (text === '') return;
        if (queued === '') queueMicrotask(flush);
        queued += text;
      };
    },
    end() {
      flush();
      publisher.publish({ t: 'end', runId, callId });
    },
  };
}
