/**
 * Who is calling: with THREADLINE_AUTH=apikey every request but `/healthz` (and browsers' CORS
 * preflights, which carry no credentials; and the routes mounted before this middleware, which hold
 * no data: the `/inspector` page, `/openapi.json` and `/docs`) needs `Authorization: Bearer <key>`, checked against the
 * key store on each request — a revoked key fails at once. The caller becomes `res.locals.principal`;
 * `validated()` then takes a user's id from the key (src/api/validate.ts).
 */
import type { RequestHandler, Response } from 'express';
import { isAdminKey, parseKey, sameSecret, unusable, type Role } from '../auth/keys';
import type { ApiKeyStore } from '../auth/key-store';
import { ApiError } from './errors';

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
  return async (req, res, next) => {
    if (options.mode === 'none' || req.method === 'OPTIONS' || req.path === '/healthz') return next();
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
  if (given !== principal.userId) throw new ApiError(403, 'forbidden', `this API key belongs to user "${principal.userId}"; it may not act for "${String(given)}"`);
  return value;
}
