/**
 * How workflows make activity calls: locally while a workflow's calls are fast, else as regular
 * activities (src/engine/local-calls.ts), with a run's state passed by reference to regular ones
 * (src/engine/state-ref.ts). Shared by the run engine and the session.
 */
import { ActivityFailure, ApplicationFailure, isCancellation, proxyActivities, proxyLocalActivities, TemporalFailure, type ActivityOptions, type LocalActivityOptions } from '@temporalio/workflow';
import { isDeferred, runsLocally } from '../engine/local-calls';
import { StateSender } from '../engine/state-ref';

/** A local call has no heartbeat (a crashed worker is noticed by its workflow task's timeout); otherwise as its policy. */
function localOptions({ heartbeatTimeout: _none, ...options }: ActivityOptions): LocalActivityOptions {
  return options;
}

/**
 * Makes the engine's activity calls: locally (src/engine/local-calls.ts) while the run's calls are
 * fast, else as regular activities with the run's state by reference. Measures each call in
 * workflow time, which replay reproduces, so the choice is deterministic.
 */
export class Caller {
  readonly sender = new StateSender();
  #lastCallMs: number | null = null;
  constructor(private readonly localCalls: boolean) {}

  async call(activity: string, input: unknown, options: ActivityOptions, summary = options.summary ?? activity): Promise<unknown> {
    const started = Date.now();
    try {
      let remoteInput = input;
      if (this.localCalls && runsLocally(this.#lastCallMs)) {
        // The whole state goes along: a local call's input never enters history.
        const local = proxyLocalActivities<Record<string, (input: unknown) => Promise<unknown>>>({ ...localOptions(options), summary });
        const value = await local[activity]!(input).catch((err: unknown) => {
          // A local call's failure arrives unwrapped; callers handle activity failures as ActivityFailure, local or not.
          if (err instanceof ActivityFailure || isCancellation(err) || !(err instanceof TemporalFailure)) throw err;
          const final = err instanceof ApplicationFailure && (err.nonRetryable || options.retry?.nonRetryableErrorTypes?.includes(err.type ?? ''));
          throw new ActivityFailure(err.message, activity, undefined, final ? 'NON_RETRYABLE_FAILURE' : 'MAXIMUM_ATTEMPTS_REACHED', undefined, err);
        });
        if (!isDeferred(value)) return value;
        remoteInput = value.resume === undefined ? input : { ...(input as object), resume: value.resume };
      }
      const remote = proxyActivities<Record<string, (input: unknown) => Promise<unknown>>>({ ...options, summary });
      return await remote[activity]!(byReference(remoteInput, this.sender));
    } finally {
      this.#lastCallMs = Date.now() - started;
    }
  }
}

/** Activities shaped like `proxyActivities<A>(options)`'s, each call made through `caller`. */
export function callsThrough<A extends object>(caller: Caller, options: ActivityOptions): A {
  return new Proxy({}, { get: (_target, name) => (input: unknown) => caller.call(String(name), input, options) }) as A;
}

/** An activity input with its `state` replaced by a reference (the worker's interceptor restores it). */
function byReference(input: unknown, sender: StateSender): unknown {
  if (typeof input !== 'object' || input === null || !('state' in input)) return input;
  const { state, ...rest } = input;
  return { ...rest, stateRef: sender.send(state) };
}

