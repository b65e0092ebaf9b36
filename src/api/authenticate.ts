/**
 * Who is calling: with THREADLINE_AUTH=apikey every request but `/healthz` (and browsers' CORS
 * preflights, which carry no credentials; and the routes mounted before this middleware, which hold
 * no data: the `/inspector` page, `/openapi.json` and `/docs`) needs `Authorization: Bearer <key>`, checked against the
 * key store on each request — a revoked key fails at once. The caller becomes `res.locals.principal`;
 * `validated()` then takes a user's id from the key (src/api/validate.ts).
 */
import type { RequestHandler, Response } from 'express';
import { ipKeyGenerator } from 'express-rate-limit';
import { isAdminKey, parseKey, sameSecret, unusable } from '../auth/keys';
import type { Role } from '../auth/roles';
import type { ApiKeyStore } from '../store/keys/key-store';
import { ApiError } from './errors';
import { isLoopback } from './host-guard';
import { sameUser } from '../text/user-key';

export interface Principal {
  /** The user a user key belongs to; admins act for whoever a request names. */
  userId: string;
  role: Role;
  /** `bootstrap` for THREADLINE_ADMIN_KEY. */
  keyId: string;
}

export interface AuthOptions {
  mode: 'none' | 'apikey';
  store?: ApiKeyStore;
  adminKey?: string;
  /**
   * Failed authentications one client (its address; IPv6 by /56) may make per minute: past it, every
   * request of that client is 429 until the minute ends, its key not looked at (0: no limit).
   * @default 30
   */
  failuresPerMinute?: number;
}

/** Clients whose failures are remembered at once: past it the oldest windows go first. */
const MAX_CLIENTS = 10_000;
const WINDOW_MS = 60_000;

/**
 * Failed authentications per client in fixed one-minute windows. Guessing a key (above all a short
 * THREADLINE_ADMIN_KEY) from one address gets `limit` tries a minute, and a flood of bad keys stops
 * costing key-store reads. A throttled client is refused whatever key it sends: a valid key let
 * through would tell a guesser it had found one.
 */
class FailedAttempts {
  /** In the order their windows began (a new window re-inserts), so the oldest come first. */
  readonly #windows = new Map<string, { count: number; endsAt: number }>();
  constructor(private readonly limit: number) {}

  /** Seconds until `client` may try again; 0 when it may now. */
  waitOf(client: string, now: number): number {
    const w = this.#windows.get(client);
    return w && w.endsAt > now && w.count >= this.limit ? Math.ceil((w.endsAt - now) / 1000) : 0;
  }

  fail(client: string, now: number): void {
    let w = this.#windows.get(client);
    if (!w || w.endsAt <= now) {
      this.#windows.delete(client);
      for (const [other, ow] of this.#windows) {
        if (ow.endsAt > now && this.#windows.size < MAX_CLIENTS) break;
        this.#windows.delete(other);
      }
      w = { count: 0, endsAt: now + WINDOW_MS };
      this.#windows.set(client, w);
    }
    w.count++;
  }
}

/** The authenticated caller, or undefined when auth is off. */
export const principalOf = (res: Response): Principal | undefined => res.locals.principal as Principal | undefined;

/** Why the caller's key may no longer be used (revoked or expired since the request came), or null while it may. */
export type KeyCheck = () => Promise<string | null>;
const KEY_CHECK = 'keyCheck';

/**
 * How a response that outlives its request (an event stream) checks the key again; undefined when
 * there is nothing to check (auth off, or THREADLINE_ADMIN_KEY, which only a restart changes).
 */
export const keyCheckOf = (res: Response): KeyCheck | undefined => res.locals[KEY_CHECK] as KeyCheck | undefined;

const unauthorized = (why: string) => new ApiError(401, 'unauthorized', `${why}; send "Authorization: Bearer <API key>"`);

export function authenticate(options: AuthOptions): RequestHandler {
  const limit = options.failuresPerMinute ?? 30;
  const failures = limit > 0 ? new FailedAttempts(limit) : undefined;
  return async (req, res, next) => {
    if (options.mode === 'none' || req.method === 'OPTIONS' || req.path === '/healthz') return next();
    const client = ipKeyGenerator(req.ip ?? 'unknown');
    // Not per client on loopback: there every client is one address (local tools, tests, a reverse proxy
    // on this host), and 30 bad keys from any of them would lock all of them out for a minute.
    const counted = failures && !isLoopback((req.ip ?? '').replace(/^::ffff:/, '')) ? failures : undefined;
    const wait = counted?.waitOf(client, Date.now()) ?? 0;
    if (wait > 0) {
      res.set('Retry-After', String(wait));
      return next(new ApiError(429, 'rate_limited', `too many failed authentications from this address: at most ${limit} a minute; try again in ${wait} s`));
    }
    try {
      const header = req.get('authorization') ?? '';
      const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
      if (!m?.[1]) throw unauthorized(header ? 'the Authorization header is not a Bearer token' : 'an API key is required');
      const presented = m[1];
      if (isAdminKey(presented, options.adminKey)) {
        res.locals.principal = { userId: 'admin', role: 'admin', keyId: 'bootstrap' } satisfies Principal;
        return next();
      }
      const parsed = parseKey(presented);
      const record = parsed ? await options.store?.get(parsed.keyId) : undefined;
      if (!parsed || !record || !sameSecret(parsed.secret, record.hash)) throw unauthorized('the API key is not valid');
      const why = unusable(record, new Date());
      if (why) throw unauthorized(why);
      res.locals.principal = { userId: record.userId, role: record.role, keyId: record.keyId } satisfies Principal;
      const { store } = options;
      res.locals[KEY_CHECK] = (async () => {
        const now = await store?.get(record.keyId);
        return now ? unusable(now, new Date()) : 'the API key was deleted';
      }) satisfies KeyCheck;
      next();
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) counted?.fail(client, Date.now());
      next(err);
    }
  };
}

/** Admin routes: 403 for user keys (auth off: open, as every route is). */
export const requireAdmin: RequestHandler = (_req, res, next) => {
  const principal = principalOf(res);
  if (principal && principal.role !== 'admin') return next(new ApiError(403, 'forbidden', 'this route needs an admin key'));
  next();
};

/**
 * A user's requests name only that user: a missing `userId` in a body or query is taken from the key,
 * another one is 403. Admins may name anyone.
 */
export function scopeToCaller(res: Response, part: 'body' | 'query', value: unknown): unknown {
  const principal = principalOf(res);
  if (!principal || principal.role === 'admin' || typeof value !== 'object' || value === null || Array.isArray(value)) return value;
  const given = (value as { userId?: unknown }).userId;
  if (given === undefined) return { ...value, userId: principal.userId };
  if (typeof given !== 'string' || !sameUser(given, principal.userId))
    throw new ApiError(403, 'forbidden', `this API key belongs to user "${principal.userId}"; it may not act for "${String(given)}"`);
  return value;
}
