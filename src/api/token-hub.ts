/**
 * Live tokens in an API process (issue 29): hears the workers' messages (src/live/), keeps a small
 * buffer per run, and hands `token` and `token_reset` events to the event streams watching the
 * run or its session. The buffer is what lets a stream that reconnects with `Last-Event-ID`
 * resume without a gap or a repeat, and a newcomer see the call in progress from its start.
 *
 * Event ids: `t.<hub>.<n>`, n counting every event this hub gave out. A resume from a token id of
 * this hub replays the buffered events after it; from a state's id, those after the moment this
 * hub first gave that state out (`mark`); from anything else (another API process, a restarted
 * one), each open call again from a `token_reset`, so a client never keeps text twice.
 *
 * The hub tells the workers which runs and sessions it has readers for (src/live/watch.ts): a call
 * nobody watches is not sent, and one that gets a reader mid-call is sent from its start.
 */
import { randomBytes } from 'node:crypto';
import { openSubscriber, type ChannelConfig } from '../live/channels';
import type { LiveMessage, LiveSubscriber } from '../live/messages';
import { WatchAnnouncer, watchKey } from '../live/watch';

export interface TokenData {
  runId: string;
  callId: string;
  stepId?: string;
  taskIndex?: string;
  field: string;
  delta: string;
  seq: number;
}

export interface HubEvent {
  /** The SSE id. */
  id: string;
  n: number;
  event: 'token' | 'token_reset';
  runId: string;
  sessionId?: string;
  callId: string;
  data: TokenData | { runId: string; callId: string };
}

export interface TokenHubOptions {
  /** Events kept per run. @default 2000 */
  perRun?: number;
  /** Events kept in all. @default 200000 */
  total?: number;
  /** A run's buffer is dropped this long after its last message. @default 10 min */
  idleMs?: number;
  /** The events of a finished call are dropped this long after it finished. @default 60 s */
  endedMs?: number;
}

interface CallInfo {
  ended: number | null;
  /** Whether any event of this call was given out (a new start then voids them). */
  seen: boolean;
  /** The last `seq` given out, and what is added to a streaming's own count: after a reset, seq goes on growing. */
  lastSeq: number;
  offset: number;
}

interface RunBuffer {
  sessionId?: string;
  events: HubEvent[];
  calls: Map<string, CallInfo>;
  touched: number;
}

type Watcher = { runId?: string; sessionId?: string; deliver: (event: HubEvent) => void };

export class TokenHub {
  readonly instance = randomBytes(4).toString('hex');
  private n = 0;
  private total = 0;
  private readonly runs = new Map<string, RunBuffer>();
  private readonly watchers = new Set<Watcher>();
  /** State id (`run:<runId>:<version>`, `session:<id>:<version>`) → n when this hub first gave it out. */
  private readonly marks = new Map<string, number>();
  private readonly sweeper: NodeJS.Timeout;
  private readonly announcer: WatchAnnouncer;
  private readonly perRun: number;
  private readonly maxTotal: number;
  private readonly idleMs: number;
  private readonly endedMs: number;

  constructor(
    private readonly source?: LiveSubscriber,
    options: TokenHubOptions = {},
  ) {
    this.perRun = options.perRun ?? 2000;
    this.maxTotal = options.total ?? 200_000;
    this.idleMs = options.idleMs ?? 10 * 60_000;
    this.endedMs = options.endedMs ?? 60_000;
    this.announcer = new WatchAnnouncer((keys) => source?.announce(keys));
    source?.onMessages((messages) => {
      for (const message of messages) this.receive(message);
    });
    this.sweeper = setInterval(() => this.sweep(), 5_000);
    this.sweeper.unref();
  }

  /** Takes one worker message (the channel's listener calls this; tests may too). */
  receive(message: LiveMessage, now = Date.now()): void {
    let run = this.runs.get(message.runId);
    if (message.t === 'end') {
      const call = run?.calls.get(message.callId);
      if (call) call.ended = now;
      return;
    }
    if (!run) {
      run = { events: [], calls: new Map(), touched: now, ...(message.sessionId ? { sessionId: message.sessionId } : {}) };
      this.runs.set(message.runId, run);
    }
    run.touched = now;
    // Most recently used last: the first runs are the ones to evict.
    this.runs.delete(message.runId);
    this.runs.set(message.runId, run);
    const call = run.calls.get(message.callId);
    if (message.t === 'start') {
      if ((call?.seen ?? false) || message.attempt > 1) {
        // Earlier deltas of the call are void: drop them here, and tell the watchers.
        this.drop(run, (e) => e.callId === message.callId);
        this.add(run, { event: 'token_reset', runId: message.runId, callId: message.callId, data: { runId: message.runId, callId: message.callId } });
      }
      const lastSeq = call?.lastSeq ?? 0;
      run.calls.set(message.callId, { ended: null, seen: false, lastSeq, offset: lastSeq });
      return;
    }
    const info = call ?? { ended: null, seen: false, lastSeq: 0, offset: 0 };
    if (!call) run.calls.set(message.callId, info);
    info.seen = true;
    info.lastSeq = Math.max(info.lastSeq, message.seq + info.offset);
    const data: TokenData = {
      runId: message.runId,
      callId: message.callId,
      ...(message.stepId !== undefined ? { stepId: message.stepId } : {}),
      ...(message.taskIndex !== undefined ? { taskIndex: message.taskIndex } : {}),
      field: message.field,
      delta: message.delta,
      seq: message.seq + info.offset,
    };
    this.add(run, { event: 'token', runId: message.runId, callId: message.callId, data });
  }

  /**
   * Watches a run's (or a session's runs') tokens: first the buffered events the resume point
   * `lastEventId` says the client lacks (all of each open call when it has none), then live ones.
   */
  watch(target: { runId: string } | { sessionId: string }, lastEventId: string | undefined, deliver: (event: HubEvent) => void): () => void {
    const mine = (runId: string, run: RunBuffer) => ('runId' in target ? runId === target.runId : run.sessionId === target.sessionId);
    const after = this.resumePoint(target, lastEventId);
    for (const [runId, run] of this.runs) {
      if (!mine(runId, run)) continue;
      if (after !== undefined) {
        for (const e of run.events) if (e.n > after) deliver(e);
        continue;
      }
      // No resume point: each open call from its start (a reset first when the client may hold some of it).
      for (const [callId, call] of run.calls) {
        if (call.ended !== null) continue;
        const events = run.events.filter((e) => e.callId === callId);
        if (events.length === 0) continue;
        if (lastEventId !== undefined && events[0]!.event !== 'token_reset') deliver({ ...events[0]!, event: 'token_reset', data: { runId, callId } });
        for (const e of events) deliver(e);
      }
    }
    const watcher: Watcher = { ...('runId' in target ? { runId: target.runId } : { sessionId: target.sessionId }), deliver };
    this.watchers.add(watcher);
    // The workers send a call's tokens only while some API watches its run or session.
    const leave = this.announcer.add('runId' in target ? watchKey.run(target.runId) : watchKey.session(target.sessionId));
    return () => {
      this.watchers.delete(watcher);
      leave();
    };
  }

  /** Notes that a state event with this id went out (the first time only): a resume from it starts after what had gone out then. */
  mark(key: string): void {
    if (this.marks.has(key)) return;
    this.marks.set(key, this.n);
    if (this.marks.size > 20_000) for (const k of [...this.marks.keys()].slice(0, 5_000)) this.marks.delete(k);
  }

  async close(): Promise<void> {
    clearInterval(this.sweeper);
    this.announcer.close();
    this.watchers.clear();
    await this.source?.close();
  }

  private resumePoint(target: { runId: string } | { sessionId: string }, lastEventId: string | undefined): number | undefined {
    if (!lastEventId) return undefined;
    const token = /^t\.([0-9a-f]+)\.(\d+)$/.exec(lastEventId);
    if (token) return token[1] === this.instance ? Number(token[2]) : undefined;
    // A state's id: the run stream's `<version>`, the session stream's `<runId>:<version>` or `session:<version>`.
    const key = 'runId' in target ? `run:${target.runId}:${lastEventId}` : lastEventId.startsWith('session:') ? `session:${target.sessionId}:${lastEventId.slice(8)}` : `run:${lastEventId}`;
    return this.marks.get(key);
  }

  private add(run: RunBuffer, event: Omit<HubEvent, 'id' | 'n' | 'sessionId'>): void {
    const n = ++this.n;
    const full: HubEvent = { ...event, id: `t.${this.instance}.${n}`, n, ...(run.sessionId ? { sessionId: run.sessionId } : {}) };
    run.events.push(full);
    this.total++;
    if (run.events.length > this.perRun) this.drop(run, (_e, i) => i < run.events.length - this.perRun);
    while (this.total > this.maxTotal && this.runs.size > 0) {
      const [oldest, buffer] = this.runs.entries().next().value as [string, RunBuffer];
      this.total -= buffer.events.length;
      this.runs.delete(oldest);
    }
    for (const watcher of this.watchers) {
      if (watcher.runId === event.runId || (watcher.sessionId !== undefined && watcher.sessionId === run.sessionId)) {
        try {
          watcher.deliver(full);
        } catch {
          // a stream that fails to write is the stream's problem
        }
      }
    }
  }

  private drop(run: RunBuffer, which: (e: HubEvent, i: number) => boolean): void {
    const kept = run.events.filter((e, i) => !which(e, i));
    this.total -= run.events.length - kept.length;
    run.events = kept;
  }

  private sweep(now = Date.now()): void {
    for (const [runId, run] of this.runs) {
      if (now - run.touched > this.idleMs) {
        this.total -= run.events.length;
        this.runs.delete(runId);
        continue;
      }
      for (const [callId, call] of run.calls) {
        if (call.ended !== null && now - call.ended > this.endedMs) {
          this.drop(run, (e) => e.callId === callId);
          run.calls.delete(callId);
        }
      }
    }
  }
}

/**
 * A hub on the deployment's channel (src/live/channels.ts), listening from now on; a channel that
 * cannot be opened leaves the streams without tokens (logged by `onError`), never the API down.
 */
export function openTokenHub(config: ChannelConfig, onError: (err: unknown) => void = () => undefined): TokenHub {
  const listeners: ((messages: LiveMessage[]) => void)[] = [];
  let closed = false;
  const opened = openSubscriber(config).then(
    (subscriber) => {
      if (closed) void subscriber.close();
      else subscriber.onMessages((messages) => listeners.forEach((l) => l(messages)));
      return subscriber;
    },
    (err: unknown) => {
      onError(err);
      return undefined;
    },
  );
  let subscriber: LiveSubscriber | undefined;
  void opened.then((s) => (subscriber = s));
  return new TokenHub({
    onMessages: (listener) => void listeners.push(listener),
    announce: (keys) => subscriber?.announce(keys),
    async close() {
      closed = true;
      await (await opened)?.close();
    },
  });
}
