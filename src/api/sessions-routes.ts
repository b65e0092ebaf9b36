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
import { ApiError } from './errors';
import { noLimit } from './limits';
import { ownedBy } from './ownership';
import { MessageOutcomeSchema, SessionCreatedSchema, SessionEndedSchema, SessionListSchema, SessionViewSchema } from './response-schemas';
import { documented } from './routes-registry';
import { streamSessionEvents } from './session-events';
import { CreateSessionBody, ListSessionsQuery, MessageBody, SessionParams } from './session-schemas';
import type { SseTiming } from './sse';
import type { TokenHub } from './token-hub';

export interface SessionsRouterOptions {
  sessions: Pick<Sessions, 'create' | 'list' | 'get' | 'send' | 'clear' | 'end'> & Partial<Pick<Sessions, 'ownerOf' | 'countOpen'>>;
  /** Reads the session's runs for its event stream. */
  runs: Pick<Runs, 'get'>;
  config: Pick<Config, 'uiUrl' | 'TEMPORAL_NAMESPACE'>;
  logger: Logger;
  /** Aborting it ends open streams, so a closing server is not held open by them. */
  shutdown?: AbortSignal;
  /** Timing of `GET /v1/sessions/:sessionId/events`. */
  events?: SseTiming;
  /** Live tokens of the session's runs on its event stream. */
  tokens?: TokenHub;
  /**
   * Per-user limits on sending messages, on open event streams, on creating sessions (`create`, a rate)
   * and on sessions open at once (`openSessions`, counted by `sessions.countOpen`; 0: none).
   */
  limits?: { messages: RequestHandler; streams: RequestHandler; budget?: RequestHandler; create?: RequestHandler; openSessions?: number };
}

export function sessionsRouter(options: SessionsRouterOptions): Router {
  const { sessions, runs, config, logger } = options;
  const router = Router();
  const sessionOwner = sessions.ownerOf?.bind(sessions);
  if (sessionOwner)
    router.param(
      'sessionId',
      ownedBy(sessionOwner, (id) => new SessionNotFoundError(id)),
    );
  const routes = documented(router, 'sessions');
  const notFound = { 404: "No such session (or not the caller's)" } as const;

  routes.post(
    '/v1/sessions',
    {
      summary: 'Start a conversation',
      request: { body: CreateSessionBody },
      responses: { 201: { description: 'Started; `Location` is the session', schema: SessionCreatedSchema } },
      errors: { 403: 'The API key may not act for this user', 429: 'Too many sessions created this minute, or open at once (see Retry-After)' },
      use: [options.limits?.create ?? noLimit],
    },
    async ({ body }, _req, res) => {
      // Each session is a workflow that idles until SESSION_IDLE_MINUTES pass: their number is bounded, not only their rate.
      const max = options.limits?.openSessions ?? 0;
      if (max > 0 && sessions.countOpen && (await sessions.countOpen(body.userId)) >= max) {
        res.set('Retry-After', '60');
        throw new ApiError(429, 'rate_limited', `too many open sessions: at most ${max} at once; end one first (DELETE /v1/sessions/:sessionId)`);
      }
      const { sessionId, threadId } = await sessions.create(body);
      res
        .status(201)
        .location(`/v1/sessions/${encodeURIComponent(sessionId)}`)
        .json({ sessionId, threadId, uiUrl: runUiUrl(config, sessionId) });
    },
  );

  routes.get(
    '/v1/sessions',
    {
      summary: 'List sessions',
      request: { query: ListSessionsQuery },
      responses: { 200: { description: 'The sessions', schema: SessionListSchema } },
      errors: { 403: 'The API key may not act for this user' },
    },
    async ({ query }, _req, res) => {
      res.json({ sessions: await sessions.list(query) });
    },
  );

  routes.get(
    '/v1/sessions/:sessionId',
    {
      summary: 'A session: its runs, chat history and task state',
      request: { params: SessionParams },
      responses: { 200: { description: 'The session as its workflow and its memory thread show it', schema: SessionViewSchema } },
      errors: notFound,
    },
    async ({ params }, _req, res) => {
      res.json(await sessions.get(params.sessionId));
    },
  );

  routes.post(
    '/v1/sessions/:sessionId/messages',
    {
      summary: "Send the person's message: a command, a reply to a waiting run, a retry or a new run",
      request: { params: SessionParams, body: MessageBody },
      responses: { 200: { description: 'What became of the message', schema: MessageOutcomeSchema } },
      errors: {
        ...notFound,
        403: "The user's monthly token budget is used up (`budget_exceeded`)",
        409: 'The session has ended (`session_closed`)',
        422: 'The session refused the message (`refused`)',
        429: 'Too many messages this minute',
      },
      use: [options.limits?.messages ?? noLimit, options.limits?.budget ?? noLimit],
    },
    async ({ params, body }, _req, res) => {
      const outcome = await sessions.send(params.sessionId, body.text, body.engine ? { engine: body.engine } : {});
      // Where to watch the run the message started or answered (as `POST /v1/runs` says for its run).
      res.json(outcome.runId ? { ...outcome, uiUrl: runUiUrl(config, outcome.runId) } : outcome);
    },
  );

  // Ends the conversation (as `/end`): runs still open are cancelled, long-term memory promotes what is worth keeping.
  routes.delete(
    '/v1/sessions/:sessionId',
    {
      summary: 'End the conversation: open runs are cancelled, long-term memory keeps what is worth keeping',
      request: { params: SessionParams },
      responses: { 200: { description: 'Ended', schema: SessionEndedSchema } },
      errors: notFound,
    },
    async ({ params }, _req, res) => {
      res.json(await sessions.end(params.sessionId));
    },
  );

  routes.delete(
    '/v1/sessions/:sessionId/memory',
    { summary: "Clear the conversation's memory", request: { params: SessionParams }, responses: { 200: { description: 'What was cleared', contentType: 'application/json' } }, errors: notFound },
    async ({ params }, _req, res) => {
      res.json(await sessions.clear(params.sessionId));
    },
  );

  routes.get(
    '/v1/sessions/:sessionId/events',
    {
      summary: 'Watch a session: Server-Sent Events',
      description:
        "`event: session` with the session (as `GET /v1/sessions/{sessionId}` shows it) whenever it changes; `event: run` with the ExecutionState of each of its open runs at each change; `event: token` and `event: token_reset` carry its runs' live tokens (as on a run's stream). Lasts while the client stays.",
      request: { params: SessionParams },
      responses: { 200: { description: 'The event stream', contentType: 'text/event-stream' } },
      errors: { ...notFound, 429: 'Too many open event streams' },
      use: [options.limits?.streams ?? noLimit],
    },
    async ({ params }, req, res) => {
      await streamSessionEvents(
        { sessions, runs, logger, shutdown: options.shutdown, ...(options.tokens ? { tokens: options.tokens } : {}) },
        params.sessionId,
        res,
        options.events,
        req.header('last-event-id'),
      );
    },
  );

  return router;
}
