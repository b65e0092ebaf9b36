/**
 * The worker's side of local calls (src/engine/local-calls.ts). A local call's result reaches
 * history only when its workflow task completes; a worker that dies first leaves the task to
 * time out, and the next worker runs every local call of that task again. So each local call's
 * result is journaled under its idempotency key before it is returned, and a call run again
 * returns the journaled result: the model is not asked twice, a tool does not run twice, and the
 * workflow takes the same path it took the first time. A `DeferToActivity` thrown by the call
 * becomes its `Deferred` result here.
 */
import type { ActivityInterceptorsFactory } from '@temporalio/worker';
import { deferredResult, DeferToActivity } from '../engine/local-calls';
import type { KeyValueStore } from '../store/kv';
import { idempotencyKeyOf } from './heartbeat';

const JOURNAL = 'local-call-journal';

export function localJournalInterceptor(store: KeyValueStore): ActivityInterceptorsFactory {
  return (ctx) => ({
    inbound: {
      async execute(input, next) {
        if (!ctx.info.isLocal) return next(input);
        const key = idempotencyKeyOf(ctx.info);
        const done = await store.get<{ value: unknown }>(JOURNAL, key);
        if (done) return done.value;
        let value: unknown;
        try {
          value = await next(input);
        } catch (err) {
          if (!(err instanceof DeferToActivity)) throw err;
          value = deferredResult(err.resume);
        }
        await store.put(JOURNAL, key, { value });
        return value;
      },
    },
  });
}
