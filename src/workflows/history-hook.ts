/**
 * Where a run's engine hands out each version of its state while a run is replayed to show its
 * history (GET /v1/runs/:runId/history): set only by `history-interceptors`, which only the
 * history replayer's bundle holds. In a worker it is absent, and a run pays nothing for it.
 */
import type { ExecutionState } from '../planning/execution-state';

export type StateObserver = (state: ExecutionState) => void;

interface WithObserver {
  __threadlineStateObserver?: StateObserver;
}

/** The observer the replayer installed, or undefined (always, in a worker). */
export const stateObserver = (): StateObserver | undefined => (globalThis as WithObserver).__threadlineStateObserver;

/** Installed by the history replayer's interceptor module, before the workflow function runs. */
export function installStateObserver(observer: StateObserver): void {
  (globalThis as WithObserver).__threadlineStateObserver = observer;
}
