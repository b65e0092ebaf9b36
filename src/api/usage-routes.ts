/**
 * `GET /v1/users/:userId/usage?since=` → the user's model usage (prompt, completion and cached
 * tokens, calls) in total, per run and per session; and the per-user token budget that stops new
 * runs once a month's usage reaches it (USER_TOKEN_BUDGET).
 */
import { Router, type RequestHandler } from 'express';
import { z } from 'zod';
import type { UsageStore } from '../store/usage/usage-store';
import { summarize } from '../store/usage/usage-store';
import { BudgetExceededError, checkBudget } from '../usage/budget';
import { principalOf } from './authenticate';
import { ApiError } from './errors';
import { ownedBy } from './ownership';
import { UsageSummarySchema } from './response-schemas';
import { documented } from './routes-registry';
import { UserIdSchema } from './schemas';

const UsageParams = z.object({ userId: UserIdSchema });
const UsageQuery = z.object({ since: z.iso.datetime({ offset: true }).optional() });

export function usageRouter(store: UsageStore): Router {
  const router = Router();
  // A user's usage is theirs alone: another user's is a 404, as for runs.
  router.param(
    'userId',
    ownedBy(
      async (userId) => userId,
      (userId) => new ApiError(404, 'not_found', `no usage for user "${userId}"`),
    ),
  );
  const routes = documented(router, 'usage');
  routes.get(
    '/v1/users/:userId/usage',
    {
      summary: "The user's model usage (tokens, calls) in total, per run and per session, since `since`",
      request: { params: UsageParams, query: UsageQuery },
      responses: { 200: { description: 'The usage', schema: UsageSummarySchema } },
      errors: { 404: "Not the caller's user" },
    },
    async ({ params, query }, _req, res) => {
      const since = query.since ? new Date(query.since) : undefined;
      res.json(summarize(params.userId, await store.records(params.userId, since), since));
    },
  );
  return router;
}

/**
 * Refuses to start work for a user whose tokens this month reached `budget` (0: no budget).
 * `userOf` names the user a request starts work for.
 */
export function withinBudget(store: UsageStore | undefined, budget: number, userOf: (req: Parameters<RequestHandler>[0]) => Promise<string | null>): RequestHandler {
  return (req, res, next) => {
    if (!store || budget <= 0) return next();
    (async () => {
      const caller = principalOf(res);
      const userId = caller?.role === 'user' ? caller.userId : await userOf(req);
      if (!userId) return;
      await checkBudget(store, budget, userId).catch((err: unknown) => {
        if (!(err instanceof BudgetExceededError)) throw err;
        throw new ApiError(403, 'budget_exceeded', `user "${userId}" used ${err.used} of a ${budget}-token budget this month; new runs start again on ${err.resumesOn}`);
      });
    })().then(() => next(), next);
  };
}
