/**
 * The worker's side of passing a run's state by reference (src/engine/state-ref.ts): an activity
 * interceptor that turns an input's `stateRef` back into `state` before the activity runs, from
 * the last state this worker saw for the run, or — on a retry elsewhere, after a restart, or when
 * the cache let it go — from the run itself (a query).
 */
import { ApplicationFailure } from '@temporalio/common';
import type { ActivityInterceptorsFactory } from '@temporalio/worker';
import { StateNotHere } from '../engine/local-calls';
import { hasStateRef, resolveStateRef, SENT_STATE_QUERY, type SentState } from '../engine/state-ref';

/** The last state each run sent, for the runs this worker served most recently. */
export class StateCache {
  readonly #entries = new Map<string, SentState>();
  constructor(private readonly capacity = 2_000) {}

  get(key: string): SentState | undefined {
    const entry = this.#entries.get(key);
    if (entry) {
      // Least recently used goes first: touch on read.
      this.#entries.delete(key);
      this.#entries.set(key, entry);
    }
    return entry;
  }

  set(key: string, entry: SentState): void {
    this.#entries.delete(key);
    this.#entries.set(key, entry);
    if (this.#entries.size > this.capacity) this.#entries.delete(this.#entries.keys().next().value as string);
  }

  get size(): number {
    return this.#entries.size;
  }
}

export function stateRefInterceptor(cache: StateCache): ActivityInterceptorsFactory {
  return (ctx) => ({
    inbound: {
      async execute(input, next) {
        const [arg, ...others] = input.args;
        if (!hasStateRef(arg)) return next(input);
        const run = ctx.info.workflowExecution;
        if (!run) throw ApplicationFailure.nonRetryable('a state reference outside a workflow', 'StaleStateRef');
        const key = `${run.workflowId}/${run.runId}`;
        let sent = resolveStateRef(cache.get(key), arg.stateRef);
        // A local call runs inside its run's open workflow task, which could not answer the query: the run sends its whole state instead.
        if (!sent && ctx.info.isLocal) throw new StateNotHere();
        if (!sent) {
          const asked = await ctx.client.workflow.getHandle(run.workflowId, run.runId).query<SentState | null>(SENT_STATE_QUERY);
          // Only the run's latest call can be resolved; an older one was left behind (cancelled).
          if (asked && asked.seq > arg.stateRef.seq) {
            throw ApplicationFailure.nonRetryable(`call ${arg.stateRef.seq} of ${run.workflowId} is no longer the run's latest (${asked.seq})`, 'StaleStateRef');
          }
          if (!asked || asked.seq !== arg.stateRef.seq) throw ApplicationFailure.retryable(`run ${run.workflowId} has not caught up with call ${arg.stateRef.seq} yet`, 'StateNotReady');
          sent = asked;
        }
        cache.set(key, sent);
        const { stateRef: _ref, ...rest } = arg;
        return next({ ...input, args: [{ ...rest, state: sent.state }, ...others] });
      },
    },
  });
}
