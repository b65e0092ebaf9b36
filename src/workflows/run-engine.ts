/**
 * Carries out an engine's commands (src/engine/core.ts) with Temporal: activities, child runs,
 * waits for a person, search attributes, reports to the parent, a session's run starts and
 * answers. The engine decides; this file only does, so every engine (planner, task tree,
 * session) runs on the same loop.
 *
 * Commands of one batch are carried out synchronously and in order, then the last one is
 * awaited: the order of commands in history is the engine's order, which replay relies on.
 */
import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  ChildWorkflowCancellationType,
  ChildWorkflowFailure,
  condition,
  defineQuery,
  executeChild,
  getExternalWorkflowHandle,
  isCancellation,
  ParentClosePolicy,
  patched,
  startChild,
  TemporalFailure,
  setCurrentDetails,
  setHandler,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import type { PlanActivities } from '../activities/plan-activities';
import { TERMINAL_STATUSES } from '../planning/execution-state';
import { isBlocking, withoutCloseOnAnswer, type ActivityMap, type CallCommand, type Command, type Engine, type EngineEvent } from '../engine/core';
import { SENT_STATE_QUERY, type SentState } from '../engine/state-ref';
import { Caller, HANDED_OVER, type CallInFlight } from './calls';
import { CALL_POLICIES, MODEL_CALL } from './call-policies';
import type { ExecutionState } from '../planning/execution-state';
import { PLAN_WORKFLOW_TYPE, runMemo, runSearchAttributes, STATUS_ATTR, withRunFeatures, WORKFLOW_TASK_TIMEOUT, type PlanExecutionWorkflow } from './definitions';
import { runReportSignal } from './session-definitions';
import { sendReply } from './replies';
import type { CloseRunCall, CloseRunInput, ClosedRun, ParentNotice } from '../engine/contract';

/** Runs recorded before runs closed their memory at every end did not call `closeRun`; replaying them must not. */
const CLOSE_RUN_PATCH = 'close-run';
/** Runs recorded before short calls ran as local activities made every call a regular one; replaying them must too. */
const LOCAL_CALLS_PATCH = 'local-calls';
const ENDINGS: readonly string[] = TERMINAL_STATUSES;
/** A readable reason from an activity or child failure, for `lastError`. */
function describeFailure(err: ActivityFailure | ChildWorkflowFailure): string {
  let cause: Error | undefined = err.cause;
  while (cause?.cause instanceof Error && !(cause instanceof ApplicationFailure)) cause = cause.cause;
  const detail = cause?.message ?? err.message;
  return err instanceof ActivityFailure && err.retryState === 'MAXIMUM_ATTEMPTS_REACHED' ? `${detail} (gave up after ${MODEL_CALL.retry?.maximumAttempts ?? '?'} attempts)` : detail;
}
/** The innermost message of a failure: an activity's own reason rather than "Activity task failed". */
const rootMessage = (err: Error): string => (err.cause instanceof Error ? rootMessage(err.cause) : err.message);

export interface RunEngineOptions<S, Person> {
  userId: string;
  /** Whether the run has today's features (RUN_FEATURES_PATCH: in its input, or `patched` when the workflow began). */
  current: boolean;
  /**
   * Whether a person's event can reach the engine while a call or child run is in flight (a tree's skip or
   * redo): always, or only while a child run is (its question, src/engine/relay.ts).
   */
  eventsWhileBusy: boolean | 'children';
  /** What the Web UI shows as the workflow's current details, after every batch. */
  details?: (state: S) => string;
  /** Events delivered by message handlers (a reply); `await_person` waits for the first. */
  inbox: Person[];
  /** How long the last call of whoever started the run took (PlanExecutionInput.lastCallMs). */
  lastCallMs?: number | null;
  /** The workflow's own caller (a session makes its with the patches it was recorded with); else one for a run. */
  caller?: Caller;
  /** How `await_person` waits (a session's: also for its idle timeout and hand-over); else for the inbox's first event. */
  awaitPerson?: () => Promise<Person>;
  /** Carries out an `answer`: the reply to a person's message (a Temporal update) the engine took. */
  answer?: (to: number, result: { outcome: unknown } | { failure: string }) => void;
}

/**
 * Drives `engine` to its end and returns its final state. Failures of activities and children
 * become `failed` events, cancellation a `cancelled` event; anything else is a bug in workflow
 * code and fails the workflow task, so a fixed worker can carry on.
 */
export async function runEngine<S, A extends ActivityMap, Person>(engine: Engine<S, A, Person, ExecutionState>, options: RunEngineOptions<S, Person>): Promise<S> {
  let reports: Promise<void> = Promise.resolve();
  // Activities get the run's state as a patch against the previous call's (src/engine/state-ref.ts).
  const caller = options.caller ?? new Caller(options.current || patched(LOCAL_CALLS_PATCH), options.lastCallMs ?? null);
  /** The failure or cancellation the engine was last given as an event: thrown when the engine does not take it (`raise`). */
  let lastFailure: unknown;
  setHandler(defineQuery<SentState | null>(SENT_STATE_QUERY), () => caller.sender.last);
  let closing: CloseRunInput | undefined;
  /** The report of how the run ended, sent by the call that closes the run (`closeRun`), so the run can end in that task. */
  let finalReport: ParentNotice | undefined;
  const reportOnClose = options.current;
  /** Reports signalled but not yet delivered: a call's report of the run's end must not overtake them. */
  let unsentReports = 0;
  const signalReport = ({ parentId, report }: ParentNotice) => {
    // In order, and even while the run is being cancelled; a parent that no longer exists is ignored.
    unsentReports++;
    reports = reports.then(async () => {
      await CancellationScope.nonCancellable(() => getExternalWorkflowHandle(parentId).signal(runReportSignal, report)).catch(() => undefined);
      unsentReports--;
    });
  };
  /**
   * The status the search attribute should show, written when the workflow task ends: before a wait that
   * ends it (anything but a local call) and at the run's end. Every change within one task (a chain of local
   * calls) would reach the server at the same moment anyway, each a visibility write; only the last counts.
   */
  const statusOnce = options.current;
  let pendingStatus: string | null = null;
  const writeStatus = () => {
    if (pendingStatus !== null) upsertSearchAttributes([{ key: STATUS_ATTR, value: pendingStatus }]);
    pendingStatus = null;
  };
  caller.beforeRegularCall = writeStatus;
  /** Carries out the commands that do not wait, in order; returns the one that does. */
  const carryOut = (commands: Command<A, Person>[]): Command<A, Person> | undefined => {
    let waitOn: Command<A, Person> | undefined;
    for (const command of commands) {
      switch (command.kind) {
        case 'status':
          if (statusOnce) pendingStatus = command.status;
          else upsertSearchAttributes([{ key: STATUS_ATTR, value: command.status }]);
          break;
        case 'notify_parent': {
          const notice = { parentId: command.parentId, report: { ...command.report, lastCallMs: caller.lastCallMs } };
          if (reportOnClose && ENDINGS.includes(notice.report.status)) finalReport = notice;
          else signalReport(notice);
          break;
        }
        case 'relay_reply':
          if (command.confirm) waitOn = command;
          else reports = reports.then(() => CancellationScope.nonCancellable(() => sendReply(command)).catch(() => undefined));
          break;
        case 'answer':
          options.answer?.(command.to, 'outcome' in command ? { outcome: command.outcome } : { failure: command.failure });
          break;
        case 'enqueue':
          options.inbox.push(command.event);
          break;
        case 'raise':
          throw lastFailure;
        case 'close':
          closing = command.input;
          break;
        default:
          waitOn = command;
      }
    }
    if (options.details) setCurrentDetails(options.details(engine.state));
    return waitOn;
  };

  /**
   * Waits on `command` and returns the engine's next commands. A person's event arriving while an
   * activity or child run is in flight goes to the engine at once: if it answers with a new wait
   * (a skip of the task in flight, say), what was in flight is cancelled and left behind;
   * otherwise its changes are carried out and the wait goes on.
   */
  const waitOn = async (command: Command<A, Person>): Promise<Command<A, Person>[]> => {
    let event: EngineEvent<A, Person, ExecutionState>;
    try {
      if (command.kind !== 'call' && command.kind !== 'start_child') {
        // Waiting for a person: an event the engine takes aside (a skip elsewhere) leaves it waiting.
        for (;;) {
          const next = engine.handle(await perform(command, options, caller), new Date());
          if (next.some(isBlocking)) return next;
          carryOut(next);
        }
      } else if (!(options.eventsWhileBusy === true || (options.eventsWhileBusy === 'children' && command.kind === 'start_child'))) {
        // Nothing can reach the engine while this is in flight: no race to set up (each promise a workflow
        // makes costs a stack trace in the SDK's sandbox).
        event = await perform(command, options, caller);
      } else {
        const scope = new CancellationScope();
        const inFlight = scope.run(() => perform(command, options, caller));
        let settled = false;
        const done = inFlight.then(
          () => (settled = true),
          () => (settled = true),
        );
        for (;;) {
          // One condition wakes for either (no race: its promises each cost a stack trace in the SDK's sandbox).
          // Not cancellable: cancelling the workflow must reach the run through what is in flight, as before.
          await CancellationScope.nonCancellable(() => condition(() => settled || options.inbox.length > 0));
          if (settled) break;
          const person = options.inbox.shift() as Person;
          const next = engine.handle(person as EngineEvent<A, Person, ExecutionState>, new Date());
          if (next.some(isBlocking)) {
            scope.cancel();
            await done;
            return next;
          }
          carryOut(next);
        }
        event = await inFlight;
      }
    } catch (err) {
      event = failureEvent(command, err);
    }
    return engine.handle(event, new Date());
  };

  /** The engine's event for a command's failure or cancellation; anything else is thrown (a bug in workflow code). */
  const failureEvent = (command: Command<A, Person>, err: unknown): EngineEvent<A, Person, ExecutionState> => {
    lastFailure = err;
    const activity = err instanceof ActivityFailure;
    if (isCancellation(err)) return { kind: 'cancelled', reason: err instanceof Error ? rootMessage(err) : 'cancelled', activity };
    if (activity || err instanceof ChildWorkflowFailure) return { kind: 'failed', error: describeFailure(err), reason: rootMessage(err), activity };
    // A run start refused (its id taken): the engine says what becomes of it.
    if (command.kind === 'start_run' && err instanceof TemporalFailure) return { kind: 'failed', error: rootMessage(err), reason: rootMessage(err), activity: false };
    throw err;
  };

  /**
   * A call nothing can interrupt (no person's event reaches the engine while it runs), carried out here
   * rather than through `waitOn` and `perform`: the loop awaits the SDK's own promise and nothing else.
   * Every async function and every await is a promise, and each promise a workflow makes costs a stack
   * trace (with source-map lookups of every frame) in the SDK's sandbox; a plan step is this one call.
   */
  const callDirectly = (command: Command<A, Person>): command is CallCommand<A> => command.kind === 'call' && options.eventsWhileBusy !== true;

  let commands = engine.start(new Date());
  for (;;) {
    const next = carryOut(commands);
    if (!next || next.kind === 'end') break;
    // A call writes it if it is made as a regular activity (Caller.beforeRegularCall).
    if (next.kind !== 'call') writeStatus();
    const command = next.kind === 'call' && unsentReports > 0 ? withoutCloseOnAnswer(next) : next;
    if (!callDirectly(command)) {
      commands = await waitOn(command);
      continue;
    }
    const { options: callOptions, kind } = CALL_POLICIES[command.policy];
    let event: EngineEvent<A, Person, ExecutionState>;
    let call: CallInFlight | undefined;
    try {
      call = caller.start(command.activity, command.input, callOptions, command.summary, kind);
      let value = caller.settle(call, await call.pending);
      if (value === HANDED_OVER) {
        const handedOver = call;
        call = undefined; // the regular call's failure is its own, as it comes
        value = await caller.handOver(handedOver);
      }
      event = { kind: 'result', activity: command.activity, value } as EngineEvent<A, Person, ExecutionState>;
    } catch (err) {
      event = failureEvent(command, call ? caller.failure(call, err) : err);
    }
    commands = engine.handle(event, new Date());
  }
  writeStatus();
  if (closing && (options.current || patched(CLOSE_RUN_PATCH))) {
    // The final report goes after the earlier ones (a resumed run's 'running' must not arrive after its end).
    if (finalReport) await reports;
    const closed = await closeRun(closing, caller, finalReport);
    if (closed) finalReport = undefined;
    // An answering call had closed the run (in a workflow task that did not count): the run ends answered.
    if (closed?.answeredBefore !== undefined && engine.answeredBefore) {
      carryOut(engine.answeredBefore(closed.answeredBefore, new Date()));
      writeStatus();
    }
  }
  if (finalReport) signalReport(finalReport);
  // A signal given in the task that ends the run is not delivered: the run waits for its reports.
  await reports;
  return engine.state;
}

/**
 * The run's memory is closed even when the run was cancelled (not cancellable), and `notify`'s report
 * sent after it; a close that fails for good leaves the run's outcome as it is — its state is already
 * final — and returns null (the report was not sent). Runs recorded before closeRun said what it found return {}.
 */
async function closeRun(close: CloseRunInput, caller: Caller, notify: ParentNotice | undefined): Promise<ClosedRun | null> {
  const activity: keyof PlanActivities = 'closeRun';
  const input: CloseRunCall = notify ? { ...close, notify } : close;
  try {
    const closed = await CancellationScope.nonCancellable(() => caller.call(activity, input, MODEL_CALL, `close: run ${close.ending}`));
    return (closed ?? {}) as ClosedRun;
  } catch (err) {
    if (!(err instanceof ActivityFailure)) throw err;
    return null;
  }
}

async function perform<S, A extends ActivityMap, Person>(command: Command<A, Person>, options: RunEngineOptions<S, Person>, caller: Caller): Promise<EngineEvent<A, Person, ExecutionState>> {
  switch (command.kind) {
    case 'call': {
      const { options: callOptions, kind } = CALL_POLICIES[command.policy];
      // The engine pairs each activity with its own input type (CallCommand); TypeScript cannot follow the pairing through the index.
      const value = await caller.call(command.activity, command.input, callOptions, command.summary, kind);
      return { kind: 'result', activity: command.activity, value } as EngineEvent<A, Person, ExecutionState>;
    }
    case 'start_child': {
      const value = await executeChild<PlanExecutionWorkflow>(PLAN_WORKFLOW_TYPE, {
        workflowId: command.workflowId,
        workflowTaskTimeout: WORKFLOW_TASK_TIMEOUT,
        args: [withRunFeatures({ ...command.input, lastCallMs: caller.lastCallMs })],
        staticSummary: command.summary,
        memo: runMemo(command.input.goal, command.input.userId),
        // Its status too, as the child's own start would upsert it (wireCommon finds nothing missing): one
        // search-attribute upsert, a history event and a visibility write, fewer per child run.
        typedSearchAttributes: runSearchAttributes(options.userId, 'planning', command.input.sessionId),
        // A cancelled parent asks its children to cancel; they record it in their own state.
        parentClosePolicy: ParentClosePolicy.REQUEST_CANCEL,
        cancellationType: ChildWorkflowCancellationType.TRY_CANCEL,
      });
      return { kind: 'child_ended', value };
    }
    case 'start_run':
      await startChild(PLAN_WORKFLOW_TYPE, {
        workflowId: command.workflowId,
        workflowTaskTimeout: WORKFLOW_TASK_TIMEOUT,
        args: [command.input],
        staticSummary: command.summary,
        memo: runMemo(command.input.goal, command.input.userId),
        typedSearchAttributes: runSearchAttributes(command.input.userId, 'planning', command.input.sessionId),
        // Runs outlive the session's continue-as-new; they report back to the session by its id.
        parentClosePolicy: ParentClosePolicy.ABANDON,
      });
      return { kind: 'done' };
    case 'cancel_runs':
      await CancellationScope.nonCancellable(() =>
        Promise.all(
          command.runIds.map((id) =>
            getExternalWorkflowHandle(id)
              .cancel()
              .catch(() => undefined),
          ),
        ),
      );
      return { kind: 'done' };
    case 'relay_reply':
      return {
        kind: 'delivered',
        ok: await sendReply(command).then(
          () => true,
          () => false,
        ),
      };
    case 'await_person': {
      if (options.awaitPerson) return options.awaitPerson();
      await condition(() => options.inbox.length > 0);
      const event = options.inbox.shift();
      if (event === undefined) throw new Error('await_person woke with an empty inbox');
      return event;
    }
    default:
      throw new Error(`command ${command.kind} does not wait`);
  }
}
