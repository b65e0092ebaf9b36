/**
 * Per-user limits, so one caller cannot starve the rest: runs started and messages sent per
 * minute (429 with Retry-After), and event streams open at once. A caller is its API key's user,
 * else the `userId` it names, else its address. A limit of 0 is off.
 */
import type { Request, RequestHandler, Response } from 'express';
import { ipKeyGenerator, rateLimit } from 'express-rate-limit';
import { principalOf } from './authenticate';
import { ApiError } from './errors';

export interface ApiLimits {
  runsPerMinute: number;
  messagesPerMinute: number;
  streamsPerUser: number;
}

function callerOf(req: Request, res: Response): string {
  const principal = principalOf(res);
  if (principal) return `key:${principal.userId}`;
  const named = (req.body as { userId?: unknown } | undefined)?.userId ?? req.query.userId;
  return typeof named === 'string' && named ? `user:${named}` : `ip:${ipKeyGenerator(req.ip ?? 'unknown')}`;
}

/** A limit that is off. */
export const noLimit: RequestHandler = (_req, _res, next) => next();

/** At most `perMinute` requests per caller per minute through this middleware. */
export function perMinute(perMinute: number, what: string): RequestHandler {
  if (perMinute <= 0) return noLimit;
  return rateLimit({
    windowMs: 60_000,
    limit: perMinute,
    standardHeaders: 'draft-7',
    legacyHeaders: false,
    keyGenerator: callerOf,
    handler: (req, res, next) => {
      const reset = (req as Request & { rateLimit?: { resetTime?: Date } }).rateLimit?.resetTime;
      const seconds = Math.max(1, Math.ceil(((reset?.getTime() ?? Date.now() + 60_000) - Date.now()) / 1000));
      res.set('Retry-After', String(seconds));
      next(new ApiError(429, 'rate_limited', `too many ${what}: at most ${perMinute} a minute; try again in ${seconds} s`));
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
