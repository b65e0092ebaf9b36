/**
 * The baselines of the session benchmark: turns of a Threadline session's Temporal shape, with
 * nothing else — a long-lived workflow takes each message as an update and, in one local activity,
 * starts the turn's workflow through the worker's client (eager start); that workflow makes one local
 * activity call and ends.
 *  - `report: true`, the **bare turn**: the call signals the first workflow (the run's report). Three
 *    workflow tasks and two local calls per turn, as Threadline's (whose run plans, answers and closes
 *    in one call): what Temporal itself costs for Threadline's shape.
 *  - `report: false`, the **floor**: no report, so two workflow tasks — a message's update and its run,
 *    the least a turn can be while each run is its own workflow (DESIGN.md §2).
 * Workflow code only: bundled by the benchmark's second worker (bench/session.ts).
 */
import { condition, defineSignal, defineUpdate, proxyLocalActivities, setHandler } from '@temporalio/workflow';

export interface BareTurn {
  sessionId: string;
  turn: number;
  /** Whether the turn's call signals the session (the bare turn) or not (the floor). */
  report: boolean;
}

export interface BareSessionActivities {
  /** Starts the turn's workflow on this worker's queue (eager start); returns its id. */
  startTurn(turn: BareTurn): Promise<string>;
  /** The run's one call: signals the turn's end to its session when the turn reports. */
  reportTurn(turn: BareTurn): Promise<void>;
}

/** A message: its argument says whether its turn reports back. */
export const bareMessageUpdate = defineUpdate<string, [boolean]>('bareMessage');
export const bareReportSignal = defineSignal<[number]>('bareReport');

const local = proxyLocalActivities<BareSessionActivities>({ startToCloseTimeout: '1 minute' });

/** The session: a message starts a turn; a report is counted. Runs until it is terminated. */
export async function bareSessionWorkflow(sessionId: string): Promise<void> {
  let turns = 0;
  let reports = 0;
  setHandler(bareMessageUpdate, (report) => local.startTurn({ sessionId, turn: ++turns, report }));
  setHandler(bareReportSignal, () => {
    reports++;
  });
  await condition(() => reports < 0);
}

/** The turn: one local call (a plan, answer and close's), which signals the session if the turn reports. */
export async function bareTurnWorkflow(turn: BareTurn): Promise<number> {
  await local.reportTurn(turn);
  return turn.turn;
}
