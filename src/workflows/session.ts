/**
 * AgentSessionWorkflow — one per (user, session): a long-lived entity workflow that routes each
 * message (command, reply to a waiting run, retry, new run), keeps chatHistory and TaskState, and
 * owns the session's memory thread (its runs' closing calls add their answers). The session is an
 * engine over the core (src/engine/session-engine.ts): it holds the state and takes every decision,
 * and the loop every run runs on (src/workflows/run-engine.ts) carries them out — memory calls,
 * cancellations, replies, run starts. This file wires the messages and the session's lifetime: what
 * the next event is (a message, a report, the idle timeout, the hand-over) and how the workflow ends.
 * Messages and run reports are handled one at a time, in arrival order (the safe-message-handlers
 * pattern).
 */
import { allHandlersFinished, ApplicationFailure, condition, continueAsNew, patched, setHandler, sleep, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import { handingOver, handOverDue, SESSION_ENDED, SessionEngine, type SessionEvent } from '../engine/session-engine';
import { holdsUser, SESSION_ID_ATTR, USER_ID_ATTR, userIdAttribute } from './definitions';
import { Caller } from './calls';
import { runEngine } from './run-engine';
import { getSessionQuery, HANDING_OVER, runReportSignal, sendMessageUpdate, type MessageOutcome, type SessionInput } from './session-definitions';

export { CAPABILITIES_CHANGED, NOTHING_TO_RETRY, SESSION_ENDED } from '../engine/session-engine';

/**
 * Patch id of today's session code: compression runs after the sender's answer, and the hand-over
 * happens as soon as no message waits, carrying queued run reports to the next run.
 */
const SESSION_V2 = 'session-v2';
/** Patch id of `/state` read from the session thread (before, the workflow kept its own copy of the conversation). */
const STATE_FROM_THREAD = 'session-state-from-thread';
/** Patch id of a conversation that can end (`/end`, DELETE, idle timeout) and hand its promotion on. */
const SESSION_END = 'session-end';
/** Patch id of sessions whose short calls run as local activities (src/workflows/calls.ts). */
const LOCAL_CALLS = 'local-calls';
/** Patch id of sessions that start their runs from an activity (src/activities/run-starts.ts), not as child workflows. */
const RUNS_STARTED_BY_ACTIVITY = 'runs-started-by-activity';
/** Patch id of sessions whose idle timeout is one timer per idle stretch, not a timer started and cancelled per message. */
const IDLE_TIMER_ONCE = 'idle-timer-once';
/** Patch id of sessions that ask whether a message sent while runs wait is a reply or a new request (seed 000's routing). */
const ROUTE_BY_MODEL = 'route-by-model';
/** A message waiting for its answer (the update's handler returns it). */
interface Pending {
  done: boolean;
  outcome: MessageOutcome | null;
  failure: string | null;
}

export async function agentSessionWorkflow(input: SessionInput): Promise<void> {
  const { sessionId, userId } = input;
  // Reports queued at the last hand-over come first, before any that arrive now.
  const inbox: SessionEvent[] = (input.pendingReports ?? []).map((report) => ({ kind: 'report', report }));
  /** The messages taken and not yet answered, by their id in the inbox. */
  const pending = new Map<number, Pending>();
  let messages = 0;
  /** The history length at which the hand-over fell due; null while it is not due. */
  let dueSince: number | null = null;
  // Sessions started before each change replay the branch they took (SessionPatches).
  const v2 = patched(SESSION_V2);
  const endable = patched(SESSION_END);
  const caller = new Caller(patched(LOCAL_CALLS));
  const startsByActivity = patched(RUNS_STARTED_BY_ACTIVITY);
  const idleTimerOnce = patched(IDLE_TIMER_ONCE);
  const judges = patched(ROUTE_BY_MODEL);
  const session = new SessionEngine(input, { v2, endable, startsByActivity, judges, stateFromThread: () => patched(STATE_FROM_THREAD) });
  setHandler(getSessionQuery, () => session.published);
  const { idleTimeoutMs } = session;
  /**
   * The idle timeout's one timer: armed when the session falls idle, left running through messages (a
   * timer started and cancelled per message is two history events and two server timer tasks each); when
   * it fires, the session ends only if nothing came for `idleTimeoutMs`, else it is armed for the rest.
   */
  let lastActive = Date.now();
  let idleTimerArmed = false;
  let idleTimerFired = false;
  const armIdleTimer = () => {
    if (idleTimerArmed) return;
    idleTimerArmed = true;
    sleep(Math.max(1, lastActive + idleTimeoutMs - Date.now())).then(
      () => {
        idleTimerArmed = false;
        idleTimerFired = true;
      },
      () => undefined, // cancelled with the session
    );
  };
  /**
   * Whether a message was answered in the workflow task now running (anything that arrives begins a new
   * task). Temporal refuses a task that continues as new if a message or report arrives while it runs, and
   * with it the answers given in it (their senders get an error): such a task is ended first, and the
   * hand-over comes in the next one. (Reports handled in a refused task are safe: the task runs again with
   * them in the same order.)
   */
  let answeredInTask = false;
  setHandler(runReportSignal, (report) => {
    answeredInTask = false;
    session.received(report);
    inbox.push({ kind: 'report', report });
  });
  setHandler(
    sendMessageUpdate,
    async ({ text, engine }) => {
      answeredInTask = false;
      const id = messages++;
      const item: Pending = { done: false, outcome: null, failure: null };
      pending.set(id, item);
      inbox.push({ kind: 'message', id, text, ...(engine ? { engine } : {}) });
      await condition(() => item.done);
      pending.delete(id);
      if (item.outcome === null) throw ApplicationFailure.nonRetryable(item.failure ?? 'the message could not be handled', 'MessageFailed');
      return item.outcome;
    },
    {
      validator: (message: { text: string }) => {
        if (typeof message?.text !== 'string' || message.text.trim() === '') throw new Error('a message needs a non-empty "text"');
        if (session.ended !== null) throw new Error(SESSION_ENDED);
        if (handingOver(session.handOver, dueSince, workflowInfo().historyLength)) {
          throw ApplicationFailure.retryable('the session is handing over to a new run; send the message again in a moment', HANDING_OVER);
        }
      },
    },
  );

  const info = workflowInfo();
  if (info.typedSearchAttributes.get(SESSION_ID_ATTR) !== sessionId || !holdsUser(info.typedSearchAttributes.get(USER_ID_ATTR), userId)) {
    upsertSearchAttributes([userIdAttribute(userId), { key: SESSION_ID_ATTR, value: sessionId }]);
  }

  // Continue-as-new once the history is long — but only with no message queued and no handler running,
  // so every accepted message is answered by this run; later ones reach the next run. Queued run reports
  // are plain data and go along with the state. If no such moment comes within the grace, the validator
  // turns new messages away until one does.
  const due = () => handOverDue(session.handOver, workflowInfo());
  const canHandOver = () => due() && allHandlersFinished() && (v2 ? inbox.every((i) => i.kind === 'report') : inbox.length === 0);
  /** The session's next event: what the inbox holds first, or the idle timeout, or the hand-over once it can be made. */
  async function nextEvent(): Promise<SessionEvent> {
    for (;;) {
      if (dueSince === null && due()) dueSince = workflowInfo().historyLength;
      const ready = () => inbox.length > 0 || canHandOver();
      // Idle with nothing open (no run works or waits for the person): the conversation ends.
      if (endable && idleTimeoutMs > 0 && !session.hasOpenRuns) {
        if (idleTimerOnce) {
          armIdleTimer();
          await condition(() => ready() || idleTimerFired);
          if (!ready()) {
            idleTimerFired = false;
            if (Date.now() - lastActive < idleTimeoutMs) continue; // not idle that long yet: armed again for the rest
            return { kind: 'idle' };
          }
        } else if (!(await condition(ready, idleTimeoutMs))) {
          return { kind: 'idle' };
        }
      } else {
        await condition(ready);
      }
      if (canHandOver()) {
        if (!startsByActivity || !answeredInTask) return { kind: 'hand_over' };
        // End this task: the next begins with whatever arrives (a message is then taken at once) or, if nothing does, a timer.
        await condition(() => !answeredInTask, 1);
        answeredInTask = false;
        continue;
      }
      const event = inbox.shift();
      if (!event) return { kind: 'hand_over' };
      lastActive = Date.now();
      return event;
    }
  }

  await runEngine(session, {
    userId,
    current: true,
    eventsWhileBusy: false,
    inbox,
    caller,
    awaitPerson: nextEvent,
    answer: (to, result) => {
      const item = pending.get(to);
      if (!item) return;
      if ('outcome' in result) item.outcome = result.outcome as MessageOutcome;
      else item.failure = result.failure;
      item.done = true;
      answeredInTask = true;
    },
  });

  if (session.ended !== null) {
    // Messages that were queued behind the end are answered with it.
    for (const event of inbox.splice(0)) {
      const item = event.kind === 'message' ? pending.get(event.id) : undefined;
      if (!item) continue;
      item.failure = SESSION_ENDED;
      item.done = true;
    }
    await condition(allHandlersFinished);
    return;
  }

  return continueAsNew<typeof agentSessionWorkflow>(session.carry(inbox.flatMap((i) => (i.kind === 'report' ? [i.report] : []))));
}
