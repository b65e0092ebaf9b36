/**
 * The memory threads API (`/v1/threads`, issue 3 §8): read a thread's states,
 * chunks, audit trail and rendered context; change it in real time as a person
 * (every change is an operation of origin `user`); roll back, fork, checkpoint;
 * watch it live. A thin layer over `MemoryService`: validate, call, shape.
 * Errors (404 unknown thread or state, 422 refused) go to the app's one handler.
 */
import { Router, type RequestHandler, type Response } from 'express';
import type { Logger } from 'pino';
import type { MemoryState, MemoryThread, OperationMeta, OperationRecord, ReadRecord } from '../memory/model';
import { StateNotFoundError, ThreadNotFoundError, type MemoryService, type Reader } from '../store/memory-service';
import { noLimit } from './limits';
import { ownedBy } from './ownership';
import {
  AuditQuery,
  CheckpointBody,
  ContextQuery,
  CreateThreadBody,
  DiffQuery,
  ListThreadsQuery,
  OperationBody,
  StateTargetBody,
  StreamCursor,
  StreamQuery,
  ThreadParams,
  ThreadStateParams,
} from './thread-schemas';
import {
  CheckpointCreatedSchema,
  CheckpointListSchema,
  OperationAppliedSchema,
  StateDiffSchema,
  StateListSchema,
  StateViewSchema,
  ThreadCreatedSchema,
  ThreadListSchema,
  ThreadViewSchema,
} from './response-schemas';
import { documented, type RouteSpec } from './routes-registry';
import { streamThreadOperations } from './thread-stream';
import type { SseTiming } from './sse';
import { validationError } from './validate';

export interface ThreadsRouterOptions {
  memory: MemoryService;
  logger: Logger;
  /** Aborting it ends open streams, so a closing server is not held open by them. */
  shutdown?: AbortSignal;
  /** Timing of `GET /v1/threads/:threadId/stream`. */
  stream?: SseTiming;
  /** A per-user limit on open streams. */
  streams?: RequestHandler;
}

/** The wire shape of a thread (ids named for what they are). */
function threadJson(thread: MemoryThread) {
  return {
    threadId: thread.id,
    userId: thread.userId,
    limits: thread.limits,
    forkedFrom: thread.forkedFrom,
    headStateId: thread.headStateId,
    createdAt: thread.createdAt,
  };
}

function stateJson(state: MemoryState) {
  return {
    stateId: state.id,
    parentStateId: state.parentStateId,
    seq: state.seq,
    tokens: state.tokens,
    chunkIds: state.chunkIds,
    operationId: state.operationId,
    at: state.createdAt,
  };
}

/** 201 Created for a thread made by create or fork: where it lives, its id and head. */
function sendNewThread(res: Response, thread: MemoryThread): void {
  res
    .status(201)
    .location(`/v1/threads/${encodeURIComponent(thread.id)}`)
    .json({ threadId: thread.id, headStateId: thread.headStateId });
}

/** Records list every operation of a thread; the default store limit (1000) would cut long threads short. */
const ALL_RECORDS = 1_000_000;

export function threadsRouter(options: ThreadsRouterOptions): Router {
  const { memory, logger } = options;
  const router = Router();
  router.param(
    'threadId',
    ownedBy(
      (id) => memory.ownerOf(id),
      (id) => new ThreadNotFoundError(id),
    ),
  );
  const routes = documented(router, 'threads');
  const notFound = { 404: "No such thread (or not the caller's)" } as const;
  const json = (description: string): RouteSpec['responses'] => ({ 200: { description, contentType: 'application/json' } });
  const trigger = (method: string, path: string) => `${method} ${path}`;
  const asUser = (reason: string, triggeredBy: string): OperationMeta => ({ origin: 'user', reason, trigger: triggeredBy });
  /** Reads of chunks through the API are a person's, recorded in the thread's audit. */
  const reader = (path: string): Reader => asUser('read through the API', trigger('GET', path));

  const requireThread = async (threadId: string): Promise<MemoryThread> => {
    const thread = await memory.store.getThread(threadId);
    if (!thread) throw new ThreadNotFoundError(threadId);
    return thread;
  };
  /** A state that is not this thread's is a 404, as everywhere else in this API (not a refusal). */
  const requireStateOf = async (threadId: string, stateId: string): Promise<void> => {
    await requireThread(threadId);
    const state = await memory.store.getState(stateId);
    if (!state || state.threadId !== threadId) throw new StateNotFoundError(stateId);
  };

  routes.post(
    '/v1/threads',
    {
      summary: 'Create a memory thread',
      request: { body: CreateThreadBody },
      responses: { 201: { description: 'Created; `Location` is the thread', schema: ThreadCreatedSchema } },
      errors: { 403: 'The API key may not act for this user' },
    },
    async ({ body }, _req, res) => {
      const { thread } = await memory.createThread({
        userId: body.userId,
        ...(body.limits ? { limits: body.limits } : {}),
        meta: asUser('created through the API', trigger('POST', '/v1/threads')),
      });
      sendNewThread(res, thread);
    },
  );

  routes.get(
    '/v1/threads',
    {
      summary: 'List memory threads, newest first',
      request: { query: ListThreadsQuery },
      responses: { 200: { description: 'The threads', schema: ThreadListSchema } },
      errors: { 403: 'The API key may not act for this user' },
    },
    async ({ query }, _req, res) => {
      const threads = await memory.store.listThreads({ limit: query.limit, ...(query.userId ? { userId: query.userId } : {}) });
      res.json({ threads: threads.map(threadJson) });
    },
  );

  routes.get(
    '/v1/threads/:threadId',
    {
      summary: "A thread, its head state and that state's chunks (a recorded read)",
      request: { params: ThreadParams },
      responses: { 200: { description: 'The thread at its head', schema: ThreadViewSchema } },
      errors: notFound,
    },
    async ({ params }, req, res) => {
      const { thread, state, chunks } = await memory.view(params.threadId, reader(req.path));
      res.json({ ...threadJson(thread), state: stateJson(state), chunks });
    },
  );

  routes.get(
    '/v1/threads/:threadId/states',
    {
      summary: 'Every state of a thread, with the operation that made it',
      request: { params: ThreadParams },
      responses: { 200: { description: 'The states, oldest first', schema: StateListSchema } },
      errors: notFound,
    },
    async ({ params }, _req, res) => {
      const states = await memory.states(params.threadId);
      const records = await memory.audit(params.threadId, { limit: ALL_RECORDS });
      const byId = new Map(records.map((r) => [r.id, r]));
      res.json({
        states: states.map((s) => {
          const record = s.operationId === null ? undefined : byId.get(s.operationId);
          return {
            stateId: s.stateId,
            parentStateId: s.parentStateId,
            seq: s.seq,
            operation: record ? { id: record.id, kind: record.kind, origin: record.origin, reason: record.reason } : null,
            at: s.at,
          };
        }),
      });
    },
  );

  routes.get(
    '/v1/threads/:threadId/states/:stateId',
    {
      summary: 'One state of a thread and its chunks (a recorded read)',
      request: { params: ThreadStateParams },
      responses: { 200: { description: 'The state', schema: StateViewSchema } },
      errors: { 404: 'No such thread, or no such state in it' },
    },
    async ({ params }, req, res) => {
      const { state, chunks } = await memory.stateView(params.threadId, params.stateId, reader(req.path));
      res.json({ state: stateJson(state), chunks });
    },
  );

  routes.get(
    '/v1/threads/:threadId/diff',
    {
      summary: 'What changed between two states of a thread',
      request: { params: ThreadParams, query: DiffQuery },
      responses: { 200: { description: 'The chunks added, removed and changed', schema: StateDiffSchema } },
      errors: { 404: 'No such thread, or no such state in it' },
    },
    async ({ params, query }, req, res) => {
      const to = query.to ?? (await requireThread(params.threadId)).headStateId;
      res.json(await memory.diff(params.threadId, query.from, to, reader(req.path)));
    },
  );

  routes.post(
    '/v1/threads/:threadId/operations',
    {
      summary: 'Change a thread as a person (an operation of origin `user`)',
      request: { params: ThreadParams, body: OperationBody },
      responses: { 201: { description: 'The new head state and the operation', schema: OperationAppliedSchema } },
      errors: { ...notFound, 422: 'The reducer or an observer refused the operation (`refused`; `details.code` says why)' },
    },
    async ({ params, body }, req, res) => {
      // A person's real-time modification: always origin user, whatever the body says.
      const meta = asUser(body.reason ?? 'edited through the API', body.trigger ?? trigger('POST', req.path));
      const { record, state } = await memory.apply(params.threadId, body.operation, meta);
      // A person's edit can take the thread past its limits like any other write. The API has no
      // summarizer: this drops, applies the built-in compression and enforces the hard limit.
      await memory.compactIfNeeded(params.threadId, { reason: 'token limit exceeded', trigger: `after ${record.id} (${meta.trigger})` });
      res.status(201).json({ stateId: state.id, operationId: record.id });
    },
  );

  routes.post(
    '/v1/threads/:threadId/rollback',
    {
      summary: 'Roll a thread back to an earlier state (a new state, history kept)',
      request: { params: ThreadParams, body: StateTargetBody },
      responses: { 201: { description: 'The new head state and the operation', schema: OperationAppliedSchema } },
      errors: { 404: 'No such thread, or no such state in it', 422: 'Refused (`refused`)' },
    },
    async ({ params, body }, req, res) => {
      await requireStateOf(params.threadId, body.stateId);
      const meta = asUser(body.reason ?? `rolled back to ${body.stateId} through the API`, trigger('POST', req.path));
      const { record, state } = await memory.rollback(params.threadId, body.stateId, meta);
      res.status(201).json({ stateId: state.id, operationId: record.id });
    },
  );

  routes.post(
    '/v1/threads/:threadId/fork',
    {
      summary: 'Fork a new thread from a state of this one',
      request: { params: ThreadParams, body: StateTargetBody },
      responses: { 201: { description: 'The new thread; `Location` is it', schema: ThreadCreatedSchema } },
      errors: { 404: 'No such thread, or no such state in it', 422: 'Refused (`refused`)' },
    },
    async ({ params, body }, req, res) => {
      await requireStateOf(params.threadId, body.stateId);
      const meta = asUser(body.reason ?? `forked from ${body.stateId} through the API`, trigger('POST', req.path));
      const { thread } = await memory.fork(params.threadId, body.stateId, meta);
      sendNewThread(res, thread);
    },
  );

  routes.post(
    '/v1/threads/:threadId/checkpoints',
    {
      summary: 'Name the head state (a checkpoint)',
      request: { params: ThreadParams, body: CheckpointBody },
      responses: { 201: { description: 'The checkpoint', schema: CheckpointCreatedSchema } },
      errors: { ...notFound, 422: 'Refused (`refused`)' },
    },
    async ({ params, body }, req, res) => {
      const meta = asUser(body.reason ?? `checkpoint "${body.name}" through the API`, trigger('POST', req.path));
      const record = await memory.checkpoint(params.threadId, body.name, meta);
      res.status(201).json({ name: body.name, stateId: record.toStateId });
    },
  );

  routes.get(
    '/v1/threads/:threadId/checkpoints',
    { summary: 'The checkpoints of a thread', request: { params: ThreadParams }, responses: { 200: { description: 'The checkpoints', schema: CheckpointListSchema } }, errors: notFound },
    async ({ params }, _req, res) => {
      await requireThread(params.threadId);
      res.json({ checkpoints: await memory.store.listCheckpoints(params.threadId) });
    },
  );

  routes.get(
    '/v1/threads/:threadId/audit',
    {
      summary: 'The audit trail of a thread: its operations, or its recorded reads (`kind=read`, `target`)',
      request: { params: ThreadParams, query: AuditQuery },
      responses: json('`{ operations }`, oldest first'),
      errors: notFound,
    },
    async ({ params, query }, _req, res) => {
      const { after, kind, target, ...filter } = query;
      // Reads are listed when asked for (kind=read or a target), so the default listing stays the writes.
      if (kind === 'read' || target !== undefined) {
        if (kind !== undefined && kind !== 'read') throw validationError([{ path: 'target', message: 'target filters reads: use it with kind=read or alone' }]);
        if (after !== undefined) throw validationError([{ path: 'after', message: 'reads have no seq: filter them with since and until' }]);
        const reads: ReadRecord[] = await memory.auditReads(params.threadId, { ...dropUndefined(filter), ...(target ? { target } : {}) });
        res.json({ operations: reads });
        return;
      }
      const operations: OperationRecord[] = await memory.audit(params.threadId, {
        ...dropUndefined(filter),
        ...(kind === undefined ? {} : { kind }),
        ...(after === undefined ? {} : { afterSeq: after }),
      });
      res.json({ operations });
    },
  );

  routes.get(
    '/v1/threads/:threadId/context',
    {
      summary: "The thread rendered as a model's context within a token budget (a recorded read)",
      request: { params: ThreadParams, query: ContextQuery },
      responses: json('`{ messages, tokens }`'),
      errors: notFound,
    },
    async ({ params, query }, req, res) => {
      const { messages, tokens } = await memory.context(params.threadId, query.budget, reader(req.path));
      res.json({ messages, tokens });
    },
  );

  routes.get(
    '/v1/threads/:threadId/stream',
    {
      summary: 'Watch a thread: its operations as Server-Sent Events',
      description: '`event: operation` with each operation record after `after` (or `Last-Event-ID`), `id`: its seq, in seq order; then each new one as it is recorded.',
      request: { params: ThreadParams, query: StreamQuery },
      responses: { 200: { description: 'The event stream', contentType: 'text/event-stream' } },
      errors: { ...notFound, 429: 'Too many open event streams' },
      use: [options.streams ?? noLimit],
    },
    async ({ params, query }, req, res) => {
      // A reconnecting EventSource sends the last id it saw; it wins over the `?after=` of its URL.
      const header = req.get('last-event-id');
      let after = query.after ?? 0;
      if (header !== undefined && header !== '') {
        const parsed = StreamCursor.safeParse(header);
        if (!parsed.success) throw validationError([{ path: 'last-event-id', message: 'must be the seq of an operation (a whole number ≥ 0)' }]);
        after = parsed.data;
      }
      await streamThreadOperations({ memory, logger, shutdown: options.shutdown }, params.threadId, after, res, options.stream);
    },
  );

  return router;
}

/** Optional query fields come back from zod as absent or undefined; the store's filter wants them absent. */
function dropUndefined<T extends object>(value: T): { [K in keyof T]?: Exclude<T[K], undefined> } {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as { [K in keyof T]?: Exclude<T[K], undefined> };
}
