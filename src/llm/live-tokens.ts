/**
 * Live tokens on the model-call side (issue 29). An activity runs inside a token scope (set by the
 * worker's interceptor, src/activities/live-tokens-interceptor.ts: the call's idempotency key, its
 * attempt, the publisher); `completeStructured` opens a LiveCall for each structured call of a run
 * and hands its text sink to the provider, which feeds it the reply's text as it streams. The sink
 * parses the JSON as it arrives (`@streamparser/json`, a streaming parser) and publishes what grew of
 * the reply's human-readable fields. Nothing here reaches Temporal: the activity's result is the
 * whole, validated reply, as before.
 */
import { ContextSlot } from '../telemetry/context-slot';
import { createHash } from 'node:crypto';
import { JSONParser } from '@streamparser/json';
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

const scopes = new ContextSlot<TokenScope>('tokenScope');
const sinks = new ContextSlot<TextSink>('textSink');

/** Runs `fn` (an activity) with the scope its model calls stream under. */
export const withTokenScope = <T>(scope: TokenScope, fn: () => Promise<T>): Promise<T> => scopes.run({ ...scope, ordinals: new Map() }, fn);

/** Receives the reply's text as it arrives, piece by piece. */
export type TextSink = (text: string) => void;

/** Runs `fn` (a provider's `complete`) with a sink for its reply's text. */
export const withTextSink = <T>(sink: TextSink, fn: () => Promise<T>): Promise<T> => sinks.run(sink, fn);

/** The sink of the call in progress, if anyone could be listening: a provider streams only then. */
export const currentTextSink = (): TextSink | undefined => sinks.get();

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
/** Past this much reply text, a call stops streaming (a field's value so far is made again at every piece). */
const MAX_STREAMED_TEXT = 64 * 1024;

/**
 * The path of a human-readable field (`answer`, `steps[0].description`, `subtasks[1].subtasks[0].goal`),
 * or null for any other value: a string under one of HUMAN_KEYS, in the reply's object or in an item
 * of one of its LIST_KEYS lists, at any depth of those lists. `containers`: the keys from the reply's
 * object down to the value's parent.
 */
export function humanPath(containers: readonly (string | number)[], key: string | number | undefined): string | null {
  if (typeof key !== 'string' || !HUMAN_KEYS.has(key) || containers.length % 2 !== 0) return null;
  const parts: string[] = [];
  for (let i = 0; i < containers.length; i += 2) {
    const list = containers[i];
    const index = containers[i + 1];
    if (typeof list !== 'string' || !LIST_KEYS.has(list) || typeof index !== 'number') return null;
    parts.push(`${list}[${index}]`);
  }
  parts.push(key);
  return parts.join('.');
}

/** The JSON's first character, once the text before it is known: a fence (```json) and blanks are skipped. */
function jsonStart(text: string): { at: number } | 'wait' | 'not_json' {
  const blank = text.length - text.trimStart().length;
  let rest = text.slice(blank);
  let at = blank;
  if (rest === '' || '```'.startsWith(rest)) return 'wait';
  if (rest.startsWith('```')) {
    const lang = rest.slice(3);
    if (lang.length < 4 && 'json'.startsWith(lang)) return 'wait';
    const fence = /^```(?:json)?\s*/.exec(rest)![0];
    if (fence.length === rest.length) return 'wait';
    at += fence.length;
    rest = rest.slice(fence.length);
  }
  return rest.startsWith('{') ? { at } : 'not_json';
}

/** Characters of the raw text that may not read as they are written: an escape, half a surrogate pair. */
const NOT_AS_READ = /[\\\ud800-\udfff]/;
/** How far back an escape can reach into a string's value: a surrogate pair as two `\uXXXX`. */
const PLAIN_WINDOW = 12;

/**
 * Turns a reply's growing text into deltas of its human-readable fields: each call of `push`
 * returns what was added to which field since the last. The text is parsed once, as it arrives (a
 * partial parse of the whole reply at every piece cost O(length²): 8 s of CPU for a 64 kB answer in
 * pieces of 4 characters). A field's value only ever grows; one that does not (a model that wrote the
 * key twice) is left as it was — the final text is the state's. Text that is not a JSON object, or
 * stops being valid JSON, streams nothing further.
 */
export class FieldDeltas {
  /** Text before the JSON began, while it could still be a fence or blanks. */
  private before = '';
  private length = 0;
  private parser: JSONParser | undefined;
  private done = false;
  /** Per field, the value sent so far (its length is what was sent; its text is read only for a field written twice). */
  private readonly sent = new Map<string, string>();
  /** The field whose string is still open at the end of the last piece: the next piece continues it. */
  private open: string | null = null;
  /** The text being written to the parser, after the last characters written before it. */
  private writing = '';
  private recent = '';
  private out: { field: string; delta: string }[] = [];

  /** Pieces kept by `hold`, not parsed yet. */
  private held: string[] = [];
  private heldChars = 0;

  push(piece: string): { field: string; delta: string }[] {
    this.parseHeld();
    this.parse(piece);
    const out = this.out;
    this.out = [];
    return out;
  }

  /**
   * Keeps `piece` unparsed until the next `push` or `whole`: a reply nobody reads yet costs no parse
   * (the demo model's plan call: 20–37 against 59–92 µs of CPU). Past MAX_STREAMED_TEXT nothing
   * streams, so nothing more is kept.
   */
  hold(piece: string): void {
    if (this.heldChars > MAX_STREAMED_TEXT) return;
    this.held.push(piece);
    this.heldChars += piece.length;
  }

  /** Every field's text so far, as deltas from nothing: what a reader who arrives now lacks. */
  whole(): { field: string; delta: string }[] {
    this.parseHeld();
    this.out = []; // what the held pieces added is in the whole
    return [...this.sent].flatMap(([field, text]) => chunksOf(text).map((delta) => ({ field, delta })));
  }

  /** The held pieces parsed one by one, as they came, so the fields read as if each had been pushed. */
  private parseHeld(): void {
    if (this.held.length === 0) return;
    const held = this.held;
    this.held = [];
    for (const piece of held) this.parse(piece);
  }

  private parse(piece: string): void {
    this.length += piece.length;
    if (this.done || this.length > MAX_STREAMED_TEXT) return;
    let text = piece;
    if (!this.parser) {
      this.before += piece;
      const start = jsonStart(this.before);
      if (start === 'wait') return;
      if (start === 'not_json') return this.stop();
      this.parser = this.start();
      text = this.before.slice(start.at);
      this.before = '';
    }
    this.writing = this.recent + text;
    try {
      this.parser.write(text);
    } catch {
      // Past the object's end (a closing fence, a remark) or not valid JSON: nothing more to show.
      this.done = true;
    }
    this.recent = this.writing.slice(-PLAIN_WINDOW);
    this.writing = '';
  }

  private stop(): void {
    this.done = true;
    this.before = '';
  }

  private start(): JSONParser {
    const parser = new JSONParser({ emitPartialTokens: true, emitPartialValues: true, keepStack: false });
    parser.onValue = ({ value, key, stack, partial }) => {
      if (typeof value !== 'string') return;
      const field = humanPath(
        stack.slice(1).map((s) => s.key as string | number),
        key,
      );
      const continued = field !== null && this.open === field;
      this.open = partial === true ? field : null;
      if (field !== null) this.grew(field, value, continued, partial === true);
    };
    parser.onError = () => {
      this.done = true;
    };
    return parser;
  }

  /**
   * `value` is the field's string so far. Its new characters are taken from the piece itself when they
   * are its last ones (a string still open at the piece's end) and written as they read — no escape or
   * surrogate among them or just before: slicing the value would copy all of it, at every piece.
   */
  private grew(field: string, value: string, continued: boolean, open: boolean): void {
    const sent = this.sent.get(field);
    const chars = sent?.length ?? 0;
    if (value.length <= chars) return;
    // The key written again: its new value counts only where it goes on from what was sent.
    if (sent !== undefined && !continued && !value.startsWith(sent)) return;
    const added = value.length - chars;
    const plain = continued && open && this.writing.length >= added + PLAIN_WINDOW && !NOT_AS_READ.test(this.writing.slice(-(added + PLAIN_WINDOW)));
    const delta = plain ? this.writing.slice(-added) : value.slice(chars);
    this.sent.set(field, value);
    for (const piece of chunksOf(delta)) this.out.push({ field, delta: piece });
  }
}

/** A delta cut so one message always fits a payload. */
function chunksOf(text: string): string[] {
  const out: string[] = [];
  for (let i = 0; i < text.length; i += MAX_DELTA_CHARS) out.push(text.slice(i, i + MAX_DELTA_CHARS));
  return out;
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
  const scope = scopes.get();
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
  /** Whether any streaming of the call was announced: only then does its end matter to anyone. */
  let everAnnounced = false;
  return {
    callId,
    stream() {
      flush();
      streamings++;
      const attempt = scope.attempt + streamings - 1;
      const deltas = new FieldDeltas();
      let seq = 0;
      /**
       * Whether this streaming was announced. Nothing is sent until an API watches the run or its session
       * (src/live/watch.ts): then the call's start, and its text so far as one delta a field, so a reader
       * who arrives mid-call still sees it from its start; from there on, each delta as it comes.
       */
      let announced = false;
      const announce = () => {
        announced = true;
        everAnnounced = true;
        // A repair asks again within the attempt: the hub resets the call as after a retry.
        publisher.publish({ t: 'start', runId, ...(sessionId ? { sessionId } : {}), callId, attempt });
      };
      // A call some API has heard of goes on being told, or its readers would keep a void streaming's text.
      if (everAnnounced) announce();
      const send = ({ field, delta }: { field: string; delta: string }) =>
        publisher.publish({ t: 'token', runId, ...(sessionId ? { sessionId } : {}), callId, ...(stepId ? { stepId } : {}), ...(taskIndex ? { taskIndex } : {}), field, delta, seq: ++seq });
      // Pieces that arrive together (one network read holds several; a provider may hand its reply over
      // at once) are parsed together, once, right after: the partial parse reads the whole reply so far,
      // so parsing at every piece cost O(length²) a reply.
      let queued = '';
      const publishQueued = () => {
        const text = queued;
        queued = '';
        if (announced) return deltas.push(text).forEach(send);
        if (!publisher.watched(runId, sessionId)) return deltas.hold(text);
        deltas.push(text);
        announce();
        deltas.whole().forEach(send);
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
      if (everAnnounced) publisher.publish({ t: 'end', runId, callId });
    },
  };
}
