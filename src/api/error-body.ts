/**
 * The one error shape of the API (DESIGN.md: `{ "error": { "code", "message", "details"? } }`) and its
 * codes: a leaf, so what reads error bodies (the response schemas, the inspector page's bundle, SSE)
 * needs none of the server. The mapping of errors to it is errors.ts.
 */

export const ERROR_CODES = [
  'invalid_request',
  /** No API key, or one that is unknown, expired or revoked (THREADLINE_AUTH=apikey). */
  'unauthorized',
  /** The key is valid but may not do this (another user's id in the request, an admin route). */
  'forbidden',
  'not_found',
  'not_waiting',
  /** A task of a tree run that cannot be skipped or redone now (finished, not started, the run not executing). */
  'not_now',
  /** The session's workflow has ended and takes no more messages. */
  'session_closed',
  /** A memory operation the reducer or an observer refused; `details.code` says why (not_found, forbidden, invalid, vetoed). */
  'refused',
  'payload_too_large',
  /** The user's token budget for this month is used up (USER_TOKEN_BUDGET). */
  'budget_exceeded',
  /** Too many requests from one user (per-minute limits, open event streams); see Retry-After. */
  'rate_limited',
  'unsupported_media_type',
  'unavailable',
  'internal',
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];

export interface ErrorDetail {
  /** Dotted path of the offending field inside the body, query or params; the part's name for the part as a whole. */
  path: string;
  message: string;
}

/** Field-by-field issues of an invalid request, or facts of another error (e.g. `{ code }` of a refusal). */
export type ErrorDetails = ErrorDetail[] | Record<string, unknown>;

export interface ErrorBody {
  error: { code: ErrorCode; message: string; details?: ErrorDetails };
}
