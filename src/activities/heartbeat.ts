import { Context, type Info } from '@temporalio/activity';
import { DeferToActivity } from '../engine/local-calls';
import { ContextSlot } from '../telemetry/context-slot';

/** The key of the call an activity goes on with: a local call's, handed over (src/activities/calls-interceptor.ts). */
const callKeys = new ContextSlot<string>('callKey');

/** Runs `fn` as the call of `key`: `idempotencyKey()` inside it is `key`. */
export const withCallKey = <T>(key: string, fn: () => Promise<T>): Promise<T> => callKeys.run(key, fn);

/** Interval of automatic heartbeats; well under the heartbeat timeout set in workflows. */
export const HEARTBEAT_INTERVAL_MS = 1000;

/**
 * Runs `fn` while heartbeating every second, so a crashed worker's activity is
 * noticed within the heartbeat timeout and retried elsewhere — even while the
 * activity is blocked on a slow model call.
 */
export async function withHeartbeats<T>(fn: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const ctx = Context.current();
  // A local call cannot heartbeat (its workflow task's timeout notices a crash instead).
  if (ctx.info.isLocal) return fn(ctx.cancellationSignal);
  ctx.heartbeat();
  const timer = setInterval(() => ctx.heartbeat(), HEARTBEAT_INTERVAL_MS);
  try {
    return await fn(ctx.cancellationSignal);
  } finally {
    clearInterval(timer);
  }
}

/** Stable across retries of one activity: the key that makes its side effects idempotent. */
export function idempotencyKey(): string {
  return callKeys.get() ?? idempotencyKeyOf(Context.current().info);
}

/** The idempotency key of the activity `info` describes (a local call's id is its sequence number in the run, stable across replays). */
export function idempotencyKeyOf(info: Info): string {
  const wf = info.workflowExecution;
  return `${wf?.workflowId ?? 'standalone'}/${wf?.runId ?? info.activityId}/${info.activityId}`;
}

/**
 * Inside a local call (src/engine/local-calls.ts), hands over to a regular activity unless every
 * tool named is declared quick: a slow one needs what only a regular activity has (heartbeats, a
 * workflow task left free for queries, replies and cancellation).
 */
export function handOverUnlessQuick(tools: { isQuick(name: string): boolean }, names: readonly string[]): void {
  if (Context.current().info.isLocal && names.some((name) => !tools.isQuick(name))) throw new DeferToActivity();
}
