/**
 * `GET /v1/runs/:runId/events`: a run's ExecutionState as Server-Sent Events.
 * The workflow is polled by query (cheap: one query per poll), and a `state`
 * event goes out whenever `version` grows; `done` follows once the run ends.
 */
import type { Response } from 'express';
import type { Logger } from 'pino';
import { isTerminal, type ExecutionState } from '../planning/execution-state';
import { RunNotFoundError, type Runs } from '../temporal/runs';
import { pollEventStream, type SseTiming } from './sse';

/** Timing of event streams. */
export type RunEventsOptions = SseTiming;

export interface RunEventsDeps {
  runs: Pick<Runs, 'get'>;
  logger: Logger;
  /** Aborted when the server shuts down: open streams end so it can close. */
  shutdown?: AbortSignal;
}

export async function streamRunEvents(deps: RunEventsDeps, runId: string, res: Response, options: RunEventsOptions = {}): Promise<void> {
  // Read once before any header goes out, so an unknown run is an ordinary JSON 404, not a stream.
  let state: ExecutionState | undefined = await deps.runs.get(runId);
  let sentVersion = -1;
  await pollEventStream(res, { ...options, logger: deps.logger, shutdown: deps.shutdown, context: { runId } }, async (send) => {
    if (state === undefined) {
      try {
        state = await deps.runs.get(runId);
      } catch (err) {
        if (err instanceof RunNotFoundError) return false;
        throw err; // Temporal or the worker may be briefly unavailable: retried at the next poll
      }
    }
    const current = state;
    state = undefined; // read afresh at the next poll
    // Only ever forward: a client sees strictly increasing versions.
    if (current.version > sentVersion) {
      send('state', current, current.version);
      sentVersion = current.version;
    }
    if (isTerminal(current.status)) {
      send('done', current, current.version);
      return false;
    }
    return true;
  });
}
