/**
 * Recording token usage. The worker's side: an activity interceptor that gives each activity attempt
 * its own tally (src/usage/usage.ts) and records it, when a model was called, with the run,
 * session and user the attempt worked for. Attempts that fail are recorded too: their calls cost
 * the same. Recording never fails an activity.
 *
 * With a budget (USER_TOKEN_BUDGET), every model call the attempt makes is first checked against
 * the user's month so far plus what the attempt already spent: past it, the call is refused with a
 * non-retryable `BudgetExceeded` failure, so the run fails with that reason instead of retrying.
 * The API's side (`meteredFor`): the same for calls it makes itself, such as a search's embedding.
 */
import { ApplicationFailure } from '@temporalio/common';
import type { ActivityInterceptorsFactory } from '@temporalio/worker';
import { budgetGuard } from './budget';
import { tallyUsage, type Usage } from './usage';
import type { UsageRecord, UsageStore } from '../store/usage/usage-store';

interface Attributable {
  state?: { userId?: string; runId?: string; sessionId?: string | null };
  userId?: string;
  sessionId?: string;
  threadId?: string;
}

export interface RecordUsageOptions {
  store: UsageStore;
  model: string;
  /** The owner of a memory thread: a session activity names its thread, not its user. */
  ownerOf?: (threadId: string) => Promise<string | null>;
  /** Tokens one user may use per calendar month (USER_TOKEN_BUDGET). @default 0 (no budget) */
  budget?: number;
  onError?: (err: unknown) => void;
}

/** The failure a refused call ends its activity with: final, so the workflow sees it at once. */
export const BUDGET_EXCEEDED = 'BudgetExceeded';

/** Records a tally of model calls, one record per model, when there was one; a failure is reported, never thrown. */
async function recordTally(
  options: Pick<RecordUsageOptions, 'store' | 'model' | 'onError'>,
  byModel: ReadonlyMap<string, Usage>,
  who: () => Promise<Omit<UsageRecord, keyof Usage | 'model' | 'at'> | null>,
): Promise<void> {
  if (byModel.size === 0) return;
  try {
    const owner = await who();
    if (!owner) return;
    const at = new Date().toISOString();
    for (const [model, usage] of byModel) await options.store.record({ ...owner, model: model || options.model, at, ...usage });
  } catch (err) {
    options.onError?.(err);
  }
}

export function recordUsageInterceptor(options: RecordUsageOptions): ActivityInterceptorsFactory {
  return (ctx) => ({
    inbound: {
      async execute(input, next) {
        const arg = (input.args[0] ?? {}) as Attributable;
        let owner: Promise<string | null> | undefined;
        const userOf = () => (owner ??= (async () => arg.state?.userId ?? arg.userId ?? (arg.threadId && options.ownerOf ? await options.ownerOf(arg.threadId) : null))());
        const guard = budgetGuard({
          store: options.store,
          budget: options.budget ?? 0,
          userOf,
          refuse: (err) => ApplicationFailure.nonRetryable(err.message, BUDGET_EXCEEDED),
          ...(options.onError ? { onError: options.onError } : {}),
        });
        const { byModel, result } = await tallyUsage(() => next(input), guard);
        await recordTally(options, byModel, async () => {
          const userId = await userOf();
          const { info } = ctx;
          return userId
            ? {
                userId,
                runId: arg.state?.runId ?? null,
                sessionId: arg.state?.sessionId ?? arg.sessionId ?? null,
                source: `${info.workflowExecution?.workflowId ?? 'standalone'}/${info.activityType}#${info.activityId}.${info.attempt}`,
              }
            : null;
        });
        return result;
      },
    },
  });
}

/**
 * Model calls made outside activities, for one user (the API's searches and imports embed their
 * texts): each checked against the budget (a refused embedding is skipped by its caller, which
 * searches and stores without vectors), then recorded as `source`.
 */
export async function meteredFor<T>(options: Omit<RecordUsageOptions, 'ownerOf'>, userId: string, source: string, fn: () => Promise<T>): Promise<T> {
  const guard = budgetGuard({ store: options.store, budget: options.budget ?? 0, userOf: async () => userId, ...(options.onError ? { onError: options.onError } : {}) });
  const { byModel, result } = await tallyUsage(fn, guard);
  await recordTally(options, byModel, async () => ({ userId, runId: null, sessionId: null, source }));
  return result;
}
