/**
 * The worker's side of token accounting: an activity interceptor that gives each activity attempt
 * its own tally (src/usage/usage.ts) and records it, when a model was called, with the run,
 * session and user the attempt worked for. Attempts that fail are recorded too: their calls cost
 * the same. Recording never fails an activity.
 */
import type { ActivityInterceptorsFactory } from '@temporalio/worker';
import { tallyUsage } from './usage';
import type { UsageStore } from './usage-store';

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
  onError?: (err: unknown) => void;
}

export function recordUsageInterceptor(options: RecordUsageOptions): ActivityInterceptorsFactory {
  return (ctx) => ({
    inbound: {
      async execute(input, next) {
        const { usage, result } = await tallyUsage(() => next(input));
        if (usage.calls > 0) {
          try {
            const arg = (input.args[0] ?? {}) as Attributable;
            const userId = arg.state?.userId ?? arg.userId ?? (arg.threadId && options.ownerOf ? await options.ownerOf(arg.threadId) : null);
            if (userId) {
              const { info } = ctx;
              await options.store.record({
                userId,
                runId: arg.state?.runId ?? null,
                sessionId: arg.state?.sessionId ?? arg.sessionId ?? null,
                source: `${info.workflowExecution?.workflowId ?? 'standalone'}/${info.activityType}#${info.activityId}.${info.attempt}`,
                model: options.model,
                at: new Date().toISOString(),
                ...usage,
              });
            }
          } catch (err) {
            options.onError?.(err);
          }
        }
        return result;
      },
    },
  });
}
