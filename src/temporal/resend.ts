/**
 * Sending a person's input (a reply, a session message) as a Temporal update, again and again
 * until it is taken or refused, within a deadline. Every attempt carries the same update id, so
 * an attempt that was accepted after all is answered by the server with its outcome instead of
 * being taken twice: a person's input is never lost to load and never doubled.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { ServiceError, WorkflowUpdateRPCTimeoutOrCancelledError, type Client } from '@temporalio/client';
import { GrpcCode, hasGrpcCode } from './grpc-status';

/**
 * How long a person's input is resent, and how long one attempt may wait: an attempt is cut off
 * after `attemptMs` (the worker that must take it may be busy for a while, e.g. replaying evicted
 * runs) and sent again under the same update id, so an update the server had already taken is
 * answered with its outcome instead of being lost to the caller as a 503.
 */
export interface ResendPolicy {
  deadlineMs: number;
  attemptMs: number;
}
export const DEFAULT_RESEND: ResendPolicy = { deadlineMs: 120_000, attemptMs: 15_000 };
/** Back-off between attempts: 50 ms, doubling, at most 1 s. */
export const RESEND_PAUSE_MS = (attempt: number) => Math.min(1_000, 50 * 2 ** attempt);

/**
 * The server's WorkflowNotReady: the workflow task that carried the update failed before accepting
 * it (a session's hand-over that a run's report raced, a worker busy replaying evicted runs). The
 * update was not accepted, so sending it again is safe.
 */
export const isNotReady = (err: unknown): boolean => err instanceof ServiceError && hasGrpcCode(err.cause, [GrpcCode.FAILED_PRECONDITION]);
/** The server or the connection did not answer (a restart, an overloaded frontend): nothing was taken. */
export const isUnavailable = (err: unknown): boolean => hasGrpcCode(err, [GrpcCode.UNAVAILABLE]);
/**
 * An attempt ran out of its time (the client reports an update's as WorkflowUpdateRPCTimeoutOrCancelledError):
 * the input may or may not have been taken; the same update id tells.
 */
export const isAttemptTimeout = (err: unknown): boolean => err instanceof WorkflowUpdateRPCTimeoutOrCancelledError || hasGrpcCode(err, [GrpcCode.DEADLINE_EXCEEDED]);

/**
 * Runs `send(updateId)` until it resolves, resending after an attempt that timed out, or while
 * `shouldResend(err)` says the input was not taken, as long as the deadline allows; any other
 * error is thrown as it is.
 */
export async function resendUntilTaken<T>(
  client: Pick<Client, 'connection'>,
  send: (updateId: string) => Promise<T>,
  shouldResend: (err: unknown) => boolean,
  policy: ResendPolicy = DEFAULT_RESEND,
): Promise<T> {
  const deadline = Date.now() + policy.deadlineMs;
  const updateId = randomUUID();
  for (let attempt = 0; ; attempt++) {
    try {
      return await client.connection.withDeadline(Math.min(deadline, Date.now() + policy.attemptMs), () => send(updateId));
    } catch (err) {
      const pause = RESEND_PAUSE_MS(attempt);
      if (!(isAttemptTimeout(err) || shouldResend(err)) || Date.now() + pause >= deadline) throw err;
      await sleep(pause);
    }
  }
}
