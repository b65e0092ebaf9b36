/**
 * The worker's side of the workflows' calls (src/workflows/calls.ts, src/engine/local-calls.ts):
 *  - a call that asks is timed, and its result goes back with how long it took of its own (the
 *    share of a busy worker's time its other calls took is not counted: call-clock.ts), which
 *    decides whether the workflow's next call runs locally;
 *  - a local call's result reaches history only when its workflow task completes, and a worker
 *    that dies first leaves the task to time out: the next worker runs the task's local calls
 *    again. So a local call's result is journaled under its idempotency key before it is
 *    returned, and a call run again returns the journaled result: the model is not asked twice,
 *    a tool does not run twice, and the workflow takes the path it took the first time;
 *  - a `DeferToActivity` thrown by a local call becomes its `Deferred` result, and the regular
 *    activity that takes it over runs under the local call's idempotency key (`idempotencyKey()`);
 *    a `StateNotHere` becomes `NeedsState` (not journaled: nothing was done), and the workflow makes the
 *    call again, locally, with its whole state and under the same key.
 */
import type { ActivityInterceptorsFactory } from '@temporalio/worker';
import { deferredResult, DeferToActivity, isNeedsState, needsStateResult, StateNotHere, takeCallInput, timedResult } from '../engine/local-calls';
import { JOURNALS, type KeyValueStore } from '../store/kv';
import { CallClock } from './call-clock';
import { idempotencyKeyOf, withCallKey } from './heartbeat';

const JOURNAL = JOURNALS.calls;

export function callsInterceptor(store: KeyValueStore, clock = new CallClock()): ActivityInterceptorsFactory {
  return (ctx) => ({
    inbound: {
      async execute(request, next) {
        const [first, ...others] = request.args;
        const { input, timed, key: handedOver } = takeCallInput(first);
        const local = ctx.info.isLocal;
        const key = handedOver ?? idempotencyKeyOf(ctx.info);
        if (local) {
          const done = await store.get<{ value: unknown }>(JOURNAL, key);
          if (done) return done.value;
        }
        const stop = clock.start();
        let value: unknown;
        let ms: number;
        try {
          value = await withCallKey(key, () => next({ ...request, args: [input, ...others] }));
        } catch (err) {
          if (local && err instanceof StateNotHere) value = needsStateResult(key);
          else if (local && err instanceof DeferToActivity) value = deferredResult(key);
          else throw err;
        } finally {
          ms = stop();
        }
        // A call that did nothing (its worker had not the state) is not journaled: made again under its key, it must run.
        const journaled = local && !isNeedsState(value);
        if (timed) value = timedResult(value, Math.round(ms));
        if (journaled) await store.put(JOURNAL, key, { value });
        return value;
      },
    },
  });
}
