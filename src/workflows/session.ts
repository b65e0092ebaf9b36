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
import { emptyTaskState, HELP_TEXT, type Route, type RouteJudgement, type Turn } from '../sessions/session-model';
import { renderSessionState } from '../sessions/session-state';
import { handingOver, handOverDue, NOTHING_TO_RETRY, SESSION_ENDED, SessionEngine } from '../engine/session-engine';
import { runMemo, runSearchAttributes, SESSION_ID_ATTR, USER_ID_ATTR, WORKFLOW_TASK_TIMEOUT } from './definitions';
import { Caller, callsThrough } from './calls';
import { planExecutionWorkflow } from './plan-execution';
import { sendReply } from './replies';
import { getSessionQuery, HANDING_OVER, runReportSignal, sendMessageUpdate, type MessageOutcome, type SessionInput } from './session-definitions';
import type { PlanExecutionInput, RunReport, SessionCalls } from '../engine/contract';
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
/** Failed activities and run starts (an id already taken included) — not bugs in this code. */
const isExpectedFailure = (err: unknown): err is TemporalFailure => err instanceof TemporalFailure;
/** The innermost message of a failure: an activity's own reason rather than "Activity task failed". */
const rootMessage = (err: Error): string => (err.cause instanceof Error ? rootMessage(err.cause) : err.message);

type InboxItem = { kind: 'message'; text: string; engine?: EngineChoice; done: boolean; outcome: MessageOutcome | null; failure: string | null } | { kind: 'report'; report: RunReport };

export async function agentSessionWorkflow(input: SessionInput): Promise<void> {
  const { sessionId, userId, threadId } = input;
  const session = new SessionEngine(input);
  const { limits, idleTimeoutMs } = session;
  /** The history length at which the hand-over fell due; null while it is not due. */
  let dueSince: number | null = null;
  // Reports queued at the last hand-over come first, before any that arrive now.
  const inbox: InboxItem[] = (input.pendingReports ?? []).map((report) => ({ kind: 'report', report }));
  const now = () => new Date();
  setHandler(getSessionQuery, () => session.published);
  // Sessions started before this change compress before answering and hand over with an empty queue;
  // replaying them must do the same.
  const v2 = patched(SESSION_V2);
  const endable = patched(SESSION_END);
  const caller = new Caller(patched(LOCAL_CALLS));
  const startsByActivity = patched(RUNS_STARTED_BY_ACTIVITY);
  const idleTimerOnce = patched(IDLE_TIMER_ONCE);
  const judges = patched(ROUTE_BY_MODEL);
  // Memory writes and the summary model are timed apart: fast writes say nothing of the model's speed.
  const memory = callsThrough<SessionCalls>(caller, MEMORY, 'memory');
  const summary = callsThrough<SessionCalls>(caller, SUMMARY_CALL, 'summary');
  const routing = callsThrough<SessionCalls>(caller, ROUTE_CALL, 'route');
  const approvals = callsThrough<SessionCalls>(caller, APPROVAL_CALL, 'approval');
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
  if (info.typedSearchAttributes.get(SESSION_ID_ATTR) !== sessionId || info.typedSearchAttributes.get(USER_ID_ATTR) !== userId) {
    upsertSearchAttributes([
      { key: USER_ID_ATTR, value: userId },
      { key: SESSION_ID_ATTR, value: sessionId },
    ]);
  }

  /** Runs the session no longer wants: cancelled whoever their parent is now (they outlive continue-as-new). */
  async function cancelRuns(ids: string[]): Promise<void> {
    await CancellationScope.nonCancellable(() =>
      Promise.all(
        ids.map((id) =>
          getExternalWorkflowHandle(id)
            .cancel()
            .catch(() => undefined),
        ),
      ),
    );
  }

  /**
   * A change of model, prompts or tools makes plans that wait for the person stale (seed 000's workflow
   * versioning): they are cancelled at once, and the conversation says why. (Runs that execute find it
   * out themselves at their next step.)
   */
  async function noticeCapabilities(current: string): Promise<boolean> {
    const stale = session.capabilitiesNow(current);
    if (stale.length === 0) return false;
    await cancelRuns(stale.map((r) => r.runId));
    await remember(session.cancelledStale(stale, now()));
    return true;
  }

  /** Adds turns to the memory thread (and their estimates to the window); `key` names them (src/activities/session-turns.ts). */
  async function remember(newTurns: Turn[], key?: string): Promise<string | null> {
    session.remembered(newTurns.map((t) => t.text));
    try {
      const { capabilities: current } = await memory.recordTurns({ sessionId, threadId, turns: newTurns, ...(key ? { key } : {}) });
      return current;
    } catch (err) {
      // The conversation goes on; the thread misses these turns.
      if (err instanceof ActivityFailure) return null;
      throw err;
    }
  }

  /**
   * Seed 000's compression: older turns folded into TaskState once the window or token threshold is passed.
   * The activity reads the turns and TaskState from the thread, so only their sizes pass through history.
   */
  async function maybeCompress(): Promise<boolean> {
    if (!session.needsCompression) return false;
    try {
      session.compressed((await summary.compressHistory(session.compression())).window);
      return true;
    } catch (err) {
      // Without a summary the window stays as it is (capped by maxTurns); the next turn tries again.
      if (!(err instanceof ActivityFailure)) throw err;
      return false;
    }
  }

  /** Starts the run of a message whose turn `remember` already recorded (sessions from before RUNS_STARTED_BY_ACTIVITY). */
  async function startRun(goal: string, engine: EngineChoice): Promise<string> {
    const runId = session.listRun(goal, engine, now());
    try {
      await startAsChild(runId, session.runInput(goal, engine), session.runSummary(goal));
    } catch (err) {
      throw notStarted(runId, err);
    }
    return runId;
  }

  /** Marks a listed run failed when its start failed as expected (an activity or start failure); returns `err` to throw. */
  function notStarted(runId: string, err: unknown): unknown {
    if (isExpectedFailure(err)) session.notStarted(runId, rootMessage(err));
    return err;
  }

  /**
   * Records the person's turn and starts the run it asks for, in one call of the session (usually local):
   * no child-start round trip, and the run's first task runs on this worker at once (eager start).
   * Returns the worker's capabilities, as `remember` does. Runs report back to the session by its id.
   */
  async function rememberAndStart(turn: Turn, goal: string, engine: EngineChoice): Promise<string> {
    const runId = session.listRun(goal, engine, now());
    session.remembered([turn.text]);
    try {
      const start = { runId, input: session.runInput(goal, engine), summary: session.runSummary(goal) };
      const { capabilities: current, ended } = await memory.recordTurns({ sessionId, threadId, turns: [turn], start });
      // Handled again after a replay, the message found its run already ended: its report came when the session did not know the run.
      if (ended) inbox.push({ kind: 'report', report: ended });
      return current;
    } catch (err) {
      throw notStarted(runId, err);
    }
  }

  /** How sessions recorded before RUNS_STARTED_BY_ACTIVITY started their runs (replayed as they ran). */
  async function startAsChild(runId: string, runInput: PlanExecutionInput, summary: string): Promise<void> {
    await startChild(planExecutionWorkflow, {
      workflowId: runId,
      workflowTaskTimeout: WORKFLOW_TASK_TIMEOUT,
      args: [runInput],
      staticSummary: summary,
      memo: runMemo(runInput.goal),
      typedSearchAttributes: runSearchAttributes(userId, 'planning', sessionId),
      // Runs outlive the session's continue-as-new; they report back to the session by its id.
      parentClosePolicy: ParentClosePolicy.ABANDON,
    });
  }

  async function command(route: Extract<Route, { kind: 'command' }>): Promise<MessageOutcome> {
    switch (route.command) {
      case '/help':
        return { kind: 'command', reply: HELP_TEXT };
      case '/state': {
        // What the thread holds now: a rollback or a person's edit of it shows here.
        const conversation = patched(STATE_FROM_THREAD) ? await memory.readSession({ threadId, maxTurns: limits.maxTurns }) : { chatHistory: [], taskState: emptyTaskState() };
        return { kind: 'command', reply: renderSessionState({ ...conversation, runs: session.runs, turns: session.turns }) };
      }
      case '/clear': {
        const { cancelled, reply } = session.clear();
        await cancelRuns(cancelled);
        session.cleared();
        await memory.clearSession({ sessionId, threadId, cancelledRuns: cancelled });
        return { kind: 'command', reply };
      }
      case '/end':
        if (!endable) return { kind: 'command', reply: SessionEngine.unknownCommand(route) };
        return { kind: 'command', reply: SessionEngine.endReply(await end('/end')) };
      case 'unknown':
        return { kind: 'command', reply: SessionEngine.unknownCommand(route) };
    }
  }

  /**
   * Ends the conversation: its unfinished runs are cancelled, its TaskState kept as the user's, its
   * promotion handed to long-term memory (endSession). Returns how many runs were cancelled.
   */
  async function end(reason: string): Promise<number> {
    const cancelled = session.toEnd();
    await cancelRuns(cancelled);
    session.endedWith(reason, cancelled);
    try {
      await memory.endSession({ sessionId, threadId, reason });
    } catch (err) {
      // The conversation ends anyway; only its promotion is missed.
      if (!(err instanceof ActivityFailure)) throw err;
    }
    return cancelled.length;
  }

  /** Seed 000's routing, asked of the model when the engine needs it; no judgement (the call failed): a reply. */
  async function judge(text: string): Promise<RouteJudgement | undefined> {
    const request = judges ? session.judgement(text) : null;
    if (!request) return undefined;
    try {
      return await routing.judgeMessage(request);
    } catch (err) {
      if (!(err instanceof ActivityFailure)) throw err;
      return undefined;
    }
  }

  async function onMessage(text: string, asked?: EngineChoice): Promise<MessageOutcome> {
    session.took();
    const judged = await judge(text);
    const first = session.route(text, judged);
    if (first.kind === 'command') return command(first);
    const turn = session.userTurn(first, text, now());
    if (startsByActivity && (first.kind === 'new_run' || first.kind === 'retry')) {
      // Nothing waits for the person (else the message would be a reply), so a change of capabilities cancels nothing here.
      const engine = session.engineFor(first, asked);
      if (first.kind === 'retry') session.forget(first.runId);
      const runId = session.nextRunId();
      await noticeCapabilities(await rememberAndStart(turn, first.goal, engine));
      return { kind: first.kind, runId };
    }
    const current = await remember([turn]);
    if (current !== null) await noticeCapabilities(current);
    // Routed after the capability check: a reply to a run cancelled just now starts afresh instead.
    const route = session.route(text, judged);
    let outcome: MessageOutcome;
    switch (route.kind) {
      case 'command': // unreachable: commands were answered above
      case 'nothing_to_retry':
        outcome = { kind: 'command', reply: NOTHING_TO_RETRY };
        break;
      case 'reply': {
        let delivered = true;
        await sendReply(session.reply(route)).catch(() => (delivered = false));
        outcome = session.replied(route.runId, delivered);
        break;
      }
      case 'approval':
        outcome = await answerApproval(route);
        break;
      case 'retry': {
        // The failed run is reset: forgotten here, its goal runs again as a new run.
        const engine = session.engineFor(route, asked);
        session.forget(route.runId);
        outcome = { kind: 'retry', runId: await startRun(route.goal, engine) };
        break;
      }
      case 'new_run':
        outcome = { kind: 'new_run', runId: await startRun(route.goal, session.engineFor(route, asked)) };
        break;
    }
    if (!v2) await maybeCompress();
    return outcome;
  }

  /**
   * A message to a run that waits for a tool call's approval (issue 28): its decision (approve, reject
   * with feedback, or an edit in words the `approval_edit` call turns into arguments) goes to the run as
   * `POST /v1/runs/:runId/approval` would send it. An edit that does not fit the tool leaves the call
   * waiting, and the person is told why (in the answer and in the conversation).
   */
  async function answerApproval(route: Extract<Route, { kind: 'approval' }>): Promise<MessageOutcome> {
    const request = session.approvalRequest(route);
    if (!('pending' in request)) return request;
    const { runId } = request;
    let reply: string;
    try {
      const result = await approvals.answerApproval(request);
      const outcome = session.approvalAnswered(runId, result);
      if (outcome) return outcome;
      reply = result.reply;
    } catch (err) {
      if (!(err instanceof ActivityFailure)) throw err;
      reply = `Your answer could not be delivered (${rootMessage(err)}); the call still waits for your approval.`;
    }
    await remember([{ role: 'assistant', text: reply, at: now().toISOString(), runId }]);
    return { kind: 'reply', runId, reply };
  }

  async function onReport(report: RunReport): Promise<void> {
    const added = session.report(report, now());
    // Shown before the turn reaches the thread (which the view reads at once): a view with the answer shows its run done.
    session.publish();
    if (!added) return;
    // A `recorded` turn was added to the thread by the call that closed the run: only its estimate is kept here.
    if (!('recorded' in added)) {
      const current = await remember([added.turn], added.key);
      if (current !== null) await noticeCapabilities(current);
    }
    await maybeCompress();
  }

  const opened = await memory.openSession({ sessionId, userId, threadId, first: input.carried === undefined });
  if (await noticeCapabilities(opened.capabilities)) session.publish();

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
          await end('idle');
          session.publish();
          break;
        }
      } else if (!(await condition(ready, idleTimeoutMs))) {
        await end('idle');
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
      await onReport(item.report);
    } else {
      try {
        item.outcome = await onMessage(item.text, item.engine);
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
    if (item.kind === 'message' && v2 && (await maybeCompress())) session.publish();
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
