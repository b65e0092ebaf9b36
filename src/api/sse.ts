/**
 * Server-Sent Events plumbing shared by the API's streams (a run's states, a
 * memory thread's operations): headers, keep-alive comments, a poll loop, and
 * stopping as soon as the client leaves, the server shuts down, or the caller's
 * API key is revoked or expires (then with an `error` event).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Response } from 'express';
import type { Logger } from 'pino';
import { keyCheckOf, type KeyCheck } from './authenticate';
import type { ErrorBody } from './error-body';

export interface SseTiming {
  /** How often the source is read. @default 250 */
  pollMs?: number;
  /** Interval of the keep-alive comment that stops proxies from closing an idle stream. @default 15000 */
  heartbeatMs?: number;
  /** How often the caller's API key is checked again: a stream ends once it is revoked or expires. @default 5000 */
  keyCheckMs?: number;
}

export interface PollStreamOptions extends SseTiming {
  logger: Logger;
  /** Aborted when the server shuts down: the stream ends so the server can close. */
  shutdown?: AbortSignal;
  /** Logged with a failing read, e.g. `{ runId }`. */
  context: Record<string, unknown>;
  /**
   * Called once the stream is open, before the first poll (which may wait, e.g. for a query while a
   * run's local call runs): a source that pushes (live tokens) sends through `send` from then on;
   * the function it returns is called when the stream ends.
   */
  onOpen?: (send: SendEvent) => () => void;
}

const STOPPED = Symbol('stopped');

/** Reads still in flight of streams that ended first, by their server's shutdown signal. */
const leftReads = new WeakMap<AbortSignal, Set<Promise<unknown>>>();

/**
 * Resolves once the reads that streams left behind at shutdown have settled (at most `timeoutMs`):
 * awaited before the Temporal connection closes, since a query cut by a closing channel never settles
 * and fails later as an uncaught error.
 */
export async function streamReadsSettled(shutdown: AbortSignal, timeoutMs = 10_000): Promise<void> {
  const reads = leftReads.get(shutdown);
  if (!reads || reads.size === 0) return;
  await Promise.race([Promise.allSettled([...reads]), sleep(timeoutMs, undefined, { ref: false })]);
}

/** Keeps a read a stream stopped waiting for (`read` never rejects) until it settles. */
function leaveBehind(shutdown: AbortSignal | undefined, read: Promise<unknown>): void {
  if (!shutdown) return;
  const reads = leftReads.get(shutdown) ?? new Set<Promise<unknown>>();
  leftReads.set(shutdown, reads);
  reads.add(read);
  void read.finally(() => reads.delete(read));
}

/** Writes one event; `id` lets a reconnecting client resume (`Last-Event-ID`). */
export type SendEvent = (event: string, data: unknown, id: string | number) => void;

/**
 * Turns `res` into an event stream and calls `poll` at once, then every `pollMs`,
 * until it returns false, the client disconnects or the server shuts down; then
 * ends the response. A throwing `poll` is logged (once per outage) and retried
 * at the next interval: the source may be briefly unavailable.
 *
 * Read what can fail with a 404 before calling this: after it, headers are sent.
 */
export async function pollEventStream(res: Response, options: PollStreamOptions, poll: (send: SendEvent) => Promise<boolean>): Promise<void> {
  const pollMs = options.pollMs ?? 250;
  const heartbeatMs = options.heartbeatMs ?? 15_000;

  res.status(200).set({
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache, no-transform',
    connection: 'keep-alive',
    'x-accel-buffering': 'no', // nginx would otherwise hold events back
  });
  res.flushHeaders();
  res.socket?.setNoDelay(true);

  const stop = new AbortController();
  const end = () => stop.abort();
  res.on('close', end); // the client went away
  options.shutdown?.addEventListener('abort', end, { once: true });
  // A client that went away while the route was still reading (before this listener) closed its response
  // unheard: without this, the stream would poll for nobody, forever.
  const gone = () => res.destroyed || !res.socket || res.socket.destroyed;
  if (options.shutdown?.aborted || gone()) end();
  const write = (chunk: string) => {
    if (!stop.signal.aborted && !res.destroyed && !res.writableEnded) res.write(chunk);
  };
  const heartbeat = setInterval(() => write(': heartbeat\n\n'), heartbeatMs);
  const send: SendEvent = (event, data, id) => write(`event: ${event}\nid: ${id}\ndata: ${JSON.stringify(data)}\n\n`);
  // A key checked once, when the stream opened, would keep a revoked or expired key reading for hours.
  const keyCheck = keyCheckOf(res);
  const keyTimer = keyCheck ? setInterval(() => void endIfKeyUnusable(keyCheck), options.keyCheckMs ?? 5_000) : undefined;
  const endIfKeyUnusable = async (check: KeyCheck) => {
    const why = await check().catch(() => null); // a key store briefly unreachable: checked again next time
    if (!why || stop.signal.aborted) return;
    const body: ErrorBody = { error: { code: 'unauthorized', message: `${why}; the stream ends` } };
    write(`event: error\ndata: ${JSON.stringify(body)}\n\n`);
    end();
  };

  // A read may wait long (a query of a run no worker serves): the stream must still end when its client
  // leaves or the server shuts down, or its heartbeat keeps the process alive.
  const stopped = new Promise<typeof STOPPED>((resolve) => {
    if (stop.signal.aborted) resolve(STOPPED);
    else stop.signal.addEventListener('abort', () => resolve(STOPPED), { once: true });
  });
  let failing = false;
  let closePushed: (() => void) | undefined;
  try {
    if (options.onOpen && !stop.signal.aborted) closePushed = options.onOpen(send);
    for (;;) {
      try {
        const reading = poll(send);
        const more = await Promise.race([reading, stopped]);
        if (more === STOPPED) {
          leaveBehind(
            options.shutdown,
            reading.catch(() => undefined),
          );
          break;
        }
        failing = false;
        if (!more) break;
      } catch (err) {
        if (!failing) options.logger.warn({ err, ...options.context }, 'reading the source of an event stream failed; retrying');
        failing = true;
      }
      if (stop.signal.aborted || gone()) break;
      try {
        await sleep(pollMs, undefined, { signal: stop.signal });
      } catch {
        break; // aborted: client gone or server closing
      }
    }
  } finally {
    closePushed?.();
    clearInterval(heartbeat);
    clearInterval(keyTimer);
    res.off('close', end);
    options.shutdown?.removeEventListener('abort', end);
    if (!res.writableEnded) res.end();
  }
}
