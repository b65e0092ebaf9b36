/**
 * How the inspector page reads the API's answers: with the API's own zod schemas, the ones its routes
 * declare (and /openapi.json shows), so the page and the API cannot drift apart unnoticed. Bundled
 * for the browser, zod included, and served as `/inspector/schemas.js` (inspector-routes.ts); a
 * test holds every entry to the schema its route declares.
 */
import { z } from 'zod';
import { EpisodeListSchema, FactListSchema, FactSchema, LongTermAuditSchema, SearchResultsSchema } from '../longterm-schemas';
import {
  ApprovalAcceptedSchema,
  CheckpointCreatedSchema,
  CheckpointListSchema,
  ExecutionStateSchema,
  OperationAppliedSchema,
  RunListSchema,
  StateDiffSchema,
  StateListSchema,
  StateViewSchema,
  ThreadCreatedSchema,
  ThreadListSchema,
  ThreadViewSchema,
  TokenEventSchema,
  TokenResetEventSchema,
} from '../response-schemas';
import { ScheduleAcceptedSchema, ScheduleListSchema } from '../schedule-schemas';

/** The successful answer of each route the page calls that has a declared schema, by `METHOD /path` as the route is declared. */
export const RESPONSES: Readonly<Record<string, z.ZodType>> = {
  'GET /v1/runs': RunListSchema,
  'GET /v1/runs/:runId': ExecutionStateSchema,
  'POST /v1/runs/:runId/approval': ApprovalAcceptedSchema,
  'GET /v1/threads': ThreadListSchema,
  'GET /v1/threads/:threadId': ThreadViewSchema,
  'GET /v1/threads/:threadId/states': StateListSchema,
  'GET /v1/threads/:threadId/states/:stateId': StateViewSchema,
  'GET /v1/threads/:threadId/checkpoints': CheckpointListSchema,
  'GET /v1/threads/:threadId/diff': StateDiffSchema,
  'POST /v1/threads/:threadId/operations': OperationAppliedSchema,
  'POST /v1/threads/:threadId/rollback': OperationAppliedSchema,
  'POST /v1/threads/:threadId/fork': ThreadCreatedSchema,
  'POST /v1/threads/:threadId/checkpoints': CheckpointCreatedSchema,
  'GET /v1/users/:userId/facts': FactListSchema,
  'DELETE /v1/users/:userId/facts/:factId': FactSchema,
  'GET /v1/users/:userId/episodes': EpisodeListSchema,
  'GET /v1/users/:userId/memory/audit': LongTermAuditSchema,
  'POST /v1/users/:userId/memory/search': SearchResultsSchema,
  'GET /v1/schedules': ScheduleListSchema,
  'POST /v1/schedules/:scheduleId/pause': ScheduleAcceptedSchema,
  'POST /v1/schedules/:scheduleId/unpause': ScheduleAcceptedSchema,
  'POST /v1/schedules/:scheduleId/trigger': ScheduleAcceptedSchema,
};

/** The events of each stream the page follows that have a declared schema, by event name. */
export const EVENTS: Readonly<Record<string, Readonly<Record<string, z.ZodType>>>> = {
  'GET /v1/runs/:runId/events': { state: ExecutionStateSchema, token: TokenEventSchema, token_reset: TokenResetEventSchema },
};

/** `/v1/runs/:runId` as a pattern of concrete paths (a parameter is one path segment); a literal segment is matched as such. */
const patternOf = (route: string) =>
  new RegExp(
    `^${route
      .split(' ')[1]!
      .replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
      .replace(/\/:[A-Za-z]+/g, '/[^/]+')}$`,
  );
const routesIn = (table: Readonly<Record<string, unknown>>) => Object.keys(table).map((route) => ({ route, method: route.split(' ')[0]!, pattern: patternOf(route) }));
const RESPONSE_ROUTES = routesIn(RESPONSES);
const EVENT_ROUTES = routesIn(EVENTS);

/** The declared route a call goes to, if the page knows its schema (a literal segment wins over a parameter). */
function routeOf(routes: { route: string; method: string; pattern: RegExp }[], method: string, path: string): string | undefined {
  const bare = path.split('?')[0]!;
  const matches = routes.filter((r) => r.method === method && r.pattern.test(bare)).map((r) => r.route);
  return matches.sort((a, b) => a.split(':').length - b.split(':').length)[0];
}

/** The body as it came, once it fits: a parse would drop fields the schema does not list (optional ones added since), which the page may show. */
function checked(schema: z.ZodType, body: unknown, what: string): unknown {
  const parsed = schema.safeParse(body);
  if (!parsed.success) throw new Error(`the API sent ${what} this page cannot read: ${z.prettifyError(parsed.error).replace(/\n/g, '; ')}`);
  return body;
}

/** A successful answer, read with its route's schema; the body as it came when the route has none. Throws when it does not fit. */
export function readResponse(method: string, path: string, body: unknown): unknown {
  const route = routeOf(RESPONSE_ROUTES, method, path);
  return route ? checked(RESPONSES[route]!, body, `${route} an answer`) : body;
}

/** An event of a stream, read with its schema; as it came when the stream or the event has none. */
export function readEvent(path: string, event: string, data: unknown): unknown {
  const route = routeOf(EVENT_ROUTES, 'GET', path);
  const schema = route ? EVENTS[route]![event] : undefined;
  return schema ? checked(schema, data, `${route} a "${event}" event`) : data;
}
