/**
 * `GET /v1/sessions/:sessionId/events`: everything that happens in a session,
 * as Server-Sent Events. `event: session` carries the SessionView whenever its
 * version grows; `event: run` carries a run's ExecutionState whenever it
 * changes, for every run of the session that has not finished — and, once,
 * the final state of each run that finishes while the stream is open. Both
 * come from polling; a session or run is queried only when its history grew
 * (nothing else changes its state). The stream lasts as long as the client stays.
 */
import type { Response } from 'express';
import type { Logger } from 'pino';
import { isTerminal } from '../planning/execution-state';
import { FINISHED } from '../sessions/session-model';
import { RunNotFoundError, type Runs } from '../temporal/runs';
import { SessionNotFoundError, type SeenSession, type Sessions } from '../temporal/sessions';
import type { SessionView } from '../workflows/session-definitions';
import { runStateReader } from './run-events';
import { pollEventStream, type SendEvent, type SseTiming } from './sse';
import type { TokenHub } from './token-hub';

export interface SessionEventsDeps {
  sessions: Pick<Sessions, 'get'>;
  runs: Pick<Runs, 'get'> & Partial<Pick<Runs, 'getIfMoved'>>;
  logger: Logger;
  /** Aborted when the server shuts down: open streams end so it can close. */
  shutdown?: AbortSignal;
  /** Live tokens of the session's runs (`token`, `token_reset`); none without it. */
  tokens?: TokenHub;
}

export async function streamSessionEvents(deps: SessionEventsDeps, sessionId: string, res: Response, timing: SseTiming = {}, lastEventId?: string): Promise<void> {
  // Read once before any header goes out, so an unknown session is an ordinary JSON 404, not a stream.
  const seen: SeenSession = {};
  let view: SessionView | undefined = await deps.sessions.get(sessionId, seen);
  // Runs that had finished before the client came are history (their outcome is in the view), not events.
  const done = new Set(view.runs.filter((r) => FINISHED.includes(r.status)).map((r) => r.runId));
  const sentRunVersion = new Map<string, number>();
  let sentVersion = -1;

  const readRun = runStateReader(deps.runs);

  const { tokens } = deps;
  const onOpen = tokens ? (send: SendEvent) => tokens.watch({ sessionId }, lastEventId, (e) => send(e.event, e.data, e.id)) : undefined;
  await pollEventStream(res, { ...timing, logger: deps.logger, shutdown: deps.shutdown, context: { sessionId }, ...(onOpen ? { onOpen } : {}) }, async (send) => {
    if (view === undefined) {
      try {
        view = await deps.sessions.get(sessionId, seen);
      } catch (err) {
        if (err instanceof SessionNotFoundError) return false;
        throw err; // Temporal or the worker may be briefly unavailable: retried at the next poll
      }
    }
    const current = view;
    view = undefined; // read afresh at the next poll
    if (current.version > sentVersion) {
      send('session', current, `session:${current.version}`);
      tokens?.mark(`session:${sessionId}:${current.version}`);
      sentVersion = current.version;
    }
    // A run the session no longer lists (after /clear) is no longer followed.
    for (const run of current.runs) {
      if (done.has(run.runId)) continue;
      let state;
      try {
        state = await readRun(run.runId);
      } catch (err) {
        if (err instanceof RunNotFoundError) continue; // reported by the session before its workflow starts
        throw err;
      }
      if (state === null) continue; // its history has not grown since the last read: nothing changed
      if (state.version > (sentRunVersion.get(run.runId) ?? -1)) {
        send('run', state, `${run.runId}:${state.version}`);
        tokens?.mark(`run:${run.runId}:${state.version}`);
        sentRunVersion.set(run.runId, state.version);
      }
      if (isTerminal(state.status)) {
        done.add(run.runId);
        sentRunVersion.delete(run.runId);
      }
    }
    return true;
  });
}
