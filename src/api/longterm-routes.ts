/**
 * Long-term memory over REST (seed 002, DESIGN.md "Long-term memory"): import of chat logs,
 * hybrid search, facts (list, state, end, history) and episodes of one user, and its audit
 * (writes and reads). A user key reaches only its own user (`ownedBy` on :userId: another user's
 * memory is a 404, like a run), and every lookup is scoped to the user of the path, so another
 * user's fact id is a 404 too. Reads through the API are recorded as the person's.
 */
import express, { Router, type RequestHandler } from 'express';
import { z } from 'zod';
import { FactInputSchema, MEMORY_KINDS, type LongTermMemory, type ReadMeta } from '../longterm/contract';
import { LONGTERM_READ_ACTIONS, LONGTERM_WRITE_ACTIONS } from '../longterm/audit-actions';
import type { ImportedConversation, LongTermService } from '../longterm/service';
import { LONGTERM_AUDIT_KINDS } from '../store/longterm/store';
import { MAX_QUERY_CHARS } from '../longterm/retrieval';
import { newSessionId } from '../temporal/sessions';
import { ApiError } from './errors';
import { noLimit } from './limits';
import { ownedBy } from './ownership';
import { EpisodeListSchema, FactListSchema, FactSchema, ImportedSchema, LongTermAuditSchema, RecordedFactSchema, SearchResultsSchema } from './longterm-schemas';
import { documented } from './routes-registry';
import { UserIdSchema } from './schemas';

/** An import is a whole chat export: up to 10 MB of JSON (about 20,000 messages of average length) in one request. */
export const IMPORT_BODY_LIMIT = '10mb';
/** Every other long-term request is small: a query or one fact. */
const BODY_LIMIT = '64kb';

const datetime = z.iso.datetime({ offset: true });
const UserParams = z.object({ userId: UserIdSchema });
const FactParams = UserParams.extend({ factId: z.string().min(1).max(200) });
const text = (max: number) => z.string().trim().min(1).max(max);
const limit = (max: number) => z.coerce.number().int().min(1).max(max).optional();

const ImportBody = z.object({
  conversations: z
    .array(
      z.object({
        sessionId: text(128).optional(),
        title: z.string().max(500).optional(),
        messages: z
          .array(
            z.object({
              id: text(200).optional(),
              role: z.enum(['user', 'assistant']),
              name: z.string().max(200).optional(),
              text: z.string().min(1).max(100_000),
              at: datetime.optional(),
            }),
          )
          .min(1)
          .max(100_000),
      }),
    )
    .min(1)
    .max(10_000),
});

const SearchBody = z.object({
  query: text(MAX_QUERY_CHARS),
  k: z.number().int().min(1).max(100).optional(),
  kinds: z.array(z.enum(MEMORY_KINDS)).min(1).optional(),
  asOf: datetime.optional(),
  sessionId: text(128).optional(),
});

const FactsQuery = z.object({
  q: z.string().max(1000).optional(),
  asOf: datetime.optional(),
  includeInvalid: z.enum(['true', 'false']).optional(),
  limit: limit(1000),
});

const EpisodesQuery = z.object({ q: z.string().max(1000).optional(), limit: limit(200) });

/** Times in the audit are UTC ISO strings: `since`/`until` with any offset are compared as such. */
const instant = datetime.transform((t) => new Date(t).toISOString());
const AuditQuery = z.object({
  kind: z.enum(LONGTERM_AUDIT_KINDS).optional().meta({ description: '`read` or `write`; both when absent' }),
  action: z.enum([...LONGTERM_READ_ACTIONS, ...LONGTERM_WRITE_ACTIONS]).optional(),
  runId: text(200).optional(),
  since: instant.optional().meta({ description: 'inclusive' }),
  until: instant.optional().meta({ description: 'inclusive' }),
  limit: limit(1000).meta({ description: 'the newest this many; default 100' }),
});
/** Entries listed when the query names no limit. */
const AUDIT_DEFAULT_LIMIT = 100;

export interface LongTermRouterOptions {
  longterm: LongTermMemory & Pick<LongTermService, 'importConversations' | 'auditLog'>;
  /**
   * Told of every import once it is stored (searchable): starts the background extraction over it
   * (when a model is configured) and says where to watch it, or null. Its own failures are its to
   * log: the import stands either way.
   */
  onImported?: (imported: { userId: string; sessionIds: string[] }) => Promise<ImportExtraction | null>;
  /**
   * Per-user limits: imports (each up to 10 MB, then a background extraction) and searches (an embeddings
   * call each) as rate limits, and the conversations of one import handed to the extraction (0: all).
   */
  limits?: { imports: RequestHandler; searches: RequestHandler; extractedPerImport: number };
  /** Runs a request's work for a user with its model calls (embeddings) checked against the budget and recorded. */
  metered?: <T>(userId: string, source: string, fn: () => Promise<T>) => Promise<T>;
}

/** Where the background extraction over an import shows its progress. */
export interface ImportExtraction {
  workflowId: string;
  uiUrl: string;
}

export function longTermRouter(options: LongTermRouterOptions): Router {
  const { longterm } = options;
  const metered = options.metered ?? (<T>(_userId: string, _source: string, fn: () => Promise<T>) => fn());
  // Every request that embeds text (a search, a listing with `q`, a stated fact) counts against one per-user rate.
  const embeds = options.limits?.searches ?? noLimit;
  const whenQueried: RequestHandler = (req, res, next) => (typeof req.query.q === 'string' && req.query.q.trim() !== '' ? embeds(req, res, next) : next());
  const router = Router();
  router.param(
    'userId',
    ownedBy(
      async (userId) => userId,
      (userId) => new ApiError(404, 'not_found', `no memory for user "${userId}"`),
    ),
  );
  const factNotFound = (userId: string, factId: string) => new ApiError(404, 'not_found', `user "${userId}" has no fact "${factId}"`);
  const routes = documented(router, 'long-term memory');
  const notFound = { 404: "Not the caller's user" } as const;
  /** Reads through the API are a person's, recorded in the user's long-term audit. */
  const person = (what: string): ReadMeta => ({ origin: 'person', reason: `${what} through the API` });

  routes.post(
    '/v1/users/:userId/memory/import',
    {
      summary: "Import conversations (a chat export) into the user's long-term memory; searchable on return",
      request: { params: UserParams, body: ImportBody },
      responses: { 201: { description: 'Imported; given session and message ids are kept. `extraction` says where a background extraction runs, when one started', schema: ImportedSchema } },
      errors: { ...notFound, 413: 'Over 10 MB', 422: 'An observer refused a message (`refused`)', 429: 'Too many imports this hour (see Retry-After)' },
      // The limit before the body is read: a refused import costs no parsing of 10 MB.
      use: [options.limits?.imports ?? noLimit, express.json({ limit: IMPORT_BODY_LIMIT })],
    },
    async ({ params, body }, _req, res) => {
      const conversations: ImportedConversation[] = body.conversations;
      const result = await metered(params.userId, 'api/memory-import', () =>
        longterm.importConversations(params.userId, conversations, { origin: 'person', reason: 'imported through the API' }, newSessionId),
      );
      // The background extraction reads at most extractedPerImport conversations (model calls each); the rest stay searchable.
      const cap = options.limits?.extractedPerImport ?? 0;
      const extracted = cap > 0 ? result.sessionIds.slice(0, cap) : result.sessionIds;
      const extraction = (await options.onImported?.({ userId: params.userId, sessionIds: extracted })) ?? null;
      res.status(201).json(extraction ? { ...result, extraction } : result);
    },
  );

  const small = express.json({ limit: BODY_LIMIT });

  routes.post(
    '/v1/users/:userId/memory/search',
    {
      summary: "Search the user's long-term memory (messages, facts, episodes, summaries)",
      request: { params: UserParams, body: SearchBody },
      responses: { 200: { description: 'The hits, best first', schema: SearchResultsSchema } },
      errors: { ...notFound, 429: 'Too many searches this minute (see Retry-After)' },
      use: [embeds, small],
    },
    async ({ params, body }, _req, res) => {
      // The query's embedding counts against the user's token budget; past it, the search is lexical only.
      const results = await metered(params.userId, 'api/memory-search', () =>
        longterm.search(
          params.userId,
          {
            query: body.query,
            ...(body.k !== undefined ? { k: body.k } : {}),
            ...(body.kinds ? { kinds: body.kinds } : {}),
            ...(body.asOf ? { asOf: body.asOf } : {}),
            ...(body.sessionId ? { sessionId: body.sessionId } : {}),
          },
          person('searched'),
        ),
      );
      res.json({ results });
    },
  );

  routes.get(
    '/v1/users/:userId/facts',
    {
      summary: "The user's facts (valid ones, or as believed at `asOf`)",
      request: { params: UserParams, query: FactsQuery },
      responses: { 200: { description: 'The facts', schema: FactListSchema } },
      errors: { ...notFound, 429: 'Too many searches this minute, `q` given (see Retry-After)' },
      use: [whenQueried],
    },
    async ({ params, query }, _req, res) => {
      const facts = await metered(params.userId, 'api/memory-facts', () =>
        longterm.listFacts(
          params.userId,
          {
            ...(query.q ? { q: query.q } : {}),
            ...(query.asOf ? { asOf: query.asOf } : {}),
            includeInvalid: query.includeInvalid === 'true',
            ...(query.limit !== undefined ? { limit: query.limit } : {}),
          },
          person('listed'),
        ),
      );
      res.json({ facts });
    },
  );

  routes.post(
    '/v1/users/:userId/facts',
    {
      summary: 'Record a fact the person states',
      request: { params: UserParams, body: FactInputSchema },
      responses: { 201: { description: 'Added, strengthened (a duplicate) or superseding an earlier fact; `Location` is its history', schema: RecordedFactSchema } },
      errors: { ...notFound, 422: 'An observer refused it (`refused`)', 429: 'Too many searches and stated facts this minute (see Retry-After)' },
      use: [embeds, small],
    },
    async ({ params, body }, _req, res) => {
      const recorded = await metered(params.userId, 'api/memory-fact', () =>
        longterm.recordFact(params.userId, body, { messageIds: [], source: 'person' }, { origin: 'person', reason: 'stated through the API' }),
      );
      res
        .status(201)
        .location(`/v1/users/${encodeURIComponent(params.userId)}/facts/${encodeURIComponent(recorded.fact.id)}/history`)
        .json(recorded);
    },
  );

  routes.delete(
    '/v1/users/:userId/facts/:factId',
    {
      summary: "End a fact's validity (it stays in its history)",
      request: { params: FactParams },
      responses: { 200: { description: 'The fact, ended', schema: FactSchema } },
      errors: { 404: 'No such fact of this user' },
    },
    async ({ params }, _req, res) => {
      const fact = await longterm.endFact(params.userId, params.factId, { origin: 'person', reason: 'ended through the API' });
      if (!fact) throw factNotFound(params.userId, params.factId);
      res.json(fact);
    },
  );

  routes.get(
    '/v1/users/:userId/facts/:factId/history',
    {
      summary: 'A fact and the facts it superseded or that superseded it',
      request: { params: FactParams },
      responses: { 200: { description: 'The history, oldest first', schema: FactListSchema } },
      errors: { 404: 'No such fact of this user' },
    },
    async ({ params }, _req, res) => {
      const facts = await longterm.factHistory(params.userId, params.factId, person('read'));
      if (facts.length === 0) throw factNotFound(params.userId, params.factId);
      res.json({ facts });
    },
  );

  routes.get(
    '/v1/users/:userId/episodes',
    {
      summary: "The user's episodes (what was tried and learnt), optionally matching `q`",
      request: { params: UserParams, query: EpisodesQuery },
      responses: { 200: { description: 'The episodes', schema: EpisodeListSchema } },
      errors: { ...notFound, 429: 'Too many searches this minute, `q` given (see Retry-After)' },
      use: [whenQueried],
    },
    async ({ params, query }, _req, res) => {
      const filter = { ...(query.q ? { q: query.q } : {}), ...(query.limit !== undefined ? { limit: query.limit } : {}) };
      res.json({ episodes: await metered(params.userId, 'api/memory-episodes', () => longterm.listEpisodes(params.userId, filter, person('listed'))) });
    },
  );

  routes.get(
    '/v1/users/:userId/memory/audit',
    {
      summary: "The audit of the user's long-term memory: every write and every read (search, recall into a prompt, listing), newest first",
      description:
        'Reads are recorded by whoever made them: the agent (a run recalling facts and episodes for its prompts, its memory tools; with the run and session), the system (memory passes) or a person (these routes). Listing the audit is not itself recorded.',
      request: { params: UserParams, query: AuditQuery },
      responses: { 200: { description: 'The entries, newest first', schema: LongTermAuditSchema } },
      errors: notFound,
    },
    async ({ params, query }, _req, res) => {
      const entries = await longterm.auditLog(params.userId, {
        ...(query.kind ? { kind: query.kind } : {}),
        ...(query.action ? { action: query.action } : {}),
        ...(query.runId ? { runId: query.runId } : {}),
        ...(query.since ? { since: query.since } : {}),
        ...(query.until ? { until: query.until } : {}),
        limit: query.limit ?? AUDIT_DEFAULT_LIMIT,
      });
      // Entries stored before reads were audited have no kind: they are writes.
      res.json({ entries: entries.map((e) => ({ ...e, kind: e.kind ?? 'write' })) });
    },
  );
  return router;
}
