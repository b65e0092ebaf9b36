/**
 * `GET /v1/runs/:runId/events`: a run's ExecutionState as Server-Sent Events.
 * The workflow is polled by query (cheap: one query per poll), and a `state`
 * event goes out whenever `version` grows; `done` follows once the run ends.
 * Live tokens (`token`, `token_reset`) are pushed as the API's token hub hears
 * them (src/api/token-hub.ts), from the point `Last-Event-ID` names.
 */
import type { Response } from 'express';
import type { Logger } from 'pino';
import { isTerminal, type ExecutionState } from '../planning/execution-state';
import { RunNotFoundError, type Runs } from '../temporal/runs';
import { pollEventStream, type SendEvent, type SseTiming } from './sse';
import type { TokenHub } from './token-hub';

/** Timing of event streams. */
export type RunEventsOptions = SseTiming;

export interface RunEventsDeps {
  runs: Pick<Runs, 'get'> & Partial<Pick<Runs, 'ownerOf' | 'getIfMoved'>>;
  logger: Logger;
  /** Aborted when the server shuts down: open streams end so it can close. */
  shutdown?: AbortSignal;
  /** Live tokens; none without it. */
  tokens?: TokenHub;
}

/**
 * How an event stream reads the runs it follows: a run's state when its history grew since this reader last
 * read it, else null — its state changes only in its workflow tasks, so polls in between query nothing.
 * Without `getIfMoved` (a caller's stand-in for Runs), every read is a `get`.
 */
export function runStateReader(runs: Pick<Runs, 'get'> & Partial<Pick<Runs, 'getIfMoved'>>): (runId: string) => Promise<ExecutionState | null> {
  const seenHistory = new Map<string, number>();
  return async (runId) => {
    if (!runs.getIfMoved) return runs.get(runId);
    const moved = await runs.getIfMoved(runId, seenHistory.get(runId));
    seenHistory.set(runId, moved.historyLength);
    return moved.state;
  };
}

export async function streamRunEvents(deps: RunEventsDeps, runId: string, res: Response, options: RunEventsOptions = {}, lastEventId?: string): Promise<void> {
  // Checked before any header goes out, so an unknown run is an ordinary JSON 404, not a stream. With live
  // tokens, by the server's description (no worker involved): a query waits while the run's local call runs,
  // and the stream must be open by then to carry that call's tokens.
  let state: ExecutionState | undefined;
  if (deps.tokens && deps.runs.ownerOf) {
    if ((await deps.runs.ownerOf(runId)) === null) throw new RunNotFoundError(runId);
  } else {
    state = await deps.runs.get(runId);
  }
  let sentVersion = -1;
  const read = runStateReader(deps.runs);
  const { tokens } = deps;
  const onOpen = tokens ? (send: SendEvent) => tokens.watch({ runId }, lastEventId, (e) => send(e.event, e.data, e.id)) : undefined;
  await pollEventStream(res, { ...options, logger: deps.logger, shutdown: deps.shutdown, context: { runId }, ...(onOpen ? { onOpen } : {}) }, async (send) => {
    if (state === undefined) {
      try {
        const fresh = await read(runId);
        if (fresh === null) return true; // nothing happened in the run since the last poll
        state = fresh;
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
      tokens?.mark(`run:${runId}:${current.version}`);
      sentVersion = current.version;
    }
    if (isTerminal(current.status)) {
      send('done', current, current.version);
      return false;
    }
    return true;
  });
}
