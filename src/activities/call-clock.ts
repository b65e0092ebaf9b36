/**
 * How long a call took of its own, which decides whether a workflow's next call runs locally
 * (src/engine/local-calls.ts). Its wall time alone would say "slow" whenever the worker is busy:
 * fifty calls in flight on one event loop each take fifty times their own CPU, the workflows then
 * make their calls as regular activities, each costing a workflow task more, which makes the worker
 * busier still. So the time the event loop spent running JavaScript during the call is shared out
 * among the calls in flight, and only this call's share counts with the time the loop waited (for
 * a model's reply, a tool, a store).
 */
import { performance } from 'node:perf_hooks';

/**
 * A call's own time: `wallMs` less the part of `busyMs` (the event loop's running time during the call)
 * that the other calls in flight took, with `inFlight` calls on average, this one included.
 */
export function ownCallMs(wallMs: number, busyMs: number, inFlight: number): number {
  const busy = Math.min(Math.max(busyMs, 0), wallMs);
  return Math.max(0, wallMs - busy * (1 - 1 / Math.max(1, inFlight)));
}

/** Times calls as `ownCallMs` counts them; one per worker process (the event loop is the process's). */
export class CallClock {
  #inFlight = 0;

  /** Starts timing a call; the function returned stops it and gives its own time in ms. */
  start(): () => number {
    const inFlightAtStart = ++this.#inFlight;
    const loopAtStart = performance.eventLoopUtilization();
    const startedAt = performance.now();
    let stopped = false;
    return () => {
      const wallMs = performance.now() - startedAt;
      const { active } = performance.eventLoopUtilization(loopAtStart);
      // Calls that came and went while it ran are not counted: the mean of both ends is a fair guess.
      const inFlight = (inFlightAtStart + this.#inFlight) / 2;
      if (!stopped) this.#inFlight--;
      stopped = true;
      return ownCallMs(wallMs, active, inFlight);
    };
  }
}
