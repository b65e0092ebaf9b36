/**
 * The sessions API (`/v1/sessions`, issue 4 §6): create a conversation, send it
 * messages (the session decides whether each is a command, a reply to a waiting
 * run, a retry or a new run), read its memory, clear it, watch it live. A thin
 * layer over `Sessions`; errors go to the app's one handler.
 */
import { Router, type RequestHandler } from 'express';
import type { Logger } from 'pino';
import { runUiUrl, type Config } from '../config';
import type { Runs } from '../temporal/runs';
import { SessionNotFoundError, type Sessions } from '../temporal/sessions';
import { noLimit } from './limits';
import { ownedBy } from './ownership';
import { streamSessionEvents } from './session-events';
import { CreateSessionBody, ListSessionsQuery, MessageBody, SessionParams } from './session-schemas';
import type { SseTiming } from './sse';
import { validated } from './validate';

export interface SessionsRouterOptions {
  sessions: Pick<Sessions, 'create' | 'list' | 'get' | 'send' | 'clear' | 'end'> & Partial<Pick<Sessions, 'ownerOf'>>;
  /** Reads the session's runs for its event stream. */
  runs: Pick<Runs, 'get'>;
  config: Pick<Config, 'uiUrl' | 'TEMPORAL_NAMESPACE'>;
  logger: Logger;
  /** Aborting it ends open streams, so a closing server is not held open by them. */
  shutdown?: AbortSignal;
  /** Timing of `GET /v1/sessions/:sessionId/events`. */
  events?: SseTiming;
  /** Per-user limits on sending messages and on open event streams. */
  limits?: { messages: RequestHandler; streams: RequestHandler; budget?: RequestHandler };
}

export function sessionsRouter(options: SessionsRouterOptions): Router {
  const { sessions, runs, config, logger } = options;
  const router = Router();
  const sessionOwner = sessions.ownerOf?.bind(sessions);
  if (sessionOwner) router.param('sessionId', ownedBy(sessionOwner, (id) => new SessionNotFoundError(id)));

  router.post(
    '/v1/sessions',
    validated({ body: CreateSessionBody }, async ({ body }, _req, res) => {
      const { sessionId, threadId } = await sessions.create(body);
      res
        .status(201)
        .location(`/v1/sessions/${encodeURIComponent(sessionId)}`)
        .json({ sessionId, threadId, uiUrl: runUiUrl(config, sessionId) });
    }),
  );

  router.get(
    '/v1/sessions',
    validated({ query: ListSessionsQuery }, async ({ query }, _req, res) => {
      res.json({ sessions: await sessions.list(query) });
    }),
  );

  router.get(
    '/v1/sessions/:sessionId',
    validated({ params: SessionParams }, async ({ params }, _req, res) => {
      res.json(await sessions.get(params.sessionId));
    }),
  );

  router.post(
    '/v1/sessions/:sessionId/messages',
    options.limits?.messages ?? noLimit,
    options.limits?.budget ?? noLimit,
    validated({ params: SessionParams, body: MessageBody }, async ({ params, body }, _req, res) => {
      const outcome = await sessions.send(params.sessionId, body.text);
      // Where to watch the run the message started or answered (as `POST /v1/runs` says for its run).
      res.json(outcome.runId ? { ...outcome, uiUrl: runUiUrl(config, outcome.runId) } : outcome);
    }),
  );

  // Ends the conversation (as `/end`): runs still open are cancelled, long-term memory promotes what is worth keeping.
  router.delete(
    '/v1/sessions/:sessionId',
    validated({ params: SessionParams }, async ({ params }, _req, res) => {
      res.json(await sessions.end(params.sessionId));
    }),
  );

  router.delete(
    '/v1/sessions/:sessionId/memory',
    validated({ params: SessionParams }, async ({ params }, _req, res) => {
      res.json(await sessions.clear(params.sessionId));
    }),
  );

  router.get(
    '/v1/sessions/:sessionId/events',
    options.limits?.streams ?? noLimit,
    validated({ params: SessionParams }, async ({ params }, _req, res) => {
      await streamSessionEvents({ sessions, runs, logger, shutdown: options.shutdown }, params.sessionId, res, options.events);
    }),
  );

  return router;
}
