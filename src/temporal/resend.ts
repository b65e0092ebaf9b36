/**
 * Sending a person's input (a reply, a session message) as a Temporal update, again and again
 * until it is taken or refused, within a deadline. Every attempt carries the same update id, so
 * an attempt that was accepted after all is answered by the server with its outcome instead of
 * being taken twice: a person's input is never lost to load and never doubled.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { ServiceError, type Client } from '@temporalio/client';
import { GrpcCode, hasGrpcCode } from './grpc-status';

/** How long a person's input is resent before the caller hears 503. */
export const RESEND_DEADLINE_MS = 30_000;
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
 * Runs `send(updateId)` until it resolves, resending while `shouldResend(err)` says the input was
 * not taken and the deadline allows; any other error is thrown as it is.
 */
export async function resendUntilTaken<T>(
  client: Pick<Client, 'connection'>,
  send: (updateId: string) => Promise<T>,
  shouldResend: (err: unknown) => boolean,
  deadlineMs = RESEND_DEADLINE_MS,
): Promise<T> {
  const deadline = Date.now() + deadlineMs;
  const updateId = randomUUID();
  for (let attempt = 0; ; attempt++) {
    try {
      return await client.connection.withDeadline(deadline, () => send(updateId));
    } catch (err) {
      const pause = RESEND_PAUSE_MS(attempt);
      if (!shouldResend(err) || Date.now() + pause >= deadline) throw err;
      await sleep(pause);
    }
  }
}
