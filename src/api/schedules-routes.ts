/**
 * The schedules API (`/v1/schedules`, issue 33): runs that start later or again and again, each
 * schedule a Temporal Schedule (so the Web UI lists them too). A thin layer over `Schedules`;
 * tenancy by the `:scheduleId` param (another user's schedule is 404), limits on creation.
 */
import { Router, type RequestHandler } from 'express';
import { ScheduleNotFoundError, type Schedules } from '../temporal/schedules';
import { noLimit } from './limits';
import { ownedBy } from './ownership';
import { documented } from './routes-registry';
import { CreateScheduleBody, ListSchedulesQuery, ScheduleAcceptedSchema, ScheduleCreatedSchema, ScheduleListSchema, ScheduleParams, ScheduleSchema } from './schedule-schemas';

export interface SchedulesRouterOptions {
  schedules: Pick<Schedules, 'create' | 'list' | 'get' | 'pause' | 'unpause' | 'trigger' | 'delete'> & Partial<Pick<Schedules, 'ownerOf'>>;
  /** Per-user limit on creating schedules (the runs limit). */
  create?: RequestHandler;
}

export function schedulesRouter(options: SchedulesRouterOptions): Router {
  const { schedules } = options;
  const router = Router();
  const owner = schedules.ownerOf?.bind(schedules);
  if (owner)
    router.param(
      'scheduleId',
      ownedBy(owner, (id) => new ScheduleNotFoundError(id)),
    );
  const routes = documented(router, 'schedules');
  const notFound = { 404: "No such schedule (or not the caller's)" } as const;

  routes.post(
    '/v1/schedules',
    {
      summary: 'Schedule a run: once (`at`), by cron (`cron`) or at an interval (`every`)',
      request: { body: CreateScheduleBody },
      responses: { 201: { description: 'Created; `Location` is the schedule', schema: ScheduleCreatedSchema } },
      description: 'A timing that is not valid, or a user with the most schedules allowed (SCHEDULES_PER_USER), is a 400 whose message says why.',
      errors: { 403: 'The API key may not act for this user', 429: 'Too many schedules created this minute' },
      use: [options.create ?? noLimit],
    },
    async ({ body }, _req, res) => {
      const { sessionId, ...rest } = body;
      const created = await schedules.create({ ...rest, ...(sessionId ? { sessionId } : {}) });
      res
        .status(201)
        .location(`/v1/schedules/${encodeURIComponent(created.scheduleId)}`)
        .json(created);
    },
  );

  routes.get(
    '/v1/schedules',
    {
      summary: 'List schedules',
      request: { query: ListSchedulesQuery },
      responses: { 200: { description: 'The schedules', schema: ScheduleListSchema } },
      errors: { 403: 'The API key may not act for this user' },
    },
    async ({ query }, _req, res) => {
      res.json({ schedules: await schedules.list(query) });
    },
  );

  routes.get(
    '/v1/schedules/:scheduleId',
    { summary: 'A schedule: its timing, next and recent runs', request: { params: ScheduleParams }, responses: { 200: { description: 'The schedule', schema: ScheduleSchema } }, errors: notFound },
    async ({ params }, _req, res) => {
      res.json(await schedules.get(params.scheduleId));
    },
  );

  for (const action of ['pause', 'unpause', 'trigger'] as const) {
    routes.post(
      `/v1/schedules/:scheduleId/${action}`,
      {
        summary: action === 'trigger' ? 'Run it now' : action === 'pause' ? 'Pause it: no occurrence runs until unpaused' : 'Unpause it',
        request: { params: ScheduleParams },
        responses: { 202: { description: 'Done', schema: ScheduleAcceptedSchema } },
        errors: notFound,
      },
      async ({ params }, _req, res) => {
        await schedules[action](params.scheduleId);
        res.status(202).json({ scheduleId: params.scheduleId, action });
      },
    );
  }

  routes.delete(
    '/v1/schedules/:scheduleId',
    { summary: 'Delete it (runs it started go on)', request: { params: ScheduleParams }, responses: { 204: { description: 'Deleted' } }, errors: notFound },
    async ({ params }, _req, res) => {
      await schedules.delete(params.scheduleId);
      res.status(204).end();
    },
  );

  return router;
}
