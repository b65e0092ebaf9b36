/**
 * Short calls run as local activities (issue 13): a call is made in the worker that runs the
 * workflow task, its result is recorded as a marker, and a chain of them needs no round trip
 * through the server per step. What a local call gives up is what a long call needs: the
 * workflow's task stays open while it runs, so queries, replies and cancellation wait for it, and
 * it cannot heartbeat. Hence the rule: a call runs locally only while the run's calls are fast
 * (the last one took at most LOCAL_CALL_MAX_MS, as the worker measured it and returned it with
 * the result, so replay and a worker taking over after a crash decide alike), and a
 * local call that finds it must do something slow (a tool not declared `quick`) hands over to a
 * regular activity with what it has done so far (`deferToActivity`), before doing it.
 *
 * Pure and workflow-safe: the workflow (run-engine) and the worker (activities, the local-call
 * journal) share it.
 */

/** A run's calls are "fast" while the last one took at most this long (a model answering in tenths of a second). */
export const LOCAL_CALL_MAX_MS = 250;

/** Whether the next call may run locally, from how long the run's last call took (null: no call yet). */
export function runsLocally(lastCallMs: number | null): boolean {
  return lastCallMs !== null && lastCallMs <= LOCAL_CALL_MAX_MS;
}

const DEFERRED = 'threadline.deferredToActivity';

/** A local call's answer that it handed over: the workflow makes the same call as an activity, with `resume` in its input. */
export interface Deferred {
  [DEFERRED]: true;
  resume?: unknown;
}

export const isDeferred = (value: unknown): value is Deferred =>
  typeof value === 'object' && value !== null && (value as Record<string, unknown>)[DEFERRED] === true;

export const deferredResult = (resume: unknown): Deferred => (resume === undefined ? { [DEFERRED]: true } : { [DEFERRED]: true, resume });

/**
 * Thrown by a local call that must go on as a regular activity; the worker's local-call
 * interceptor turns it into a `Deferred` result (a return, not a failure: nothing is logged or
 * retried). `resume` is what the activity takes back up from (a journaled model reply, say).
 */
export class DeferToActivity extends Error {
  constructor(readonly resume?: unknown) {
    super('this call goes on as a regular activity');
    this.name = 'DeferToActivity';
  }
}

const TIMED = 'threadline.timed';
const TIME_ME = 'threadline.timeMe';

/** A call's result with how long the worker took to make it: what the next call's choice rests on. */
export interface Timed {
  [TIMED]: true;
  value: unknown;
  ms: number;
}

export const isTimed = (value: unknown): value is Timed =>
  typeof value === 'object' && value !== null && (value as Record<string, unknown>)[TIMED] === true;

export const timedResult = (value: unknown, ms: number): Timed => ({ [TIMED]: true, value, ms });

/** An activity input asking the worker to time the call (only the workflows' Caller asks; other callers get plain results). */
export const askTiming = (input: unknown): unknown => (typeof input === 'object' && input !== null ? { ...input, [TIME_ME]: true } : input);

/** The input without the request, and whether it asked. */
export function takeTimingRequest(input: unknown): { input: unknown; timed: boolean } {
  if (typeof input !== 'object' || input === null || !(TIME_ME in input)) return { input, timed: false };
  const { [TIME_ME]: _asked, ...rest } = input as Record<string, unknown>;
  return { input: rest, timed: true };
}
