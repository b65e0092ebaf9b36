/**
 * The baseline of the session benchmark: a turn of the same shape as a Threadline session's, with
 * nothing else — a long-lived workflow takes each message as an update and, in one local activity,
 * starts the turn's workflow through the worker's client (eager start); that workflow makes one local
 * activity call, which signals the first workflow, and ends. Three workflow tasks and two local calls
 * per turn, as Threadline's (whose run plans, answers and closes in one call): what Temporal itself
 * costs per turn. Workflow code only: bundled by the benchmark's second worker (bench/session.ts).
 */
import { condition, defineSignal, defineUpdate, proxyLocalActivities, setHandler } from '@temporalio/workflow';

export interface BareTurn {
  sessionId: string;
  turn: number;
}

export interface BareSessionActivities {
  /** Starts the turn's workflow on this worker's queue (eager start); returns its id. */
  startTurn(turn: BareTurn): Promise<string>;
  /** Signals the turn's end to its session. */
  reportTurn(turn: BareTurn): Promise<void>;
}

export const bareMessageUpdate = defineUpdate<string, [string]>('bareMessage');
export const bareReportSignal = defineSignal<[number]>('bareReport');

const local = proxyLocalActivities<BareSessionActivities>({ startToCloseTimeout: '1 minute' });

/** The session: a message starts a turn; a report is counted. Runs until it is terminated. */
export async function bareSessionWorkflow(sessionId: string): Promise<void> {
  let turns = 0;
  let reports = 0;
  setHandler(bareMessageUpdate, () => local.startTurn({ sessionId, turn: ++turns }));
  setHandler(bareReportSignal, () => {
    reports++;
  });
  await condition(() => reports < 0);
}

/** The turn: one local call (a plan, answer and close's), which signals the session. */
export async function bareTurnWorkflow(turn: BareTurn): Promise<number> {
  await local.reportTurn(turn);
  return turn.turn;
}
