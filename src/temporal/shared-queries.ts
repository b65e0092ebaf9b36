/**
 * One query at a time for a workflow at one history length: callers that ask at once (event streams,
 * reads of a run or session) share it and get the same answer, since a workflow's state changes only in
 * its workflow tasks and each task adds events. Two query tasks of one workflow at once are also what the
 * worker's core can lose a run to (src/telemetry/core-faults.ts).
 */
export class SharedQueries {
  readonly #inFlight = new Map<string, Promise<unknown>>();

  /** `query()`'s answer, shared with whoever asks for `workflowId` at `historyLength` while it is under way. */
  ask<T>(workflowId: string, historyLength: number, query: () => Promise<T>): Promise<T> {
    const key = `${workflowId}@${historyLength}`;
    const inFlight = this.#inFlight.get(key);
    if (inFlight) return inFlight as Promise<T>;
    const asked = query().finally(() => this.#inFlight.delete(key));
    this.#inFlight.set(key, asked);
    return asked;
  }
}
