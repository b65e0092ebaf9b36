/**
 * AgentSessionWorkflow — one per (user, session): a long-lived entity workflow that routes each
 * message (command, reply to a waiting run, retry, new run), keeps chatHistory and TaskState, and
 * owns the session's memory thread (its runs' closing calls add their answers). The session is an
 * engine (src/engine/session-engine.ts): it holds the state and takes every decision; this file only
 * carries them out — memory calls, cancellations, replies, run starts — and wires the messages.
 * Messages and run reports are handled one at a time, in arrival order, by one loop (the
 * safe-message-handlers pattern).
 */
import {
  ActivityFailure,
  allHandlersFinished,
  ApplicationFailure,
  CancellationScope,
  condition,
  continueAsNew,
  getExternalWorkflowHandle,
  ParentClosePolicy,
  patched,
  setHandler,
  sleep,
  startChild,
  TemporalFailure,
  upsertSearchAttributes,
  workflowInfo,
  type ActivityOptions,
} from '@temporalio/workflow';
import { CallFailed, handingOver, handOverDue, SESSION_ENDED, SessionEngine, type SessionCommand, type SessionStep } from '../engine/session-engine';
import { holdsUser, runMemo, runSearchAttributes, SESSION_ID_ATTR, USER_ID_ATTR, userIdAttribute, WORKFLOW_TASK_TIMEOUT } from './definitions';
import { Caller } from './calls';
import { planExecutionWorkflow } from './plan-execution';
import { sendReply } from './replies';
import { getSessionQuery, HANDING_OVER, runReportSignal, sendMessageUpdate, type MessageOutcome, type SessionInput } from './session-definitions';
import type { RunReport, SessionCalls } from '../engine/contract';
import type { EngineChoice } from '../engine/run-inputs';

export { CAPABILITIES_CHANGED, NOTHING_TO_RETRY, SESSION_ENDED } from '../engine/session-engine';

/** Memory writes: quick, retried through a short outage of the store. */
const MEMORY: ActivityOptions = {
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '500 milliseconds', backoffCoefficient: 2, maximumInterval: '10 seconds', maximumAttempts: 8 },
};
/** The summary model call: like the planner's calls. */
const SUMMARY: ActivityOptions = {
  startToCloseTimeout: '5 minutes',
  heartbeatTimeout: '10 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds', maximumAttempts: 5, nonRetryableErrorTypes: ['InvalidModelReply', 'ModelRequestRefused'] },
};
const SUMMARY_CALL: ActivityOptions = { ...SUMMARY, summary: 'task_state_summary: compress older turns into the task state' };
/** The routing call: on the person's path, so short and tried twice; without an answer the message stays a reply. */
const ROUTE_CALL: ActivityOptions = {
  ...SUMMARY,
  startToCloseTimeout: '30 seconds',
  retry: { ...SUMMARY.retry, maximumAttempts: 2 },
  summary: 'message_route: a reply to a waiting run, or a new request?',
};

/** A message answering a held tool call: a model call for an edit in words, then the decision sent to the run. */
const APPROVAL_CALL: ActivityOptions = {
  ...SUMMARY,
  startToCloseTimeout: '2 minutes',
  retry: { ...SUMMARY.retry, maximumAttempts: 3 },
  summary: 'approval: a message answers a tool call held for approval',
};

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
/** How each of the session's calls is made: its options, and the kind whose speed decides whether the next such call is local. */
const CALLS: Record<keyof SessionCalls, { options: ActivityOptions; kind: string }> = {
  openSession: { options: MEMORY, kind: 'memory' },
  recordTurns: { options: MEMORY, kind: 'memory' },
  readSession: { options: MEMORY, kind: 'memory' },
  clearSession: { options: MEMORY, kind: 'memory' },
  endSession: { options: MEMORY, kind: 'memory' },
  // Memory writes and the summary model are timed apart: fast writes say nothing of the model's speed.
  compressHistory: { options: SUMMARY_CALL, kind: 'summary' },
  judgeMessage: { options: ROUTE_CALL, kind: 'route' },
  answerApproval: { options: APPROVAL_CALL, kind: 'approval' },
};

/** The innermost message of a failure: an activity's own reason rather than "Activity task failed". */
const rootMessage = (err: Error): string => (err.cause instanceof Error ? rootMessage(err.cause) : err.message);

/** Failed activities and run starts (an id already taken included) — not bugs in this code. */
const isExpectedFailure = (err: unknown): err is TemporalFailure => err instanceof TemporalFailure;

/** A command's failure as the engine takes it; anything but an expected failure is a bug in workflow code, thrown on (it fails the workflow task). */
function callFailed(err: unknown): CallFailed {
  if (!isExpectedFailure(err)) throw err;
  return new CallFailed(rootMessage(err), err instanceof ActivityFailure);
}

type InboxItem = { kind: 'message'; text: string; engine?: EngineChoice; done: boolean; outcome: MessageOutcome | null; failure: string | null } | { kind: 'report'; report: RunReport };

export async function agentSessionWorkflow(input: SessionInput): Promise<void> {
  const { sessionId, userId } = input;
  // Reports queued at the last hand-over come first, before any that arrive now.
  const inbox: InboxItem[] = (input.pendingReports ?? []).map((report) => ({ kind: 'report', report }));
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
      const item: InboxItem = { kind: 'message', text, ...(engine ? { engine } : {}), done: false, outcome: null, failure: null };
      inbox.push(item);
      await condition(() => item.done);
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

  /** Carries out one of the engine's commands and returns what it answers. */
  async function perform(command: SessionCommand): Promise<unknown> {
    switch (command.kind) {
      case 'call': {
        const { options, kind } = CALLS[command.activity];
        return caller.call(command.activity, command.input, options, undefined, kind);
      }
      case 'cancel_runs':
        return CancellationScope.nonCancellable(() =>
          Promise.all(
            command.runIds.map((id) =>
              getExternalWorkflowHandle(id)
                .cancel()
                .catch(() => undefined),
            ),
          ),
        );
      case 'relay_reply':
        return sendReply(command).then(
          () => true,
          () => false,
        );
      case 'start_run':
        return startChild(planExecutionWorkflow, {
          workflowId: command.workflowId,
          workflowTaskTimeout: WORKFLOW_TASK_TIMEOUT,
          args: [command.input],
          staticSummary: command.summary,
          memo: runMemo(command.input.goal),
          typedSearchAttributes: runSearchAttributes(userId, 'planning', sessionId),
          // Runs outlive the session's continue-as-new; they report back to the session by its id.
          parentClosePolicy: ParentClosePolicy.ABANDON,
        });
      case 'queue_report':
        inbox.push({ kind: 'report', report: command.report });
        return undefined;
    }
  }

  /** Drives one of the engine's flows to its end: each command carried out in order, its result (or failure) handed back. */
  async function drive<T>(flow: SessionStep<T>): Promise<T> {
    let next = flow.next();
    while (!next.done) {
      let value: unknown;
      try {
        value = await perform(next.value);
      } catch (err) {
        const failed = callFailed(err);
        try {
          next = flow.throw(failed);
        } catch (thrown) {
          // Not handled by the engine: the failure itself goes on (a cancellation still cancels the session).
          throw thrown === failed ? err : thrown;
        }
        continue;
      }
      next = flow.next(value);
    }
    return next.value;
  }

  await drive(session.open());

  // Continue-as-new once the history is long — but only with no message queued and no handler running,
  // so every accepted message is answered by this run; later ones reach the next run. Queued run reports
  // are plain data and go along with the state. If no such moment comes within the grace, the validator
  // turns new messages away until one does.
  const due = () => handOverDue(session.handOver, workflowInfo());
  const canHandOver = () => due() && allHandlersFinished() && (v2 ? inbox.every((i) => i.kind === 'report') : inbox.length === 0);
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
          await drive(session.end('idle'));
          session.publish();
          break;
        }
      } else if (!(await condition(ready, idleTimeoutMs))) {
        await drive(session.end('idle'));
        session.publish();
        break;
      }
    } else {
      await condition(ready);
    }
    if (canHandOver()) {
      if (!startsByActivity || !answeredInTask) break;
      // End this task: the next begins with whatever arrives (a message is then taken at once) or, if nothing does, a timer.
      await condition(() => !answeredInTask, 1);
      answeredInTask = false;
      continue;
    }
    const item = inbox.shift();
    if (!item) break;
    lastActive = Date.now();
    if (item.kind === 'report') {
      await drive(session.onReport(item.report));
    } else {
      try {
        item.outcome = await drive(session.onMessage(item.text, item.engine));
      } catch (err) {
        // A failed activity or run start answers this message with an error; anything else is a bug here.
        if (!isExpectedFailure(err)) throw err;
        item.failure = rootMessage(err);
      }
      item.done = true;
      answeredInTask = true;
    }
    session.publish();
    if (session.ended !== null) break;
    // After the answer: a slow summary model (a regular activity, which ends this task) delays only the next
    // message. A quick one runs locally in this task, and the update's answer goes out when the task completes.
    if (item.kind === 'message' && v2 && (await drive(session.compress()))) session.publish();
  }

  if (session.ended !== null) {
    // Messages that were queued behind the end are answered with it.
    for (const item of inbox.splice(0)) {
      if (item.kind !== 'message') continue;
      item.failure = SESSION_ENDED;
      item.done = true;
    }
    await condition(allHandlersFinished);
    return;
  }

  return continueAsNew<typeof agentSessionWorkflow>(session.carry(inbox.flatMap((i) => (i.kind === 'report' ? [i.report] : []))));
}
