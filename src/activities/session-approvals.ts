/**
 * A session's message that answers a tool call held for approval (issue 28): the decision the
 * session made of it in code (approve, reject with feedback) or, for an edit in words, the new
 * arguments the `approval_edit` model call makes of it — checked against the tool's schema — sent to
 * the run as the `submitApproval` update, the same decision `POST /v1/runs/:runId/approval` sends.
 */
import { Context } from '@temporalio/activity';
import { WorkflowNotFoundError, WorkflowUpdateFailedError } from '@temporalio/client';
import { approvalEditMessages, type ApprovalEditContext } from '../calls/approval-edit';
import type { ModelProvider } from '../llm/provider';
import { completeStructured, InvalidModelReplyError } from '../llm/structured';
import type { ApprovalDecision, PendingApproval } from '../planning/approval';
import type { AnswerApprovalInput, AnswerApprovalResult } from '../engine/contract';
import type { ToolRegistry } from '../tools/registry';
import { submitApprovalUpdate } from '../workflows/definitions';
import { withHeartbeats } from './heartbeat';
import { asFailure } from './plan-activities';

export type { AnswerApprovalInput, AnswerApprovalResult } from '../engine/contract';

const STILL_WAITS = 'The call still waits: say yes to run it as proposed, no (and why) to reject it, or say what to change.';

export function createApprovalActivities(deps: { provider: ModelProvider; tools: ToolRegistry; repairAttempts?: number }) {
  const attempts = deps.repairAttempts ?? 3;

  /** The edit's arguments, or why none fit: the model's reply is sent back while it does not fit the tool's schema. */
  async function editedArgs(pending: PendingApproval, text: string, signal: AbortSignal): Promise<{ args: Record<string, unknown> } | { problem: string }> {
    const context: ApprovalEditContext = { call: 'approval_edit', tool: pending.tool, args: pending.args, parameters: deps.tools.describeTool(pending.tool)?.parameters ?? null, text };
    const check = (reply: { args: Record<string, unknown> }) => {
      const problem = deps.tools.argsProblem(pending.tool, reply.args);
      return problem === null ? null : `the args do not fit ${pending.tool}: ${problem}`;
    };
    try {
      const reply = await completeStructured(deps.provider, { name: 'approval_edit', messages: approvalEditMessages(context), context }, attempts, signal, check);
      return { args: reply.args };
    } catch (err) {
      if (err instanceof InvalidModelReplyError) return { problem: err.message };
      throw asFailure(err);
    }
  }

  return {
    /** Turns a session message into the decision on a held call and sends it to the run (see AnswerApprovalResult). */
    async answerApproval(input: AnswerApprovalInput): Promise<AnswerApprovalResult> {
      const { runId, pending, answer } = input;
      const call = `${pending.tool}(${JSON.stringify(pending.args)})`;
      return withHeartbeats(async (signal): Promise<AnswerApprovalResult> => {
        let decision: ApprovalDecision;
        let reply: string;
        if (answer.decision === 'approve') {
          decision = { stepId: pending.stepId, decision: 'approve' };
          reply = `Approved: ${call} runs now.`;
        } else if (answer.decision === 'reject') {
          decision = { stepId: pending.stepId, decision: 'reject', ...(answer.feedback ? { feedback: answer.feedback } : {}) };
          reply = `Rejected ${call}${answer.feedback ? ` (${answer.feedback})` : ''}; the plan goes on without it.`;
        } else {
          const edited = await editedArgs(pending, answer.text, signal);
          if ('problem' in edited) return { delivered: false, waiting: true, reply: `I could not make arguments for ${pending.tool} of that (${edited.problem}). ${STILL_WAITS}` };
          decision = { stepId: pending.stepId, decision: 'edit', args: edited.args, feedback: answer.text };
          reply = `Edited: ${pending.tool}(${JSON.stringify(edited.args)}) runs now instead of ${call}.`;
        }
        try {
          // A held call of a run below the session's run (a sub-plan's, a group's) is decided where it waits.
          await Context.current()
            .client.workflow.getHandle(pending.runId ?? runId)
            .executeUpdate(submitApprovalUpdate, { args: [decision], updateId: input.updateId });
        } catch (err) {
          // The validator refused it (the call no longer waits), or the run has ended.
          if (!(err instanceof WorkflowUpdateFailedError) && !(err instanceof WorkflowNotFoundError)) throw err;
          const why = err.cause instanceof Error ? err.cause.message : err.message;
          return { delivered: false, waiting: false, reply: `Run ${runId} is no longer waiting for approval of ${call} (${why}); your answer was not delivered.` };
        }
        return { delivered: true, decision, reply };
      });
    },
  };
}
