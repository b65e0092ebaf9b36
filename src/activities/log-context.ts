/**
 * Which run and session an activity works for, on every line it (or the SDK for it) logs:
 * `runId` is the plan workflow's id, `sessionId` comes from the activity's input when it names one,
 * and `trace_id` / `span_id` the activity's span when tracing is on — also on the SDK's own
 * "Activity started/completed" lines, which it writes outside the span.
 */
import { isSpanContextValid, trace } from '@opentelemetry/api';
import type { ActivityInterceptorsFactory } from '@temporalio/worker';
import { z } from 'zod';

const PLAN_WORKFLOW = 'planExecutionWorkflow';

/** The ids an activity's first argument may carry: plan activities a run's state, session activities a sessionId. */
const IdsOfInput = z.object({
  sessionId: z.string().optional(),
  state: z.object({ runId: z.string().optional(), sessionId: z.string().nullish() }).optional(),
});

/** Place after the tracing interceptor, which makes the span, and the state restore, which gives the state. */
export const logContextInterceptor: ActivityInterceptorsFactory = (ctx) => {
  const { workflowExecution, workflowType } = ctx.info;
  const ids: { runId?: string; sessionId?: string; trace_id?: string; span_id?: string } = {};
  if (workflowExecution && workflowType === PLAN_WORKFLOW) ids.runId = workflowExecution.workflowId;
  return {
    inbound: {
      execute(input, next) {
        const span = trace.getActiveSpan()?.spanContext();
        if (span && isSpanContextValid(span)) Object.assign(ids, { trace_id: span.traceId, span_id: span.spanId });
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
