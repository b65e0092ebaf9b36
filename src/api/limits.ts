/**
 * Per-user limits, so one caller cannot starve the rest or run up costs: runs started, messages
 * sent, sessions created (each a workflow idling up to SESSION_IDLE_MINUTES), long-term searches
 * (an embeddings call each) and codec calls per minute, imports (up to 10 MB each, then a
 * background extraction) per hour — 429 with Retry-After — and event streams and sessions open at
 * once. A caller is its API key's user, else the `userId` it names (path, body or query), else its
 * address. A limit of 0 is off.
 */
import type { Request, RequestHandler, Response } from 'express';
import { ipKeyGenerator, rateLimit, type Store } from 'express-rate-limit';
import { principalOf } from './authenticate';
import { ApiError } from './errors';
import { userKey } from '../text/user-key';

export interface ApiLimits {
  runsPerMinute: number;
  messagesPerMinute: number;
  streamsPerUser: number;
  /** Sessions created per minute. */
  sessionsPerMinute: number;
  /** Sessions open (their workflow running) at once. */
  openSessionsPerUser: number;
  /** Long-term memory imports per hour. */
  importsPerHour: number;
  /** Conversations of one import the background extraction reads (the rest stay searchable as messages). */
  extractedPerImport: number;
  /** Long-term memory searches per minute. */
  searchesPerMinute: number;
  /** Codec calls (`/v1/codec/*`, the Web UI decoding history) per minute. */
  codecPerMinute: number;
}

/** Every limit off: a local, unauthenticated API. */
export const NO_LIMITS: ApiLimits = {
  runsPerMinute: 0,
  messagesPerMinute: 0,
  streamsPerUser: 0,
  sessionsPerMinute: 0,
  openSessionsPerUser: 0,
  importsPerHour: 0,
  extractedPerImport: 0,
  searchesPerMinute: 0,
  codecPerMinute: 0,
};

function callerOf(req: Request, res: Response): string {
  const principal = principalOf(res);
  if (principal) return `key:${userKey(principal.userId)}`;
  const named = req.params.userId ?? (req.body as { userId?: unknown } | undefined)?.userId ?? req.query.userId;
  return typeof named === 'string' && named ? `user:${userKey(named)}` : `ip:${ipKeyGenerator(req.ip ?? 'unknown')}`;
}

/** A limit that is off. */
export const noLimit: RequestHandler = (_req, _res, next) => next();

/**
 * Where a limit's counters live, by the limit's name: a store shared by every API process
 * (rate-limit-store.ts); without one, each process counts in its own memory.
 */
export type CounterStores = (name: string) => Store;

/** At most `perMinute` requests per caller per minute through this middleware. */
export function perMinute(perMinute: number, what: string, counters?: CounterStores): RequestHandler {
  return perWindow(perMinute, 'minute', what, counters);
}

const WINDOWS = { minute: { ms: 60_000, per: 'a minute' }, hour: { ms: 3_600_000, per: 'an hour' } } as const;

/** At most `limit` requests per caller per minute or hour through this middleware. */
export function perWindow(limit: number, window: keyof typeof WINDOWS, what: string, counters?: CounterStores): RequestHandler {
  if (limit <= 0) return noLimit;
  const { ms: windowMs, per } = WINDOWS[window];
  return rateLimit({
    windowMs,
    limit,
    // A shared store that cannot answer lets the request through (logged by express-rate-limit):
    // a database hiccup must not turn every request into a 500.
    ...(counters ? { store: counters(`${window}:${what}`), passOnStoreError: true } : {}),
    standardHeaders: 'draft-7',
    legacyHeaders: false,
    keyGenerator: callerOf,
    handler: (req, res, next) => {
      const reset = (req as Request & { rateLimit?: { resetTime?: Date } }).rateLimit?.resetTime;
      const seconds = Math.max(1, Math.ceil(((reset?.getTime() ?? Date.now() + windowMs) - Date.now()) / 1000));
      res.set('Retry-After', String(seconds));
      next(new ApiError(429, 'rate_limited', `too many ${what}: at most ${limit} ${per}; try again in ${seconds} s`));
    },
  });
}

/** At most `max` event streams open at once per caller; a stream counts until its connection closes. */
export function streamsPerCaller(max: number): RequestHandler {
  if (max <= 0) return noLimit;
  const open = new Map<string, number>();
  return (req, res, next) => {
    const caller = callerOf(req, res);
    const count = open.get(caller) ?? 0;
    if (count >= max) {
      res.set('Retry-After', '5');
      return next(new ApiError(429, 'rate_limited', `too many open event streams: at most ${max} at once; close one first`));
    }
    open.set(caller, count + 1);
    res.once('close', () => {
      const left = (open.get(caller) ?? 1) - 1;
      if (left > 0) open.set(caller, left);
      else open.delete(caller);
    });
    next();
  };
}
