/** `reasoning`: a plan's reason step, thought through from the observations (no side effects). */
import { z } from 'zod';
import { modelCall } from './call';
import { PLANNER_CONTEXT, plannerMessages } from './planner';
import { TAG } from './demo-intents';

export const ReasoningReplySchema = z.object({ thought: z.string().min(1) });
export type ReasoningReply = z.infer<typeof ReasoningReplySchema>;

export const reasoning = modelCall({
  name: 'reasoning',
  schema: ReasoningReplySchema,
  context: PLANNER_CONTEXT,
  messages: (ctx) => plannerMessages(ctx, 'Carry out the reasoning step below using the observations. Reply {"thought": "..."}.'),
  demo: ({ state }) => ({ thought: `${TAG} ${state.observations.length} observation(s) so far.` }),
});
