/**
 * Short calls run as local activities (issue 13): a call is made in the worker that runs the
 * workflow task, its result is recorded as a marker, and a chain of them needs no round trip
 * through the server per step. What a local call gives up is what a long call needs: the
 * workflow's task stays open while it runs, so queries, replies and cancellation wait for it, and
 * it cannot heartbeat. Hence the rule: a call runs locally only while the calls of its kind are
 * fast (the last one took at most LOCAL_CALL_MAX_MS, as the worker measured it and returned it
 * with the result, so replay and a worker taking over after a crash decide alike), and a local
 * call that finds it must do something slow (a tool not declared `quick`) hands over to a regular
 * activity before doing it (`DeferToActivity`). The regular activity goes on under the local
 * call's idempotency key, so what the local call journaled (a model's reply, a tool's result) is
 * what it finds. A local call that finds its worker without the run's previous state (the call
 * before ran as a regular activity on another worker, or the worker restarted) answers
 * `NeedsState`, and the workflow makes it again, locally, with the whole state: sent by patch, it
 * would otherwise go on as a regular activity, a workflow task more, on any worker (as likely
 * without the state again).
 *
 * Pure and workflow-safe: the workflow (src/workflows/calls.ts) and the worker (activities, the
 * calls interceptor) share it.
 */

/** Calls are "fast" while the last one took at most this long (a model answering in tenths of a second). */
export const LOCAL_CALL_MAX_MS = 250;

/** Whether the next call may run locally, from how long the last call of its kind took (null: unknown). */
export function runsLocally(lastCallMs: number | null): boolean {
  return lastCallMs !== null && lastCallMs <= LOCAL_CALL_MAX_MS;
}

const DEFERRED = 'threadline.deferredToActivity';
const NEEDS_STATE = 'threadline.needsState';
const TIMED = 'threadline.timed';
const TIME_ME = 'threadline.timeMe';
const CALL_KEY = 'threadline.callKey';

/** A local call's answer that it handed over: the workflow makes the same call as an activity under `key`. */
export interface Deferred {
  [DEFERRED]: true;
  key: string;
}

export const isDeferred = (value: unknown): value is Deferred => typeof value === 'object' && value !== null && (value as Record<string, unknown>)[DEFERRED] === true;

export const deferredResult = (key: string): Deferred => ({ [DEFERRED]: true, key });

/**
 * A local call's answer when its worker lacks the state its patch applies to: the workflow makes it again,
 * locally, with the whole state, under `key` (so what the call journals is found as a hand-over finds it).
 */
export interface NeedsState {
  [NEEDS_STATE]: true;
  key: string;
}

export const isNeedsState = (value: unknown): value is NeedsState => typeof value === 'object' && value !== null && (value as Record<string, unknown>)[NEEDS_STATE] === true;

export const needsStateResult = (key: string): NeedsState => ({ [NEEDS_STATE]: true, key });

/** Thrown before a local call runs when its worker cannot rebuild the run's state from the patch; becomes `NeedsState`. */
export class StateNotHere extends Error {
  constructor() {
    super("this worker does not have the run's previous state");
    this.name = 'StateNotHere';
  }
}

/**
 * Thrown by a local call that must go on as a regular activity; the worker's calls interceptor
 * turns it into a `Deferred` result (a return, not a failure: nothing is logged or retried).
 */
export class DeferToActivity extends Error {
  constructor() {
    super('this call goes on as a regular activity');
    this.name = 'DeferToActivity';
  }
}

/** A call's result with how long the worker took to make it: what the next call's choice rests on. */
export interface Timed {
  [TIMED]: true;
  value: unknown;
  ms: number;
}

export const isTimed = (value: unknown): value is Timed => typeof value === 'object' && value !== null && (value as Record<string, unknown>)[TIMED] === true;

export const timedResult = (value: unknown, ms: number): Timed => ({ [TIMED]: true, value, ms });

/**
 * An activity input asking the worker to time the call (only the workflows' Caller asks; other
 * callers get plain results) and, for a call a local one handed over, to go on under its key.
 */
export function callInput(input: unknown, key?: string): unknown {
  if (typeof input !== 'object' || input === null) return input;
  return { ...input, [TIME_ME]: true, ...(key !== undefined ? { [CALL_KEY]: key } : {}) };
}

/** What `callInput` added, taken back out: the activity's own input, whether to time it, and the key it goes on under. */
export function takeCallInput(input: unknown): { input: unknown; timed: boolean; key: string | undefined } {
  if (typeof input !== 'object' || input === null || !(TIME_ME in input)) return { input, timed: false, key: undefined };
  const { [TIME_ME]: _timed, [CALL_KEY]: key, ...rest } = input as Record<string, unknown>;
  return { input: rest, timed: true, key: typeof key === 'string' ? key : undefined };
}
