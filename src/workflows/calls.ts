/**
 * How workflows make activity calls: locally while a workflow's calls are fast, else as regular
 * activities (src/engine/local-calls.ts), with a run's state passed by reference
 * (src/engine/state-ref.ts). Shared by the run engine and the session.
 */
import {
  ActivityCancellationType,
  ActivityFailure,
  ApplicationFailure,
  isCancellation,
  proxyActivities,
  proxyLocalActivities,
  TemporalFailure,
  type ActivityOptions,
  type LocalActivityOptions,
} from '@temporalio/workflow';
import { callInput, isDeferred, isNeedsState, isTimed, runsLocally } from '../engine/local-calls';
import { StateSender, type StateRef } from '../engine/state-ref';

const DEFAULT_KIND = 'calls';

/**
 * A call's options: an activity's, and `waitsOnCancel` — cancelled while it runs locally, the workflow waits
 * for it to stop or finish (a call that closes the run finishes what it began; its result then counts).
 */
export interface CallOptions extends ActivityOptions {
  waitsOnCancel?: boolean;
}

/** A local call has no heartbeat (a crashed worker is noticed by its workflow task's timeout); otherwise as its policy. */
function localOptions({ heartbeatTimeout: _none, waitsOnCancel, ...options }: CallOptions): LocalActivityOptions {
  return waitsOnCancel ? { ...options, cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED } : options;
}

/**
 * Makes the engine's activity calls: locally (src/engine/local-calls.ts) while the run's calls are
 * fast, else as regular activities; either way with the run's state by reference. Each call comes back with
 * the time the worker took for it, recorded in history with the result, so the choice is the same
 * on replay and on the worker that takes over after a crash.
 */
export class Caller {
  readonly sender = new StateSender();
  /** How long the latest call of each kind took (calls of one kind are alike: memory writes, model calls). */
  readonly #lastCallMs = new Map<string, number | null>();
  /** `lastCallMs`: how long the caller's own last call took, when it is known (a parent's or the session's previous run's). */
  constructor(
    private readonly localCalls: boolean,
    lastCallMs: number | null = null,
  ) {
    this.#lastCallMs.set(DEFAULT_KIND, lastCallMs);
  }

  /** How long the latest call of the default kind took, as its worker measured it (null before the first, or after a failure). */
  get lastCallMs(): number | null {
    return this.#lastCallMs.get(DEFAULT_KIND) ?? null;
  }

  /** Called right before a regular activity is scheduled (it ends the workflow task), a local call's hand-over included. */
  beforeRegularCall: () => void = () => undefined;

  async call(activity: string, input: unknown, options: CallOptions, summary = options.summary ?? activity, kind = DEFAULT_KIND): Promise<unknown> {
    const call = this.start(activity, input, options, summary, kind);
    let value: unknown;
    try {
      value = await call.pending;
    } catch (err) {
      throw this.failure(call, err);
    }
    const settled = this.settle(call, value);
    return settled === HANDED_OVER ? this.handOver(call) : settled;
  }

  /**
   * Makes the call (its command is given at once, as `call` gives it) and returns it in flight: `pending` is
   * the SDK's own promise, with nothing chained to it — each promise a workflow makes costs a stack trace
   * in the SDK's sandbox, and a plan step awaits one call. After it, `settle` its value (or pass a failure
   * through `failure`); HANDED_OVER means the local call handed over and `handOver` makes the regular one.
   */
  start(activity: string, input: unknown, options: CallOptions, summary = options.summary ?? activity, kind = DEFAULT_KIND): CallInFlight {
    const local = this.localCalls && runsLocally(this.#lastCallMs.get(kind) ?? null);
    // A failed call leaves the next one to a regular activity.
    this.#lastCallMs.set(kind, null);
    const call: { -readonly [K in keyof CallInFlight]: CallInFlight[K] } = {
      activity,
      input,
      options,
      summary,
      kind,
      local,
      key: undefined,
      handedOver: false,
      wholeState: false,
      resent: false,
      pending: undefined as unknown as Promise<unknown>,
    };
    if (local) {
      // By reference too: this worker has the base unless it just took the run over (then it answers NeedsState).
      const calls = proxyLocalActivities<Record<string, (input: unknown) => Promise<unknown>>>({ ...localOptions(options), summary });
      call.pending = calls[activity]!(callInput(byReference(input, this.sender)));
    } else call.pending = this.#remote(call);
    return call;
  }

  /** A call's failure as callers handle it: a local call's arrives unwrapped, and becomes the ActivityFailure a regular call's is. */
  failure(call: CallInFlight, err: unknown): unknown {
    if (!call.local || err instanceof ActivityFailure || isCancellation(err) || !(err instanceof TemporalFailure)) return err;
    const final = err instanceof ApplicationFailure && (err.nonRetryable || call.options.retry?.nonRetryableErrorTypes?.includes(err.type ?? ''));
    return new ActivityFailure(err.message, call.activity, undefined, final ? 'NON_RETRYABLE_FAILURE' : 'MAXIMUM_ATTEMPTS_REACHED', undefined, err);
  }

  /** The call's result from what `pending` gave: unwrapped and its time recorded, or HANDED_OVER by a local call. */
  settle(call: CallInFlight, value: unknown): unknown {
    if (call.local && !call.handedOver) {
      const answer = isTimed(value) ? value.value : value;
      if (isDeferred(answer)) {
        call.key = answer.key;
        call.handedOver = true;
        return HANDED_OVER;
      }
      if (isNeedsState(answer) && !call.wholeState) {
        call.key = answer.key;
        call.wholeState = true;
        return HANDED_OVER;
      }
    }
    if (!isTimed(value)) return value; // an activity from before calls were timed (replay)
    this.#lastCallMs.set(call.kind, value.ms);
    return value.value;
  }

  /**
   * What a local call handed over to (`settle` gave HANDED_OVER), settled: the same call made locally again
   * with the run's whole state when its worker had not the state before it, else the regular activity.
   */
  async handOver(call: CallInFlight): Promise<unknown> {
    if (call.wholeState && !call.resent) {
      call.resent = true;
      const whole = this.sender.resendWhole();
      const calls = proxyLocalActivities<Record<string, (input: unknown) => Promise<unknown>>>({ ...localOptions(call.options), summary: call.summary });
      let value: unknown;
      try {
        value = await calls[call.activity]!(callInput(withStateRef(call.input, whole), call.key));
      } catch (err) {
        throw this.failure(call, err);
      }
      const settled = this.settle(call, value);
      return settled === HANDED_OVER ? this.handOver(call) : settled;
    }
    return this.settle(call, await this.#remote(call));
  }

  #remote(call: CallInFlight): Promise<unknown> {
    this.beforeRegularCall();
    // A regular call is not waited for when cancelled: it learns of it only at its next heartbeat.
    const { waitsOnCancel: _localOnly, ...remoteOptions } = call.options;
    const remote = proxyActivities<Record<string, (input: unknown) => Promise<unknown>>>({ ...remoteOptions, summary: call.summary });
    return remote[call.activity]!(callInput(byReference(call.input, this.sender), call.key));
  }
}

/** `Caller.settle`'s answer for a local call that handed over to a regular activity. */
export const HANDED_OVER: unique symbol = Symbol('handed over');

/** A call made by `Caller.start`, until it is settled. */
export interface CallInFlight {
  readonly activity: string;
  readonly input: unknown;
  readonly options: CallOptions;
  readonly summary: string;
  readonly kind: string;
  /** Whether it was made as a local activity (a hand-over then goes on as a regular one). */
  readonly local: boolean;
  /** The local call's idempotency key the call goes on under, once it handed over or is made again. */
  key: string | undefined;
  /** It handed over to a regular activity. */
  handedOver: boolean;
  /** Its worker had not the run's previous state: it is made again locally with the whole state (`resent` once it is). */
  wholeState: boolean;
  resent: boolean;
  readonly pending: Promise<unknown>;
}

/** An activity input with its `state` replaced by a reference (the worker's interceptor restores it). */
function byReference(input: unknown, sender: StateSender): unknown {
  if (typeof input !== 'object' || input === null || !('state' in input)) return input;
  return withStateRef(input, sender.send(input.state));
}

/** `input` with `ref` in place of its `state` (as it is when it has none, or there is no ref). */
function withStateRef(input: unknown, ref: StateRef | null): unknown {
  if (typeof input !== 'object' || input === null || !('state' in input) || ref === null) return input;
  const { state: _state, ...rest } = input;
  return { ...rest, stateRef: ref };
}
