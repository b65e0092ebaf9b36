/**
 * Runs started and reported through the worker's own client, from inside an activity: a session's
 * run starts in the same call that the session already makes (no child-start round trip), on this
 * worker at once (eager workflow start), and a run's final report reaches its parent before the run
 * closes (a signal given by a workflow that ends in the same task is not delivered).
 */
import { Context } from '@temporalio/activity';
import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { PLAN_WORKFLOW_TYPE, runMemo, runSearchAttributes, SESSION_ID_ATTR, withRunFeatures, WORKFLOW_TASK_TIMEOUT } from '../workflows/definitions';
import { runReportSignal } from '../workflows/session-definitions';
import { parentReport } from '../engine/report';
import { isTerminal, type ExecutionState } from '../planning/execution-state';
import type { ParentNotice, RunReport, StartRunInput } from '../engine/contract';

export type { StartRunInput } from '../engine/contract';

export const RUN_ID_TAKEN = 'RunIdTaken';

/**
 * Starts a session's run on this worker's task queue. Safe to run again, also from a replay that
 * handles the message at another point of the session's history: the run is found by its id, running
 * (`USE_EXISTING`) or already ended — then its ending comes back, as the report the session missed
 * while it did not know the run. An id taken by anything else is refused.
 */
export async function startSessionRun({ runId, input, summary }: StartRunInput): Promise<{ ended?: RunReport }> {
  const { client, info } = Context.current();
  try {
    await client.workflow.start(PLAN_WORKFLOW_TYPE, {
      workflowId: runId,
      taskQueue: info.taskQueue,
      args: [withRunFeatures(input)],
      workflowTaskTimeout: WORKFLOW_TASK_TIMEOUT,
      staticSummary: summary.slice(0, 200),
      memo: runMemo(input.goal, input.userId),
      typedSearchAttributes: runSearchAttributes(input.userId, 'planning', input.sessionId),
      workflowIdConflictPolicy: 'USE_EXISTING',
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
      // Its first workflow task comes back with the start and runs here, with no dispatch in between.
      requestEagerStart: true,
    });
  } catch (err) {
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
    const handle = client.workflow.getHandle(runId);
    const existing = await handle.describe();
    if (existing.type !== PLAN_WORKFLOW_TYPE || existing.typedSearchAttributes.get(SESSION_ID_ATTR) !== input.sessionId) {
      throw ApplicationFailure.nonRetryable(`the run id ${runId} is taken by an earlier execution`, RUN_ID_TAKEN);
    }
    if (existing.status.name === 'RUNNING') return {};
    const state = await handle.result().catch(() => null);
    return { ended: endingReport(runId, existing.status.name, state as ExecutionState | null) };
  }
  return {};
}

/** The report a run that has ended sends its session (src/engine/report.ts), rebuilt from its result. */
function endingReport(runId: string, closed: string, state: ExecutionState | null): RunReport {
  const ending = state && isTerminal(state.status) ? parentReport(state, 'running', state.sessionId ?? '') : null;
  if (ending?.kind === 'notify_parent') return ending.report;
  return {
    runId,
    status: closed === 'COMPLETED' ? 'completed' : closed === 'CANCELED' ? 'cancelled' : 'failed',
    question: null,
    finalAnswer: null,
    lastError: closed === 'COMPLETED' ? null : `the run ${closed.toLowerCase()}`,
  };
}

/** Signals a run's report to its parent; a parent that no longer exists is ignored (as a signal from the run would be). */
export async function notifyParent({ parentId, report }: ParentNotice): Promise<void> {
  try {
    await Context.current().client.workflow.getHandle(parentId).signal(runReportSignal, report);
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return;
    throw err;
  }
}
