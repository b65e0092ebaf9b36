/**
 * Which run and session an activity works for, on every line it (or the SDK for it) logs:
 * `runId` is the plan workflow's id, `sessionId` comes from the activity's input when it names one.
 */
import type { ActivityInterceptorsFactory } from '@temporalio/worker';
import { z } from 'zod';

const PLAN_WORKFLOW = 'planExecutionWorkflow';

/** The ids an activity's first argument may carry: plan activities a run's state, session activities a sessionId. */
const IdsOfInput = z.object({
  sessionId: z.string().optional(),
  state: z.object({ runId: z.string().optional(), sessionId: z.string().nullish() }).optional(),
});

export const logContextInterceptor: ActivityInterceptorsFactory = (ctx) => {
  const { workflowExecution, workflowType } = ctx.info;
  const ids: { runId?: string; sessionId?: string } = {};
  if (workflowExecution && workflowType === PLAN_WORKFLOW) ids.runId = workflowExecution.workflowId;
  return {
    inbound: {
      execute(input, next) {
        const parsed = IdsOfInput.safeParse(input.args[0]);
        if (parsed.success) {
          const { sessionId, state } = parsed.data;
          if (state?.runId) ids.runId = state.runId;
          const session = sessionId ?? state?.sessionId;
          if (session) ids.sessionId = session;
        }
        return next(input);
      },
    },
    outbound: {
      getLogAttributes(input, next) {
        return next({ ...ids, ...input });
      },
    },
  };
};
