/**
 * Tenant isolation: a user key reaches only its user's runs, sessions and threads. Each router
 * registers one param handler per resource id (`:runId`, `:sessionId`, `:threadId`), so every route
 * with that id — present and future — is covered; the owner comes from the resource's service.
 * Another user's resource is the same 404 as one that does not exist.
 */
import type { RequestParamHandler } from 'express';
import { principalOf } from './authenticate';
import { sameUser } from '../text/user-key';

/** `ownerOf` answers the owning user id, or null when there is no such resource. */
export function ownedBy(ownerOf: (id: string) => Promise<string | null>, notFound: (id: string) => Error): RequestParamHandler {
  return (_req, res, next, value: unknown) => {
    const principal = principalOf(res);
    if (!principal || principal.role === 'admin') return next();
    const id = String(value);
    ownerOf(id).then(
      (owner) => next(owner !== null && sameUser(owner, principal.userId) ? undefined : notFound(id)),
      (err: unknown) => next(err),
    );
  };
}
