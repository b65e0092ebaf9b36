/** `execution_plan` (seed 000's planner): the plan for a goal, as steps. */
import { z } from 'zod';
import { StepSpecSchema } from '../planning/step-spec';
import { modelCall } from './call';
import { PLANNER_CONTEXT, plannerMessages } from './planner';
import { CLARIFY, demoIntents, reminderOf, withAnswer } from './demo-intents';

export const ExecutionPlanReplySchema = z.object({
  steps: z.array(StepSpecSchema).min(1).max(50),
});
export type ExecutionPlanReply = z.infer<typeof ExecutionPlanReplySchema>;

export const executionPlan = modelCall({
  name: 'execution_plan',
  schema: ExecutionPlanReplySchema,
  context: PLANNER_CONTEXT,
  messages: (ctx) => plannerMessages(ctx, 'Make the plan for the goal. Reply {"steps": [...]}.'),
  // The demo plans the requests it understands, then answers; a goal it cannot place is a question.
  demo: ({ state }): ExecutionPlanReply => {
    const steps = demoIntents(state.goal);
    return {
      steps: steps.length > 0 || reminderOf(state.goal) !== null ? withAnswer(steps) : [{ type: 'ask_user', description: 'Ask what the user wants', question: CLARIFY }],
    };
  },
});
