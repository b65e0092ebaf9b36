/**
 * `GET /v1/runs/:runId/events`: a run's ExecutionState as Server-Sent Events.
 * The workflow is polled by query (cheap: one query per poll), and a `state`
 * event goes out whenever `version` grows; `done` follows once the run ends.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Response } from 'express';
import type { Logger } from 'pino';
import { isTerminal, type ExecutionState } from '../planning/execution-state';
import { RunNotFoundError, type Runs } from '../temporal/runs';

export interface RunEventsOptions {
  /** How often the run is read. @default 250 */
  pollMs?: number;
  /** Interval of the keep-alive comment that stops proxies from closing an idle stream. @default 15000 */
  heartbeatMs?: number;
}

export interface RunEventsDeps {
  runs: Pick<Runs, 'get'>;
  logger: Logger;
  /** Aborted when the server shuts down: open streams end so it can close. */
  shutdown?: AbortSignal;
}

export async function streamRunEvents(deps: RunEventsDeps, runId: string, res: Response, options: RunEventsOptions = {}): Promise<void> {
  const pollMs = options.pollMs ?? 250;
  const heartbeatMs = options.heartbeatMs ?? 15_000;
  // Read once before any header goes out, so an unknown run is an ordinary JSON 404, not a stream.
  let state: ExecutionState = await deps.runs.get(runId);

  res.status(200).set({
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache, no-transform',
    connection: 'keep-alive',
    'x-accel-buffering': 'no', // nginx would otherwise hold events back
  });
  res.flushHeaders();
  res.socket?.setNoDelay(true);

  const stop = new AbortController();
  const end = () => stop.abort();
  res.on('close', end); // the client went away
  deps.shutdown?.addEventListener('abort', end, { once: true });
  if (deps.shutdown?.aborted) end();
  const write = (chunk: string) => {
    if (!res.destroyed && !res.writableEnded) res.write(chunk);
  };
  const heartbeat = setInterval(() => write(': heartbeat\n\n'), heartbeatMs);
  const send = (event: 'state' | 'done', data: ExecutionState) =>
    write(`event: ${event}\nid: ${data.version}\ndata: ${JSON.stringify(data)}\n\n`);

  let sentVersion = -1;
  let failing = false;
  try {
    for (;;) {
      // Only ever forward: a client sees strictly increasing versions.
      if (state.version > sentVersion) {
        send('state', state);
        sentVersion = state.version;
      }
      if (isTerminal(state.status)) {
        send('done', state);
        break;
      }
      try {
        await sleep(pollMs, undefined, { signal: stop.signal });
      } catch {
        break; // aborted: client gone or server closing
      }
      try {
        state = await deps.runs.get(runId);
        if (stop.signal.aborted) break;
        failing = false;
      } catch (err) {
        if (err instanceof RunNotFoundError) break;
        // Temporal or the worker may be briefly unavailable: keep the stream and retry; log once per outage.
        if (!failing) deps.logger.warn({ err, runId }, 'reading the run for its event stream failed; retrying');
        failing = true;
      }
    }
  } finally {
    clearInterval(heartbeat);
    res.off('close', end);
    deps.shutdown?.removeEventListener('abort', end);
    if (!res.writableEnded) res.end();
  }
}
