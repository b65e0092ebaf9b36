/**
 * The REST API v1 (DESIGN.md §4) as an express app, built apart from the
 * listener so tests can drive it. A thin layer over `Runs` (and, when given,
 * `Sessions`: `sessions-routes.ts`, and the memory service: `threads-routes.ts`):
 * validate, call, map the result;
 * errors go to the one error handler.
 */
import type { PayloadCodec } from '@temporalio/common';
import express, { type Express } from 'express';
import pino, { type Logger } from 'pino';
import { runUiUrl, type Config } from '../config';
import type { MemoryService } from '../store/memory-service';
import type { UsageStore } from '../store/usage/usage-store';
import { meteredFor } from '../usage/record-usage';
import { RunNotFoundError, type Runs } from '../temporal/runs';
import { SessionNotFoundError, type Sessions } from '../temporal/sessions';
import { summarizeAgent, type AgentProfile } from '../agents/profile';
import { describeBlueprint, expandBlueprint, paramsProblem, type Blueprint } from '../blueprints/blueprint';
import { treeProblems, type TaskSpec } from '../planning/task-tree';
import { adminRouter } from './admin-routes';
import { authenticate, principalOf, type AuthOptions } from './authenticate';
import { sameUser } from '../text/user-key';
import { codecRouter, webUiOrigins } from './codec-routes';
import { inspectorRouter } from './inspector/inspector-routes';
import { NO_LIMITS, perMinute, perWindow, streamsPerCaller, type ApiLimits, type CounterStores } from './limits';
import { longTermRouter, type LongTermRouterOptions } from './longterm-routes';
import { ownedBy } from './ownership';
import { usageRouter, withinBudget } from './usage-routes';
import { apiDocsRouter } from './docs-routes';
import { ApiError, errorHandler, notFoundRoute } from './errors';
import { openApiDocument, type OpenApiDocument } from './openapi';
import { streamRunEvents, type RunEventsOptions } from './run-events';
import { openTokenHub, type TokenHub } from './token-hub';
import type { ChannelConfig } from '../live/channels';
import {
  AgentListSchema,
  BlueprintListSchema,
  CancelAcceptedSchema,
  ExecutionStateSchema,
  HealthSchema,
  ReplyAcceptedSchema,
  ReviewAcceptedSchema,
  ApprovalAcceptedSchema,
  RunHistorySchema,
  ForkedSchema,
  RunListSchema,
  RunStartedSchema,
  SteerAcceptedSchema,
} from './response-schemas';
import { documented, mount, routesOf } from './routes-registry';
import { BUILTIN_TOOLS } from '../tools/registry';
import type { RunHistory } from '../temporal/run-history';
import type { Forks } from '../temporal/forks';
import { ApprovalBody, ForkBody, RunVersionParams, CreateRunBody, ListRunsQuery, ReplyBody, ReviewBody, RunParams, SteerBody, TaskParams } from './schemas';
import { sessionsRouter } from './sessions-routes';
import { isLoopback, loopbackHostsOnly } from './host-guard';
import { schedulesRouter, type SchedulesRouterOptions } from './schedules-routes';
import { threadsRouter } from './threads-routes';
import { traceRequests } from '../telemetry/http-spans';

export interface AppOptions {
  runs: Pick<Runs, 'start' | 'get' | 'reply' | 'review' | 'approve' | 'skip' | 'redo' | 'cancel' | 'list'> & Partial<Pick<Runs, 'ownerOf'>>;
  /** The tree limits, when given, check an edited tree in a review before it reaches the run (400 instead of 409). */
  /** `HOST`: with THREADLINE_AUTH=none on a loopback address, requests naming another host are refused (DNS rebinding). */
  config: Pick<Config, 'uiUrl' | 'TEMPORAL_NAMESPACE'> & Partial<Pick<Config, 'MAX_TREE_DEPTH' | 'MAX_TREE_FANOUT' | 'HOST'>>;
  /** Whether Temporal is reachable; should answer quickly (the server gives it a short deadline). */
  isHealthy: () => Promise<boolean>;
  /** @default a pino logger named "api" */
  logger?: Logger;
  /** Timing of the event streams (`GET /v1/runs/:runId/events`, `/v1/sessions/:sessionId/events`, `/v1/threads/:threadId/stream`). */
  events?: RunEventsOptions;
  /** Serves the sessions API (`/v1/sessions`) when given. */
  sessions?: Pick<Sessions, 'create' | 'list' | 'get' | 'send' | 'clear' | 'end'> & Partial<Pick<Sessions, 'ownerOf' | 'countOpen'>>;
  /** A run's state history (`GET /v1/runs/:runId/history`), replayed from its Temporal history, when given. */
  history?: Pick<RunHistory, 'versions' | 'at'>;
  /** Forks of runs from an earlier state (`POST /v1/runs/:runId/fork`), when given. */
  forks?: Pick<Forks, 'fork'>;
  /** Serves the schedules API (`/v1/schedules`) when given. */
  schedules?: SchedulesRouterOptions['schedules'];
  /** Serves the memory threads API (`/v1/threads`) when given. */
  memory?: MemoryService;
  /** Plan templates runs may start from (`GET /v1/blueprints`). @default none */
  blueprints?: Blueprint[];
  /** Sub-agent profiles (AGENTS_CONFIG), listed at `GET /v1/agents`. @default none */
  agents?: readonly AgentProfile[];
  /** Who may call: API keys (THREADLINE_AUTH=apikey) and the key store behind them. @default no auth */
  auth?: AuthOptions;
  /**
   * Token accounting: where usage is read (`GET /v1/users/:userId/usage`) and where the API records its own
   * calls (long-term searches' and imports' embeddings), and a monthly per-user token budget (0: none).
   */
  usage?: { store: UsageStore; budget: number };
  /** Per-user request limits (0: off). @default all off */
  limits?: Partial<ApiLimits>;
  /** Where the limits count, shared by every API process (MEMORY_STORE=postgres). @default each process in its memory */
  limitCounters?: CounterStores;
  /** The payload codecs of the Temporal data converter, served at `/v1/codec` for the Web UI. @default none (payloads pass unchanged) */
  codecs?: PayloadCodec[];
  /** Serves the long-term memory API (`/v1/users/:userId/memory/…`, `/facts`, `/episodes`) when given; `onImported` is told of each import (background extraction). */
  longterm?: LongTermRouterOptions;
  /** Aborting it ends open event streams, so a closing server is not held open by them. */
  shutdown?: AbortSignal;
  /**
   * Live tokens for the run and session event streams (src/api/token-hub.ts); `null`: none.
   * @default a hub on the channel of `config` when it is a whole Config (closed with `shutdown`), else none
   */
  tokens?: TokenHub | null;
}

/** The default hub: on the deployment's channel, when the app was given the whole config. */
function defaultTokens(options: AppOptions, logger: Logger): TokenHub | undefined {
  const config = options.config as Partial<ChannelConfig>;
  if (typeof config.dataDir !== 'string' || config.MEMORY_STORE === undefined) return undefined;
  const hub = openTokenHub(config as ChannelConfig, (err) => logger.warn({ err }, 'live tokens: the channel could not be opened; streams carry no tokens'));
  options.shutdown?.addEventListener('abort', () => void hub.close(), { once: true });
  return hub;
}

/** Request bodies are small JSON documents: a goal or a reply of at most 10,000 characters. */
const BODY_LIMIT = '64kb';

export function createApp(options: AppOptions): Express {
  const { runs, config, isHealthy } = options;
  const blueprints = options.blueprints ?? [];
  const logger = options.logger ?? pino({ name: 'api' });
  const tokens = options.tokens === null ? undefined : (options.tokens ?? defaultTokens(options, logger));
  const app = express();
  app.disable('x-powered-by');
  // First, so the span covers authentication and every route (a no-op span without tracing).
  app.use(traceRequests());
  const auth = options.auth ?? { mode: 'none' };
  // Without keys, only loopback host names: a rebound DNS name in a browser reaches nothing.
  if (auth.mode === 'none' && config.HOST !== undefined && isLoopback(config.HOST)) app.use(loopbackHostsOnly(config.HOST));
  if (auth.mode === 'apikey' && (!runs.ownerOf || (options.sessions && !options.sessions.ownerOf) || (options.schedules && !options.schedules.ownerOf))) {
    throw new Error('API keys need services that know who owns what (runs.ownerOf, sessions.ownerOf, schedules.ownerOf)');
  }
  // The inspector page holds no data and may load without a key; its API calls send one.
  mount(app, inspectorRouter({ runUiPrefix: runUiUrl(config, '') }));
  // The API's description is public too; built at its first request, once every route below is declared.
  let description: OpenApiDocument | undefined;
  mount(
    app,
    apiDocsRouter(() => (description ??= openApiDocument(routesOf(app), { auth: auth.mode === 'apikey' }))),
  );
  app.use(authenticate(auth));
  const limits: ApiLimits = { ...NO_LIMITS, ...options.limits };
  const counters = options.limitCounters;
  // One count of open streams across runs, sessions and threads.
  const streams = streamsPerCaller(limits.streamsPerUser);
  const runOwner = runs.ownerOf?.bind(runs);
  if (runOwner)
    app.param(
      'runId',
      ownedBy(runOwner, (id) => new RunNotFoundError(id)),
    );
  // Before the small-body parser: codec batches are larger.
  mount(app, codecRouter(options.codecs ?? [], { origins: webUiOrigins(config.uiUrl), limit: perMinute(limits.codecPerMinute, 'codec calls', counters) }));
  // Also before it: an import is up to IMPORT_BODY_LIMIT; the router parses its own bodies.
  if (options.longterm) {
    const usage = options.usage;
    mount(
      app,
      longTermRouter({
        ...options.longterm,
        limits: {
          imports: perWindow(limits.importsPerHour, 'hour', 'imports', counters),
          searches: perMinute(limits.searchesPerMinute, 'searches', counters),
          extractedPerImport: limits.extractedPerImport,
        },
        // Searches and imports embed their texts: those tokens are the user's, within their budget.
        ...(usage
          ? {
              metered: (userId, source, fn) =>
                meteredFor(
                  // The API calls only embeddings models, which name themselves in the records.
                  { store: usage.store, budget: usage.budget, model: 'embeddings', onError: (err) => logger.error({ err }, 'usage not recorded or not read') },
                  userId,
                  source,
                  fn,
                ),
            }
          : {}),
      }),
    );
  }
  app.use(express.json({ limit: BODY_LIMIT }));

  documented(app, 'meta').get(
    '/healthz',
    {
      summary: 'Whether the API can reach Temporal',
      public: true,
      responses: { 200: { description: 'Temporal answers', schema: HealthSchema } },
      errors: { 503: 'Temporal is not reachable (the body also has `ok: false`)' },
    },
    async (_input, _req, res) => {
      const ok = await isHealthy().catch(() => false);
      if (ok) res.json({ ok: true });
      else res.status(503).json({ ok: false, error: { code: 'unavailable', message: 'Temporal is not reachable' } });
    },
  );

  const runRoutes = documented(app, 'runs');
  runRoutes.post(
    '/v1/runs',
    {
      summary: 'Start a run: a plan execution (engine `plan`) or a task tree (engine `tree`, optionally from a blueprint)',
      request: { body: CreateRunBody },
      responses: { 201: { description: 'Started; `Location` is the run', schema: RunStartedSchema } },
      errors: {
        403: "The API key may not act for this user, or the user's monthly token budget is used up (`budget_exceeded`)",
        404: "The session is not the caller's",
        429: 'Too many runs started this minute (see Retry-After)',
      },
      use: [
        perMinute(limits.runsPerMinute, 'runs started', counters),
        withinBudget(options.usage?.store, options.usage?.budget ?? 0, async (req) => {
          const userId = (req.body as { userId?: unknown } | undefined)?.userId;
          return typeof userId === 'string' ? userId : null;
        }),
      ],
    },
    async ({ body }, _req, res) => {
      const caller = principalOf(res);
      const tree = body.engine === 'tree' || body.engine === 'react' || (body.engine === undefined && body.blueprint !== undefined);
      if (!tree && (body.review || body.blueprint !== undefined || body.reflection !== undefined))
        throw new ApiError(400, 'invalid_request', 'review, blueprint and reflection apply to tree runs: set engine to "tree" or "react"');
      if (body.engine === 'react' && body.blueprint !== undefined) throw new ApiError(400, 'invalid_request', 'a blueprint run starts from its tree: set engine to "tree"');
      let blueprint: { name: string; tree: TaskSpec } | undefined;
      if (body.blueprint !== undefined) {
        const found = blueprints.find((b) => b.name === body.blueprint);
        if (!found) throw new ApiError(400, 'invalid_request', `unknown blueprint "${body.blueprint}"`, { blueprints: blueprints.map((b) => b.name) });
        const problem = paramsProblem(found, body.params ?? {});
        if (problem) throw new ApiError(400, 'invalid_request', `params do not fit blueprint "${found.name}": ${problem}`, { params: found.params });
        blueprint = { name: found.name, tree: expandBlueprint(found, body.params ?? {}) };
      } else if (body.params !== undefined) throw new ApiError(400, 'invalid_request', 'params go with a blueprint');
      // A run reports to the session it names: a user key may name only its own sessions.
      const sessionOwner = options.sessions?.ownerOf?.bind(options.sessions);
      if (caller?.role === 'user' && body.sessionId && sessionOwner) {
        const owner = await sessionOwner(body.sessionId);
        if (owner === null || !sameUser(owner, caller.userId)) throw new SessionNotFoundError(body.sessionId);
      }
      const { runId, status } = await runs.start({
        ...(body.approval ? { approval: body.approval } : {}),
        userId: body.userId,
        goal: body.goal,
        ...(body.sessionId !== undefined ? { sessionId: body.sessionId } : {}),
        ...(tree ? { engine: body.engine === 'react' ? ('react' as const) : ('tree' as const) } : {}),
        ...(body.review !== undefined ? { review: body.review } : {}),
        ...(body.reflection !== undefined ? { reflection: body.reflection } : {}),
        ...(blueprint ? { blueprint } : {}),
        ...(body.allow ? { allow: body.allow } : {}),
      });
      res
        .status(201)
        .location(`/v1/runs/${encodeURIComponent(runId)}`)
        .json({ runId, status, uiUrl: runUiUrl(config, runId) });
    },
  );

  documented(app, 'blueprints').get(
    '/v1/blueprints',
    { summary: 'The blueprints (plan templates) tree runs may start from', responses: { 200: { description: 'Each with a JSON Schema of its params', schema: BlueprintListSchema } } },
    (_input, _req, res) => {
      res.json({ blueprints: blueprints.map(describeBlueprint) });
    },
  );

  documented(app, 'agents').get(
    '/v1/agents',
    { summary: 'The sub-agent profiles (AGENTS_CONFIG) runs may call', responses: { 200: { description: "Each profile's summary (`tools: null`: every tool)", schema: AgentListSchema } } },
    (_input, _req, res) => {
      res.json({ agents: (options.agents ?? []).map(summarizeAgent) });
    },
  );

  runRoutes.get(
    '/v1/runs',
    { summary: 'List runs, newest first', request: { query: ListRunsQuery }, responses: { 200: { description: 'The runs', schema: RunListSchema } } },
    async ({ query }, _req, res) => {
      res.json({ runs: await runs.list(query) });
    },
  );

  runRoutes.get(
    '/v1/runs/:runId',
    {
      summary: "A run's ExecutionState",
      request: { params: RunParams },
      responses: { 200: { description: "The run's state", schema: ExecutionStateSchema } },
      errors: { 404: "No such run (or not the caller's)" },
    },
    async ({ params }, _req, res) => {
      res.json(await runs.get(params.runId));
    },
  );

  runRoutes.post(
    '/v1/runs/:runId/reply',
    {
      summary: "Deliver the person's reply to a run waiting for one",
      request: { params: RunParams, body: ReplyBody },
      responses: { 202: { description: 'Delivered', schema: ReplyAcceptedSchema } },
      errors: { 404: 'No such run', 409: 'The run is not waiting for a reply (`not_waiting`)' },
    },
    async ({ params, body }, _req, res) => {
      await runs.reply(params.runId, body.text);
      res.status(202).json({ runId: params.runId, status: 'running' });
    },
  );

  const history = options.history;
  if (history) {
    runRoutes.get(
      '/v1/runs/:runId/history',
      {
        summary: "Every version of the run's ExecutionState, oldest first, with what changed it",
        description: "Derived from the run's Temporal history by replaying it (nothing is recorded on the run's way), for runs of any age Temporal still keeps.",
        request: { params: RunParams },
        responses: { 200: { description: 'The versions', schema: RunHistorySchema } },
        errors: { 404: 'No such run' },
      },
      async ({ params }, _req, res) => {
        res.json({ versions: await history.versions(params.runId) });
      },
    );
    runRoutes.get(
      '/v1/runs/:runId/history/:version',
      {
        summary: 'The ExecutionState exactly as it was at a version',
        request: { params: RunVersionParams },
        responses: { 200: { description: 'The state at that version', schema: ExecutionStateSchema } },
        errors: { 404: 'No such run, or no such version' },
      },
      async ({ params }, _req, res) => {
        res.json(await history.at(params.runId, params.version));
      },
    );
  }

  const forks = options.forks;
  if (forks) {
    runRoutes.post(
      '/v1/runs/:runId/fork',
      {
        summary: 'Fork the run from an earlier state (a version, before a step ran, before a task began), with edits',
        description:
          "The fork is a new run of the same user that starts from that state: steps done before it keep their observations and are not run again; it goes on on today's code, without the source's memory thread. 404 for an unknown step or task, 409 for a point the run never reached or edits that do not fit it.",
        request: { params: RunParams, body: ForkBody },
        responses: { 201: { description: 'The fork, started', schema: ForkedSchema } },
        errors: { 404: 'No such run, step or task', 409: 'The run never reached that point, or the edits do not fit it (`not_now`)', 429: 'Too many runs started this minute' },
        use: [perMinute(limits.runsPerMinute, 'runs started', counters)],
      },
      async ({ params, body }, _req, res) => {
        const point = body.version !== undefined ? { version: body.version } : body.stepId !== undefined ? { stepId: body.stepId } : { taskIndex: body.taskIndex ?? '' };
        const e = body.edits ?? {};
        const edits = {
          ...(e.goal !== undefined ? { goal: e.goal } : {}),
          ...(e.observations ? { observations: e.observations } : {}),
          ...(e.args ? { args: e.args } : {}),
          ...(e.remainingSteps ? { remainingSteps: e.remainingSteps } : {}),
        };
        const forked = await forks.fork(params.runId, point, edits);
        res
          .status(201)
          .location(`/v1/runs/${encodeURIComponent(forked.runId)}`)
          .json({ ...forked, uiUrl: runUiUrl(config, forked.runId) });
      },
    );
  }

  runRoutes.post(
    '/v1/runs/:runId/approval',
    {
      summary: 'Approve, edit or reject the tool call a run waits on (`waiting_approval`)',
      description:
        "`reject` becomes an observation of kind `rejected` holding the feedback, which the model sees when it replans; `edit` runs the tool with `args` (checked against a built-in tool's schema here, 400 when they do not fit) and records both.",
      request: { params: RunParams, body: ApprovalBody },
      responses: { 202: { description: 'Delivered', schema: ApprovalAcceptedSchema } },
      errors: { 404: 'No such run', 409: 'That step is not waiting for approval (`not_waiting`)' },
    },
    async ({ params, body }, _req, res) => {
      if (body.decision === 'edit' && body.args) {
        const pending = (await runs.get(params.runId)).pendingApproval;
        const tool = pending && pending.stepId === body.stepId ? BUILTIN_TOOLS.find((t) => t.name === pending.tool) : undefined;
        const checked = tool?.input.safeParse(body.args);
        if (checked && !checked.success)
          throw new ApiError(400, 'invalid_request', `the edited args do not fit ${tool?.name ?? 'the tool'}`, {
            args: checked.error.issues.map((i) => `${i.path.join('.') || '(args)'}: ${i.message}`),
          });
      }
      await runs.approve(params.runId, { stepId: body.stepId, decision: body.decision, ...(body.args ? { args: body.args } : {}), ...(body.feedback ? { feedback: body.feedback } : {}) });
      res.status(202).json({ runId: params.runId, stepId: body.stepId, decision: body.decision });
    },
  );

  runRoutes.post(
    '/v1/runs/:runId/review',
    {
      summary: "Approve, revise or reject a tree run's proposed plan",
      request: { params: RunParams, body: ReviewBody },
      responses: { 202: { description: 'Delivered', schema: ReviewAcceptedSchema } },
      errors: { 404: 'No such run', 409: 'The run is not waiting for a review, or `planId` is stale (`not_waiting`)' },
    },
    async ({ params, body }, _req, res) => {
      const { MAX_TREE_DEPTH: maxDepth, MAX_TREE_FANOUT: maxFanout } = config;
      if (body.tree && maxDepth !== undefined && maxFanout !== undefined) {
        const problems = treeProblems(body.tree, { maxDepth, maxFanout });
        if (problems.length) throw new ApiError(400, 'invalid_request', 'the edited tree breaks the limits', { tree: problems });
      }
      await runs.review(params.runId, body);
      res.status(202).json({ runId: params.runId, decision: body.decision, planId: body.planId });
    },
  );

  for (const action of ['skip', 'redo'] as const) {
    runRoutes.post(
      `/v1/runs/:runId/tasks/:index/${action}`,
      {
        summary: action === 'skip' ? 'Skip a task of a tree run' : 'Run a task of a tree run again',
        request: { params: TaskParams, body: SteerBody },
        responses: { 202: { description: 'Delivered', schema: SteerAcceptedSchema } },
        errors: { 404: 'No such run, or no task at that index', 409: `The task cannot be ${action === 'skip' ? 'skipped' : 'redone'} now (\`not_now\`)` },
      },
      async ({ params, body }, _req, res) => {
        await runs[action](params.runId, params.index, body.reason || undefined);
        res.status(202).json({ runId: params.runId, index: params.index, action });
      },
    );
  }

  runRoutes.post(
    '/v1/runs/:runId/cancel',
    { summary: 'Cancel a run', request: { params: RunParams }, responses: { 202: { description: 'Cancellation requested', schema: CancelAcceptedSchema } }, errors: { 404: 'No such run' } },
    async ({ params }, _req, res) => {
      await runs.cancel(params.runId);
      res.status(202).json({ runId: params.runId });
    },
  );

  runRoutes.get(
    '/v1/runs/:runId/events',
    {
      summary: 'Watch a run: Server-Sent Events',
      description:
        "`event: state` with the ExecutionState as `data` at each change (`id`: its version), then `event: done` with the final state when the run ends. While a model call runs, `event: token` `{runId, callId, stepId?, taskIndex?, field, delta, seq}` carries what grew of a human-readable reply field, and `event: token_reset` `{runId, callId}` voids a call's earlier deltas (it is asked again); `Last-Event-ID` resumes. Comments keep the stream alive. With API keys, a stream whose key is revoked or expires ends with `event: error` carrying the error envelope (code `unauthorized`).",
      request: { params: RunParams },
      responses: { 200: { description: 'The event stream', contentType: 'text/event-stream' } },
      errors: { 404: 'No such run (answered before the stream starts)', 429: 'Too many open event streams' },
      use: [streams],
    },
    async ({ params }, req, res) => {
      await streamRunEvents({ runs, logger, shutdown: options.shutdown, ...(tokens ? { tokens } : {}) }, params.runId, res, options.events, req.header('last-event-id'));
    },
  );

  if (options.sessions) {
    mount(
      app,
      sessionsRouter({
        sessions: options.sessions,
        runs,
        config,
        logger,
        shutdown: options.shutdown,
        events: options.events,
        ...(tokens ? { tokens } : {}),
        limits: {
          messages: perMinute(limits.messagesPerMinute, 'messages sent', counters),
          create: perMinute(limits.sessionsPerMinute, 'sessions created', counters),
          openSessions: limits.openSessionsPerUser,
          streams,
          budget: withinBudget(options.usage?.store, options.usage?.budget ?? 0, async (req) => (options.sessions?.ownerOf ? options.sessions.ownerOf(String(req.params.sessionId)) : null)),
        },
      }),
    );
  }

  if (options.schedules) mount(app, schedulesRouter({ schedules: options.schedules, create: perMinute(limits.runsPerMinute, 'schedules created', counters) }));

  if (options.memory) {
    mount(app, threadsRouter({ memory: options.memory, logger, shutdown: options.shutdown, stream: options.events, streams }));
  }

  if (options.usage) mount(app, usageRouter(options.usage.store));
  if (auth.mode === 'apikey' && auth.store) mount(app, adminRouter(auth.store));
  app.use(notFoundRoute);
  app.use(errorHandler(logger));
  return app;
}
