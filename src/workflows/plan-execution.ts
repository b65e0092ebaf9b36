/**
 * PlanExecutionWorkflow — one per plan execution (seed 000's planner). The workflow only wires
 * messages: the planner itself is the pure engine `engine/plan-engine` (plan, run each step as
 * an activity, replan after each, wait for a reply on ask_user, run sub-plans as child runs),
 * and `run-engine` carries out its commands.
 */
import { patched, setHandler, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import type { PlanActivities } from '../activities/plan-activities';
import { PlanEngine, type ReplyEvent } from '../engine/plan-engine';
import type { ExecutionState } from '../planning/execution-state';
import { renderProgress } from '../planning/progress';
import {
  getStateQuery,
  replySignal,
  submitReplyUpdate,
  SESSION_ID_ATTR,
  STATUS_ATTR,
  USER_ID_ATTR,
  type PlanExecutionInput,
} from './definitions';
import { runEngine } from './run-engine';

export async function planExecutionWorkflow(input: PlanExecutionInput): Promise<ExecutionState> {
  // A top-level run of a session tells its session when it waits, resumes or ends. Histories
  // recorded before this existed have no marker and never report (`patched` is false there).
  const reportTo = input.sessionId && !input.parentRunId && patched('report-to-session') ? input.sessionId : null;
  const engine = new PlanEngine({ ...input, runId: workflowInfo().workflowId, reportTo }, new Date());
  const inbox: ReplyEvent[] = [];

  setHandler(getStateQuery, () => engine.state);
  const canTakeReply = () => engine.canTakeReply() && inbox.length === 0;
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
        if (!canTakeReply()) throw new Error(`run is ${engine.state.status}, not waiting for a reply`);
      },
    },
  );
  upsertSearchAttributes([
    { key: USER_ID_ATTR, value: input.userId },
    { key: STATUS_ATTR, value: engine.state.status },
    ...(input.sessionId ? [{ key: SESSION_ID_ATTR, value: input.sessionId }] : []),
  ]);
  return runEngine<ExecutionState, PlanActivities, ReplyEvent>(engine, { userId: input.userId, details: renderProgress, inbox });
}
