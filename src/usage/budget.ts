/**
 * The per-user monthly token budget (USER_TOKEN_BUDGET): prompt and completion tokens of every
 * model call — chat and embeddings, runs, sessions, memory passes and API searches alike — since
 * the start of the calendar month (UTC). The API refuses new work past it (403 `budget_exceeded`);
 * the worker refuses each model call past it, so a run that started under the budget stops at its
 * next call instead of spending on.
 */
import { tokensOf, type CallGuard } from './usage';
import type { UsageStore } from '../store/usage/usage-store';

/** The start of the calendar month (UTC) of `now`: budgets count from there. */
export const monthStart = (now: Date): Date => new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));

/** The user's budget is used up for this month. */
export class BudgetExceededError extends Error {
  constructor(
    readonly userId: string,
    readonly used: number,
    readonly budget: number,
    /** The first day of next month (YYYY-MM-DD, UTC), when the budget starts again. */
    readonly resumesOn: string,
  ) {
    super(`user "${userId}" used ${used} of a ${budget}-token monthly budget (USER_TOKEN_BUDGET); model calls resume on ${resumesOn}`);
    this.name = 'BudgetExceededError';
  }
}

/** Tokens (prompt + completion) `userId` used since the start of `now`'s month. */
export async function usedThisMonth(store: UsageStore, userId: string, now = new Date()): Promise<number> {
  return store.tokensSince(userId, monthStart(now));
}

/** Throws BudgetExceededError when `used` tokens reach `budget` (0: no budget). */
function refuseAt(userId: string, used: number, budget: number, now: Date): void {
  if (budget <= 0 || used < budget) return;
  const since = monthStart(now);
  const resumesOn = new Date(Date.UTC(since.getUTCFullYear(), since.getUTCMonth() + 1, 1)).toISOString().slice(0, 10);
  throw new BudgetExceededError(userId, used, budget, resumesOn);
}

/** Throws BudgetExceededError when `userId`'s tokens this month reach `budget` (0: no budget). */
export async function checkBudget(store: UsageStore, budget: number, userId: string, now = new Date()): Promise<void> {
  if (budget > 0) refuseAt(userId, await usedThisMonth(store, userId, now), budget, now);
}

export interface BudgetGuardOptions {
  store: UsageStore;
  /** Tokens per user per month; 0: no guard. */
  budget: number;
  /** The user the calls are made for, looked up at the first call (null: not attributable, never refused). */
  userOf: () => Promise<string | null>;
  /** What a refused call throws. @default the BudgetExceededError */
  refuse?: (err: BudgetExceededError) => Error;
  /** A user or a month's usage that cannot be read does not stop a call: it is reported here. */
  onError?: (err: unknown) => void;
}

/**
 * The month's recorded usage is read again after this long within one guard: an import's hundreds of
 * embeddings calls do not each read the user's records, and what this tally spent is added exactly.
 */
const REREAD_MS = 5_000;

/**
 * A tally guard (src/usage/usage.ts) that refuses model calls once the user's month so far plus
 * what the tally spent reaches the budget; none without a budget.
 */
export function budgetGuard(options: BudgetGuardOptions): CallGuard | undefined {
  if (options.budget <= 0) return undefined;
  let user: Promise<string | null> | undefined;
  let recorded: { tokens: number; at: number } | undefined;
  return async (pending) => {
    try {
      const userId = await (user ??= options.userOf());
      if (!userId) return;
      const now = new Date();
      if (!recorded || now.getTime() - recorded.at > REREAD_MS) recorded = { tokens: await usedThisMonth(options.store, userId, now), at: now.getTime() };
      refuseAt(userId, recorded.tokens + tokensOf(pending), options.budget, now);
    } catch (err) {
      if (err instanceof BudgetExceededError) throw options.refuse ? options.refuse(err) : err;
      options.onError?.(err);
    }
  };
}
