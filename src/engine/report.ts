/** What a run tells whoever waits on it (its session) when its status changes: shared by every engine. */
import * as model from '../planning/execution-state';
import type { ExecutionState, RunStatus } from '../planning/execution-state';
import type { ActivityMap, Command } from './core';
import type { RunReport } from './contract';

/**
 * The `notify_parent` command for a change from `previous` to the state's status, or null: a run
 * reports when it waits for a reply, when it resumes after one, and when it ends. A wait for plan
 * review or for a tool's approval is not reported (a session routes replies, not decisions).
 */
export function parentReport<A extends ActivityMap>(state: ExecutionState, previous: RunStatus, reportTo: string | null): Command<A> | null {
  const status = state.status;
  const report = runReport(state);
  if (reportTo === null || report === null) return null;
  const reported = status === 'waiting_user' || model.isTerminal(status) || (status === 'running' && previous === 'waiting_user');
  if (!reported) return null;
  return { kind: 'notify_parent', parentId: reportTo, report };
}

/** What a run's report says of its state (its status, question, answer or error); none while it waits for plan review or a tool's approval. */
export function runReport(state: ExecutionState): RunReport | null {
  const status = state.status;
  if (status === 'waiting_review' || status === 'waiting_approval') return null;
  return {
    runId: state.runId,
    status,
    question: status === 'waiting_user' ? (model.findStep(state, state.currentStepId ?? '')?.question ?? null) : null,
    finalAnswer: state.finalAnswer,
    lastError: state.lastError,
  };
}
