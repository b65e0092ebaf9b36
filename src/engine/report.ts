/** What a run tells whoever waits on it (its session) when its status changes: shared by every engine. */
import * as model from '../planning/execution-state';
import type { ExecutionState, RunStatus } from '../planning/execution-state';
import { approvalQuestion } from '../planning/approval';
import type { ActivityMap, Command } from './core';
import type { RunReport } from './contract';

/**
 * The `notify_parent` command for a change from `previous` to the state's status, or null: a run
 * reports when it waits for a reply, when it resumes after one, and when it ends. A wait for plan
 * review is not reported (a session routes replies, not decisions); a wait for a tool's approval,
 * and the resumption after it, only with `approvals` (a session's run whose session answers
 * approvals from its messages: `PlanExecutionInput.reportApprovals`).
 */
export function parentReport<A extends ActivityMap>(state: ExecutionState, previous: RunStatus, reportTo: string | null, approvals = false, reviews = false): Command<A> | null {
  const status = state.status;
  const report = runReport(state, approvals, reviews);
  if (reportTo === null || report === null) return null;
  const resumed = status === 'running' && (previous === 'waiting_user' || (approvals && previous === 'waiting_approval') || (reviews && previous === 'waiting_review'));
  const reported = status === 'waiting_user' || status === 'waiting_approval' || status === 'waiting_review' || model.isTerminal(status) || resumed;
  if (!reported) return null;
  return { kind: 'notify_parent', parentId: reportTo, report };
}

/**
 * What a run's report says of its state (its status, question, answer or error); none while it waits
 * for plan review unless `reviews` (a parent run shows it: `planId` says which plan), nor while it
 * waits for a tool's approval unless `approvals` (then the question says which call waits, and
 * `approval` carries it).
 */
export function runReport(state: ExecutionState, approvals = false, reviews = false): RunReport | null {
  const status = state.status;
  if (status === 'waiting_review') {
    const planId = state.reviewIn?.planId ?? state.planId;
    if (!reviews || !planId) return null;
    return { runId: state.runId, status, question: `run ${state.runId} waits for a review of plan ${planId}`, finalAnswer: null, lastError: state.lastError, planId };
  }
  if (status === 'waiting_approval') {
    const pending = state.pendingApproval;
    if (!approvals || !pending) return null;
    return { runId: state.runId, status, question: approvalQuestion(pending), finalAnswer: null, lastError: state.lastError, approval: pending };
  }
  return {
    runId: state.runId,
    status,
    question: status === 'waiting_user' ? (model.findStep(state, state.currentStepId ?? '')?.question ?? null) : null,
    finalAnswer: state.finalAnswer,
    lastError: state.lastError,
  };
}
