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
import { callInput, isDeferred, isTimed, runsLocally } from '../engine/local-calls';
import { StateSender } from '../engine/state-ref';

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
    const local = this.localCalls && runsLocally(this.#lastCallMs.get(kind) ?? null);
    // A failed call leaves the next one to a regular activity.
    this.#lastCallMs.set(kind, null);
    const value = await this.#call(local, activity, input, options, summary);
    if (!isTimed(value)) return value; // an activity from before calls were timed (replay)
    this.#lastCallMs.set(kind, value.ms);
    return value.value;
  }

  async #call(local: boolean, activity: string, input: unknown, options: CallOptions, summary: string): Promise<unknown> {
    let key: string | undefined;
    if (local) {
      // By reference too: this worker has the base unless it just took the run over (then the call hands over).
      const calls = proxyLocalActivities<Record<string, (input: unknown) => Promise<unknown>>>({ ...localOptions(options), summary });
      const value = await calls[activity]!(callInput(byReference(input, this.sender))).catch((err: unknown) => {
        // A local call's failure arrives unwrapped; callers handle activity failures as ActivityFailure, local or not.
        if (err instanceof ActivityFailure || isCancellation(err) || !(err instanceof TemporalFailure)) throw err;
        const final = err instanceof ApplicationFailure && (err.nonRetryable || options.retry?.nonRetryableErrorTypes?.includes(err.type ?? ''));
        throw new ActivityFailure(err.message, activity, undefined, final ? 'NON_RETRYABLE_FAILURE' : 'MAXIMUM_ATTEMPTS_REACHED', undefined, err);
      });
      const deferred = isTimed(value) ? value.value : value;
      if (!isDeferred(deferred)) return value;
      key = deferred.key;
    }
    this.beforeRegularCall();
    // A regular call is not waited for when cancelled: it learns of it only at its next heartbeat.
    const { waitsOnCancel: _localOnly, ...remoteOptions } = options;
    const remote = proxyActivities<Record<string, (input: unknown) => Promise<unknown>>>({ ...remoteOptions, summary });
    return remote[activity]!(callInput(byReference(input, this.sender), key));
  }
}

/** An activity input with its `state` replaced by a reference (the worker's interceptor restores it). */
function byReference(input: unknown, sender: StateSender): unknown {
  if (typeof input !== 'object' || input === null || !('state' in input)) return input;
  const { state, ...rest } = input;
  return { ...rest, stateRef: sender.send(state) };
}
