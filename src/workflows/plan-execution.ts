/**
 * PlanExecutionWorkflow — one per plan execution (seed 000's planner).
 * Plan with the model, run each step as an activity, replan after each step,
 * wait on a signal for ask_user, run sub-plans as child workflows. The logic of
 * state changes lives in the pure module `planning/execution-state`.
 */
import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  ChildWorkflowCancellationType,
  ChildWorkflowFailure,
  condition,
  executeChild,
  getExternalWorkflowHandle,
  isCancellation,
  ParentClosePolicy,
  patched,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
  type ActivityOptions,
} from '@temporalio/workflow';
import type { PlanActivities } from '../activities/plan-activities';
import * as model from '../planning/execution-state';
import type { ExecutionState, PlanStep } from '../planning/execution-state';
import { renderProgress, stepSummary } from '../planning/progress';
import type { ReplanDecisionReply } from '../planning/schemas';
import {
  getStateQuery,
  replySignal,
  submitReplyUpdate,
  SESSION_ID_ATTR,
  STATUS_ATTR,
  USER_ID_ATTR,
  type PlanExecutionInput,
} from './definitions';
import { runReportSignal, type RunReport } from './session-definitions';

const NON_RETRYABLE = ['InvalidModelReply', 'ModelRequestRefused', 'UnknownStep'];

/** Model calls: a crashed worker is noticed by the 10 s heartbeat timeout; outages retry 5 times, then the run fails. */
const MODEL_CALL: ActivityOptions = {
  startToCloseTimeout: '5 minutes',
  heartbeatTimeout: '10 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds', maximumAttempts: 5, nonRetryableErrorTypes: NON_RETRYABLE },
};
/** A step may run a tool for up to 5 minutes (`wait`) before its replan call. */
const STEP_CALL: ActivityOptions = { ...MODEL_CALL, startToCloseTimeout: '12 minutes' };

const activities = (options: ActivityOptions, summary: string) =>
  proxyActivities<PlanActivities>({ ...options, summary });

/** A readable reason from an activity or child failure, for `lastError`. */
function describeFailure(err: ActivityFailure | ChildWorkflowFailure): string {
  let cause: Error | undefined = err.cause;
  while (cause?.cause instanceof Error && !(cause instanceof ApplicationFailure)) cause = cause.cause;
  const detail = cause?.message ?? err.message;
  return err instanceof ActivityFailure && err.retryState === 'MAXIMUM_ATTEMPTS_REACHED'
    ? `${detail} (gave up after ${MODEL_CALL.retry?.maximumAttempts ?? '?'} attempts)`
    : detail;
}

export async function planExecutionWorkflow(input: PlanExecutionInput): Promise<ExecutionState> {
  const info = workflowInfo();
  const now = () => new Date();
  let state = model.initialState(
    {
      runId: info.workflowId,
      userId: input.userId,
      goal: input.goal,
      sessionId: input.sessionId,
      parentRunId: input.parentRunId,
      depth: input.depth,
      model: '',
      sessionThreadId: input.sessionThreadId ?? null,
    },
    now(),
  );
  let reply: string | null = null;

  // A top-level run of a session tells its session when it waits, resumes or ends. Histories
  // recorded before this existed have no marker and never report (`patched` is false there).
  const session = input.sessionId && !input.parentRunId && patched('report-to-session') ? input.sessionId : null;
  let reports: Promise<void> = Promise.resolve();
  const reportToSession = (previous: ExecutionState['status']) => {
    if (session === null) return;
    const reported = state.status === 'waiting_user' || model.isTerminal(state.status) || (state.status === 'running' && previous === 'waiting_user');
    if (!reported) return;
    const report: RunReport = {
      runId: state.runId,
      status: state.status,
      question: state.status === 'waiting_user' ? (model.findStep(state, state.currentStepId ?? '')?.question ?? null) : null,
      finalAnswer: state.finalAnswer,
      lastError: state.lastError,
    };
    // In order, and even while the run is being cancelled; a session that no longer exists is ignored.
    reports = reports.then(() =>
      CancellationScope.nonCancellable(() => getExternalWorkflowHandle(session).signal(runReportSignal, report)).catch(() => undefined),
    );
  };

  /** Every change of state goes through here, so the UI's status and progress never lag. */
  const publish = (next: ExecutionState) => {
    const previous = state.status;
    const statusChanged = next.status !== state.status;
    state = next;
    if (statusChanged) {
      upsertSearchAttributes([{ key: STATUS_ATTR, value: state.status }]);
      reportToSession(previous);
    }
    setCurrentDetails(renderProgress(state));
  };

  setHandler(getStateQuery, () => state);
  const canTakeReply = () => state.status === 'waiting_user' && reply === null;
  setHandler(replySignal, ({ text }) => {
    // Only the first reply to a waiting run counts; late or duplicate signals are dropped.
    if (canTakeReply()) reply = text;
  });
  setHandler(
    submitReplyUpdate,
    ({ text }) => {
      reply = text;
      return { accepted: true as const };
    },
    {
      validator: (_input: { text: string }) => {
        if (!canTakeReply()) throw new Error(`run is ${state.status}, not waiting for a reply`);
      },
    },
  );
  upsertSearchAttributes([
    { key: USER_ID_ATTR, value: input.userId },
    { key: STATUS_ATTR, value: state.status },
    ...(input.sessionId ? [{ key: SESSION_ID_ATTR, value: input.sessionId }] : []),
  ]);

  async function runSubplan(step: PlanStep): Promise<model.Observation | Omit<model.Observation, 'at' | 'stepId'>> {
    if (state.depth >= input.limits.maxDepth) {
      return { kind: 'error', content: `sub-plan not started: nesting limit of ${input.limits.maxDepth} reached` };
    }
    const childRunId = `${state.runId}.${step.id}`;
    publish(model.startStep(state, step.id, now(), { childRunId }));
    const childInput: PlanExecutionInput = {
      userId: input.userId,
      goal: step.goal ?? step.description,
      sessionId: input.sessionId ?? null,
      parentRunId: state.runId,
      depth: state.depth + 1,
      limits: input.limits,
      ...(input.sessionThreadId ? { sessionThreadId: input.sessionThreadId } : {}),
    };
    const child = await executeChild(planExecutionWorkflow, {
      workflowId: childRunId,
      args: [childInput],
      staticSummary: `sub-plan of ${state.runId}: ${childInput.goal}`.slice(0, 200),
      memo: { goal: childInput.goal },
      typedSearchAttributes: [{ key: USER_ID_ATTR, value: input.userId }],
      // A cancelled parent asks its children to cancel; they record it in their own state.
      parentClosePolicy: ParentClosePolicy.REQUEST_CANCEL,
      cancellationType: ChildWorkflowCancellationType.TRY_CANCEL,
    });
    return child.status === 'completed'
      ? { kind: 'subplan', content: child.finalAnswer ?? '' }
      : { kind: 'error', content: `sub-plan ${childRunId} ended ${child.status}${child.lastError ? `: ${child.lastError}` : ''}` };
  }

  /** Runs one step; returns the replan decision that follows it, or null when the run has ended. */
  async function runStep(step: PlanStep): Promise<ReplanDecisionReply | null> {
    switch (step.type) {
      case 'respond': {
        publish(model.startStep(state, step.id, now()));
        const { answer } = await activities(MODEL_CALL, stepSummary(step)).respond({ state, stepId: step.id });
        publish(model.finishStep(state, step.id, 'completed', null, now()));
        publish(model.complete(state, answer, now()));
        return null;
      }
      case 'tool':
      case 'reason': {
        publish(model.startStep(state, step.id, now()));
        const result = await activities(STEP_CALL, `${stepSummary(step)} → replan`).executeStep({ state, stepId: step.id });
        publish(model.finishStep(state, step.id, result.outcome, result.observation, now()));
        return result.decision;
      }
      case 'ask_user': {
        publish(model.startStep(state, step.id, now()));
        publish(model.waitForUser(state, step.id, now()));
        await condition(() => reply !== null);
        publish(model.recordReply(state, step.id, reply ?? '', now()));
        reply = null;
        return activities(MODEL_CALL, `replan after the reply to ${step.id}`).replan({ state });
      }
      case 'subplan': {
        const observation = await runSubplan(step);
        const outcome = observation.kind === 'error' ? 'failed' : 'completed';
        publish(model.finishStep(state, step.id, outcome, observation, now()));
        return activities(MODEL_CALL, `replan after sub-plan ${step.id}`).replan({ state });
      }
    }
  }

  function applyDecision(decision: ReplanDecisionReply): boolean {
    switch (decision.decision) {
      case 'continue':
        return true;
      case 'replace_remaining':
        publish(model.replaceRemaining(state, decision.steps ?? [], now()));
        return true;
      case 'ask_user':
        publish(model.insertStepAfterCurrent(state, { type: 'ask_user', description: 'Ask the user', question: decision.question ?? '' }, now()));
        return true;
      case 'finish':
        publish(model.complete(state, decision.answer ?? '', now()));
        return false;
    }
  }

  try {
    const planned = await activities(MODEL_CALL, `plan: ${input.goal}`.slice(0, 200)).planRun({ state });
    // Histories recorded before runs had memory threads return no threadId.
    state = { ...state, model: planned.model, threadId: planned.threadId ?? null, observations: [...state.observations, ...(planned.snapshots ?? [])] };
    publish(model.applyPlan(state, planned.steps, now()));
    let executed = 0;
    for (;;) {
      const step = model.nextPendingStep(state);
      if (!step) {
        // The plan ran out without a respond step: write the answer from what was observed.
        const { answer } = await activities(MODEL_CALL, 'final answer').respond({ state, stepId: state.currentStepId ?? '' });
        publish(model.complete(state, answer, now()));
        break;
      }
      if (++executed > input.limits.maxSteps) {
        publish(model.fail(state, `step limit reached: a run may execute at most ${input.limits.maxSteps} steps`, now()));
        break;
      }
      const decision = await runStep(step);
      if (decision === null || !applyDecision(decision)) break;
    }
  } catch (err) {
    if (isCancellation(err)) publish(model.cancel(state, now()));
    else if (err instanceof ActivityFailure || err instanceof ChildWorkflowFailure) publish(model.fail(state, describeFailure(err), now()));
    // Anything else is a bug in this code: fail the workflow task so a fixed worker can carry on.
    else throw err;
  }
  await reports;
  return state;
}
