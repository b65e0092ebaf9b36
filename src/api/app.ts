/**
 * The REST API v1 (DESIGN.md §4) as an express app, built apart from the
 * listener so tests can drive it. A thin layer over `Runs` (and, when given,
 * `Sessions`: `sessions-routes.ts`, and the memory service: `threads-routes.ts`):
 * validate, call, map the result;
 * errors go to the one error handler.
 */
import express, { type Express } from 'express';
import pino, { type Logger } from 'pino';
import { runUiUrl, type Config } from '../config';
import type { MemoryService } from '../store/memory-service';
import type { Runs } from '../temporal/runs';
import type { Sessions } from '../temporal/sessions';
import { errorHandler, notFoundRoute } from './errors';
import { streamRunEvents, type RunEventsOptions } from './run-events';
import { CreateRunBody, ListRunsQuery, ReplyBody, RunParams } from './schemas';
import { sessionsRouter } from './sessions-routes';
import { threadsRouter } from './threads-routes';
import { validated } from './validate';

export interface AppOptions {
  runs: Pick<Runs, 'start' | 'get' | 'reply' | 'cancel' | 'list'>;
  config: Pick<Config, 'uiUrl' | 'TEMPORAL_NAMESPACE'>;
  /** Whether Temporal is reachable; should answer quickly (the server gives it a short deadline). */
  isHealthy: () => Promise<boolean>;
  /** @default a pino logger named "api" */
  logger?: Logger;
  /** Timing of the event streams (`GET /v1/runs/:runId/events`, `/v1/sessions/:sessionId/events`, `/v1/threads/:threadId/stream`). */
  events?: RunEventsOptions;
  /** Serves the sessions API (`/v1/sessions`) when given. */
  sessions?: Pick<Sessions, 'create' | 'list' | 'get' | 'send' | 'clear'>;
  /** Serves the memory threads API (`/v1/threads`) when given. */
  memory?: MemoryService;
  /** Aborting it ends open event streams, so a closing server is not held open by them. */
  shutdown?: AbortSignal;
}

/** Request bodies are small JSON documents: a goal or a reply of at most 10,000 characters. */
const BODY_LIMIT = '64kb';

export function createApp(options: AppOptions): Express {
  const { runs, config, isHealthy } = options;
  const logger = options.logger ?? pino({ name: 'api' });
  const app = express();
  app.disable('x-powered-by');
  app.use(express.json({ limit: BODY_LIMIT }));

  app.get('/healthz', async (_req, res) => {
    const ok = await isHealthy().catch(() => false);
    if (ok) res.json({ ok: true });
    else res.status(503).json({ ok: false, error: { code: 'unavailable', message: 'Temporal is not reachable' } });
  });

  app.post(
    '/v1/runs',
    validated({ body: CreateRunBody }, async ({ body }, _req, res) => {
      const { runId, status } = await runs.start(body);
      res
        .status(201)
        .location(`/v1/runs/${encodeURIComponent(runId)}`)
        .json({ runId, status, uiUrl: runUiUrl(config, runId) });
    }),
  );

  app.get(
    '/v1/runs',
    validated({ query: ListRunsQuery }, async ({ query }, _req, res) => {
      res.json({ runs: await runs.list(query) });
    }),
  );

  app.get(
    '/v1/runs/:runId',
    validated({ params: RunParams }, async ({ params }, _req, res) => {
      res.json(await runs.get(params.runId));
    }),
  );

  app.post(
    '/v1/runs/:runId/reply',
    validated({ params: RunParams, body: ReplyBody }, async ({ params, body }, _req, res) => {
      await runs.reply(params.runId, body.text);
      res.status(202).json({ runId: params.runId, status: 'running' });
    }),
  );

  app.post(
    '/v1/runs/:runId/cancel',
    validated({ params: RunParams }, async ({ params }, _req, res) => {
      await runs.cancel(params.runId);
      res.status(202).json({ runId: params.runId });
    }),
  );

  app.get(
    '/v1/runs/:runId/events',
    validated({ params: RunParams }, async ({ params }, _req, res) => {
      await streamRunEvents({ runs, logger, shutdown: options.shutdown }, params.runId, res, options.events);
    }),
  );

  if (options.sessions) {
    app.use(sessionsRouter({ sessions: options.sessions, runs, config, logger, shutdown: options.shutdown, events: options.events }));
  }

  if (options.memory) {
    app.use(threadsRouter({ memory: options.memory, logger, shutdown: options.shutdown, stream: options.events }));
  }

  app.use(notFoundRoute);
  app.use(errorHandler(logger));
  return app;
}
