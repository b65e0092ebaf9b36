/** `replan_decision` (seed 000's replan after every step): continue, replace the remaining steps, ask the person, or finish. */
import { z } from 'zod';
import { StepSpecSchema } from '../planning/step-spec';
import { modelCall } from './call';
import { PLANNER_CONTEXT, plannerMessages } from './planner';
import { CLARIFY, demoIntents, TAG, withAnswer } from './demo-intents';
import { demoAnswer } from './final-answer';
import type { ExecutionState } from '../planning/execution-state';

export const REPLAN_DECISIONS = ['continue', 'replace_remaining', 'ask_user', 'finish'] as const;
export type ReplanDecisionKind = (typeof REPLAN_DECISIONS)[number];

export const ReplanDecisionReplySchema = z
  .object({
    decision: z.enum(REPLAN_DECISIONS),
    steps: z.array(StepSpecSchema).max(50).optional(),
    question: z.string().min(1).max(4000).optional(),
    // A finish without it has the answer written from what was observed (a final_answer call).
    answer: z.string().optional(),
  })
  .superRefine((reply, ctx) => {
    if (reply.decision === 'replace_remaining' && (reply.steps === undefined || reply.steps.length === 0)) {
      ctx.addIssue({ code: 'custom', path: ['steps'], message: 'replace_remaining needs a non-empty "steps"' });
    }
    if (reply.decision === 'ask_user' && reply.question === undefined) {
      ctx.addIssue({ code: 'custom', path: ['question'], message: 'ask_user needs "question"' });
    }
  });
export type ReplanDecisionReply = z.infer<typeof ReplanDecisionReplySchema>;

const INSTRUCTION =
  'A step just finished. Decide what happens next: "continue" with the remaining steps, "replace_remaining" with new "steps", "ask_user" with a "question", or "finish" with the final "answer". Reply {"decision": ...}.';

/** The demo's replan: a reply is planned anew (or ends the run when it names nothing the demo does); a run out of steps finishes. */
function demoReplan(state: ExecutionState): ReplanDecisionReply {
  const last = state.observations[state.observations.length - 1];
  if (last?.kind === 'user_reply') {
    const steps = demoIntents(last.content);
    return steps.length > 0
      ? { decision: 'replace_remaining', steps: withAnswer(steps) }
      : { decision: 'finish', answer: `${TAG} I still could not tell what to do with "${last.content}". ${CLARIFY}` };
  }
  if (!state.steps.some((s) => s.status === 'pending')) return { decision: 'finish', answer: demoAnswer(state) };
  return { decision: 'continue' };
}

export const replanDecision = modelCall({
  name: 'replan_decision',
  schema: ReplanDecisionReplySchema,
  context: PLANNER_CONTEXT,
  messages: (ctx) => plannerMessages(ctx, INSTRUCTION),
  demo: ({ state }) => demoReplan(state),
});
