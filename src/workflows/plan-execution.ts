/**
 * PlanExecutionWorkflow — one per run. The workflow only wires messages: the engine is pure —
 * seed 000's planner (`engine/plan-engine`: plan, run each step as an activity, replan after
 * each, wait for a reply on ask_user, run sub-plans as child runs) or, with `engine: "tree"`,
 * seed 003's task tree (`engine/tree-engine`) — and `run-engine` carries out its commands.
 */
import { ApplicationFailure, patched, setHandler, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import type { PlanActivities } from '../activities/plan-activities';
import type { TreeActivities } from '../activities/tree-activities';
import { PlanEngine, type PlanPersonEvent } from '../engine/plan-engine';
import { TreeEngine, type TreePersonEvent } from '../engine/tree-engine';
import type { ExecutionState } from '../planning/execution-state';
import { approvalLine, renderProgress } from '../planning/progress';
import {
  getStateQuery,
  redoTaskUpdate,
  replySignal,
  skipTaskUpdate,
  STEER_REFUSALS,
  submitApprovalUpdate,
  submitReplyUpdate,
  submitReviewUpdate,
  runSearchAttributes,
  RUN_FEATURES_PATCH,
  holdsUser,
  USER_ID_ATTR,
} from './definitions';
import { runEngine } from './run-engine';
import { stateObserver } from './history-hook';
import { runReportSignal } from './session-definitions';
import type { PlanExecutionInput } from '../engine/contract';
import type { ApprovalDecision } from '../planning/approval';

/** Patch id of tree runs whose subtrees made by `plan` and `blueprint` actions wait for review when the run is reviewed. */
const REVIEW_SUBTREES_PATCH = 'review-subtrees';
/** Patch id of tree runs that ask the model about a spin when one tool is called again and again with other arguments. */
const SPIN_BY_TYPE_PATCH = 'spin-by-type';
/** Patch id of tree runs in which a task that aborts fails the plan unless it is optional. */
const ABORT_FAILS_PLAN_PATCH = 'abort-fails-plan';
/** Patch id of runs that tell the run above of their plan reviews and held tool calls (a group's, a sub-agent's, a sub-plan's), which it shows as its own. */
const REPORT_WAITS_PATCH = 'report-child-waits';
/** Tree limits of runs started without them. */
const DEFAULT_TREE_LIMITS = { maxDepth: 4, maxFanout: 8, maxIterations: 10 };

export async function planExecutionWorkflow(input: PlanExecutionInput): Promise<ExecutionState> {
  // A top-level run of a session tells its session when it waits, resumes or ends. Histories
  // recorded before this existed have no marker and never report (`patched` is false there).
  const current = input.features === RUN_FEATURES_PATCH || patched(RUN_FEATURES_PATCH);
  const reportTo = input.sessionId && !input.parentRunId && (current || patched('report-to-session')) ? input.sessionId : null;
  // A sub-plan's or sub-agent's questions reach the person through its parent (src/engine/relay.ts).
  const questionsTo = input.parentRunId && input.relayQuestions ? input.parentRunId : null;
  const runId = workflowInfo().workflowId;
  // Absent in a worker: only a replay for the run's history (GET /v1/runs/:runId/history) installs one.
  const observe = stateObserver();
  // Asked only when the run's status enters or leaves `waiting_review` or `waiting_approval`: runs recorded before never reported those to a run above.
  const reportsWaits = () => patched(REPORT_WAITS_PATCH);
  if (input.engine === 'tree') {
    // Subtrees made mid-run wait for review too; runs recorded before did not (`patched`, asked only when one is made).
    const reviewsSubtrees = () => patched(REVIEW_SUBTREES_PATCH);
    // So are spins of one tool with changing arguments (asked only when such a run of calls is long enough).
    const spinsByType = () => patched(SPIN_BY_TYPE_PATCH);
    // A task that aborts fails the plan unless the plan marks it optional (asked only when one aborts).
    const failsOnAbort = () => patched(ABORT_FAILS_PLAN_PATCH);
    const engine = new TreeEngine(
      {
        ...input,
        runId,
        reportTo,
        questionsTo,
        reviewsSubtrees,
        reportsWaits,
        spinsByType,
        failsOnAbort,
        review: input.review ?? false,
        treeLimits: input.treeLimits ?? DEFAULT_TREE_LIMITS,
        observe,
      },
      new Date(),
    );
    const inbox: TreePersonEvent[] = [];
    wireCommon(
      input,
      current,
      () => engine.state,
      () => engine.canTakeReply() && inbox.length === 0,
      (decision) => engine.approvalProblem(decision),
      inbox,
    );
    setHandler(
      submitReviewUpdate,
      (decision) => {
        inbox.push({ kind: 'review', ...decision });
        return { accepted: true as const, planId: decision.planId };
      },
      {
        validator: (decision) => {
          const problem = inbox.length > 0 ? 'a decision on this plan is already being taken' : engine.reviewProblem(decision);
          if (problem) throw new Error(problem);
        },
      },
    );
    for (const [update, kind] of [
      [skipTaskUpdate, 'skip'],
      [redoTaskUpdate, 'redo'],
    ] as const) {
      setHandler(
        update,
        (steer) => {
          inbox.push({ kind, ...steer });
          return { accepted: true as const };
        },
        {
          validator: (steer) => {
            const refusal = engine.steerProblem(kind, steer.index);
            if (refusal) {
              const details = refusal.kind === 'delegated' ? [refusal.childRunId] : [];
              throw ApplicationFailure.create({ message: refusal.message, type: STEER_REFUSALS[refusal.kind], details, nonRetryable: true });
            }
            // One decision at a time: a skip or redo waiting to be taken may change what is allowed.
            if (inbox.length > 0) throw ApplicationFailure.create({ message: 'another decision on this run is being taken; try again', type: STEER_REFUSALS.notNow, nonRetryable: true });
          },
        },
      );
    }
    return runEngine<ExecutionState, TreeActivities, TreePersonEvent>(engine, {
      userId: input.userId,
      current,
      eventsWhileBusy: true,
      details: treeDetails,
      inbox,
      lastCallMs: input.lastCallMs ?? null,
    });
  }
  const engine = new PlanEngine({ ...input, runId, reportTo, questionsTo, reportsWaits, closeOnAnswer: current, observe }, new Date());
  const inbox: PlanPersonEvent[] = [];
  wireCommon(
    input,
    current,
    () => engine.state,
    () => engine.canTakeReply() && inbox.length === 0,
    (decision) => engine.approvalProblem(decision),
    inbox,
  );
  // A child run's questions reach the plan while it waits on that child; nothing else comes while a call runs.
  return runEngine<ExecutionState, PlanActivities, PlanPersonEvent>(engine, {
    userId: input.userId,
    current,
    eventsWhileBusy: 'children',
    details: renderProgress,
    inbox,
    lastCallMs: input.lastCallMs ?? null,
  });
}

/**
 * What every run has: the state query, replies by update and by signal, decisions on held tool calls,
 * its children's reports, its search attributes.
 */
function wireCommon(
  input: PlanExecutionInput,
  current: boolean,
  state: () => ExecutionState,
  canTakeReply: () => boolean,
  approvalProblem: (decision: ApprovalDecision) => string | null,
  inbox: PlanPersonEvent[] | TreePersonEvent[],
): void {
  setHandler(getStateQuery, state);
  // Decisions on held calls: refused unless that step waits and no other decision is on its way.
  setHandler(
    submitApprovalUpdate,
    (decision) => {
      inbox.push({ kind: 'approval', ...decision });
      return { accepted: true as const };
    },
    {
      validator: (decision) => {
        const why = inbox.length > 0 ? 'a decision on this run is already being taken' : approvalProblem(decision);
        if (why) throw new Error(why);
      },
    },
  );
  // A child run reports its questions here (the same signal a session gets from its runs).
  setHandler(runReportSignal, (report) => {
    inbox.push({ kind: 'child_report', report });
  });
  setHandler(replySignal, ({ text }) => {
    // Only the first reply to a waiting run counts; late or duplicate signals are dropped.
    if (canTakeReply()) inbox.push({ kind: 'reply', text });
  });
  setHandler(
    submitReplyUpdate,
    ({ text }) => {
      inbox.push({ kind: 'reply', text });
      return { accepted: true as const };
    },
    {
      validator: (_input: { text: string }) => {
        if (canTakeReply()) return;
        // A run still showing waiting_user has taken another reply that it has not acted on yet.
        const status = state().status;
        throw new Error(status === 'waiting_user' ? 'another reply to this question was taken first' : `run is ${status}, not waiting for a reply`);
      },
    },
  );
  const attributes = runSearchAttributes(input.userId, state().status, input.sessionId);
  // What the starter set already (a REST start, a session) is not written again; the user under either form
  // (runs started before user keys hold the id as spelt), so those take the same branch on replay.
  const given = workflowInfo().typedSearchAttributes;
  const missing = current ? attributes.filter(({ key, value }) => (key.name === USER_ID_ATTR.name ? !holdsUser(given.get(USER_ID_ATTR), input.userId) : given.get(key) !== value)) : attributes;
  if (missing.length > 0) upsertSearchAttributes(missing);
}

/** The Web UI's current details of a tree run: status, goal and the progress tree. */
const treeDetails = (s: ExecutionState) =>
  [
    `**${s.status}** — ${s.goal}${s.model ? ` (model: ${s.model})` : ''}`,
    s.progress ?? '',
    approvalLine(s) ?? '',
    s.finalAnswer ? `Answer: ${s.finalAnswer}` : s.lastError ? `Error: ${s.lastError}` : '',
  ]
    .filter(Boolean)
    .join('\n');
