/**
 * Live tokens (issue 29): what a worker tells the APIs while a model call streams. These messages
 * never touch Temporal: they go over a channel of their own (src/live/channels.ts), best effort,
 * and the final text is always the one in the run's ExecutionState.
 */
import { WatchedSet } from './watch';

/** A model call began streaming (again, after a retry, a crash or a repair): earlier deltas of `callId` are void. */
export interface CallStart {
  t: 'start';
  runId: string;
  sessionId?: string;
  callId: string;
  /** The activity's attempt: above 1 the call is a retry, whether or not this API saw the first. */
  attempt: number;
}

/** A piece of a human-readable reply field (`answer`, `thought`, `steps[0].description`, …). */
export interface TokenDelta {
  t: 'token';
  runId: string;
  sessionId?: string;
  callId: string;
  stepId?: string;
  taskIndex?: string;
  field: string;
  delta: string;
  /** 1, 2, … within one streaming of the call (it starts again at 1 after a reset; the API's hub renumbers so clients see it grow). */
  seq: number;
}

/** The call's stream is over (its reply is in, or it failed): its tokens are not worth replaying to a newcomer. */
export interface CallEnd {
  t: 'end';
  runId: string;
  callId: string;
}

export type LiveMessage = CallStart | TokenDelta | CallEnd;

/** Fire and forget: never blocks, never throws; what cannot be sent soon is dropped. */
export interface LivePublisher {
  /** False when no one could be listening (no API registered): the model call then need not stream. */
  wanted(): boolean;
  /** Whether an API has a reader of this run's tokens, or of its session's (src/live/watch.ts). */
  watched(runId: string, sessionId: string | undefined): boolean;
  publish(message: LiveMessage): void;
  close(): Promise<void>;
}

/** Where an API hears the workers' messages. */
export interface LiveSubscriber {
  onMessages(listener: (messages: LiveMessage[]) => void): void;
  /** Tells the workers these watch keys have readers here (best effort: never throws, never waits). */
  announce(keys: readonly string[]): void;
  close(): Promise<void>;
}

/** PostgreSQL's NOTIFY payload limit is 8000 bytes; datagrams are kept as small. */
export const MAX_PAYLOAD_BYTES = 7900;
/** A delta is cut to this many characters, so one message always fits a payload (≤ 3 bytes a character, plus the ids). */
export const MAX_DELTA_CHARS = 1000;

/** Packs messages into JSON payloads (arrays) of at most MAX_PAYLOAD_BYTES each. */
export function packMessages(messages: LiveMessage[]): string[] {
  const payloads: string[] = [];
  let parts: string[] = [];
  let size = 2;
  for (const message of messages) {
    const json = JSON.stringify(message);
    const bytes = Buffer.byteLength(json);
    if (bytes + 2 > MAX_PAYLOAD_BYTES) continue; // cannot happen with deltas of MAX_DELTA_CHARS; never send what a listener would refuse
    if (parts.length > 0 && size + bytes + 1 > MAX_PAYLOAD_BYTES) {
      payloads.push(`[${parts.join(',')}]`);
      parts = [];
      size = 2;
    }
    parts.push(json);
    size += bytes + 1;
  }
  if (parts.length > 0) payloads.push(`[${parts.join(',')}]`);
  return payloads;
}

/** Reads a payload; anything malformed is ignored (the channel is best effort, never a reason to fail). */
export function unpackMessages(payload: string): LiveMessage[] {
  try {
    const parsed: unknown = JSON.parse(payload);
    if (!Array.isArray(parsed)) return [];
    return parsed.filter(
      (m): m is LiveMessage => typeof m === 'object' && m !== null && typeof (m as { runId?: unknown }).runId === 'string' && typeof (m as { callId?: unknown }).callId === 'string',
    );
  } catch {
    return [];
  }
}

/**
 * The worker's side of a channel: messages are queued (bounded) and sent on the next turn of the
 * event loop, packed into few payloads; a full queue drops, and a call that lost a delta sends no
 * more deltas (its reader would see a hole; the final state has the whole text).
 */
export abstract class BatchingPublisher implements LivePublisher {
  private queue: LiveMessage[] = [];
  private scheduled = false;
  private readonly broken = new Set<string>();
  /** What the APIs announced they watch; subclasses hear it on their channel. */
  protected readonly watching = new WatchedSet();
  protected closed = false;
  /** Messages dropped because the queue was full (for tests and the log). */
  dropped = 0;

  constructor(private readonly maxQueued = 5000) {}

  abstract wanted(): boolean;

  watched(runId: string, sessionId: string | undefined): boolean {
    return this.watching.has(runId, sessionId);
  }

  /** Sends one payload without waiting; must not throw. */
  protected abstract send(payload: string): void;
  abstract close(): Promise<void>;

  publish(message: LiveMessage): void {
    if (this.closed) return;
    if (message.t === 'start') this.broken.delete(message.callId);
    else if (message.t === 'token' && this.broken.has(message.callId)) return;
    if (this.queue.length >= this.maxQueued) {
      this.dropped++;
      if (message.t === 'token') this.broken.add(message.callId);
      if (this.broken.size > 10_000) this.broken.clear();
      return;
    }
    this.queue.push(message);
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.flush());
    }
  }

  protected flush(): void {
    this.scheduled = false;
    const messages = this.queue;
    this.queue = [];
    if (this.closed || messages.length === 0) return;
    for (const payload of packMessages(messages)) this.send(payload);
  }
}
