/** `task_summary` (seed 003's summary at max iterations): what a task stopped at its iteration limit did reach. */
import { z } from 'zod';
import { modelCall } from './call';
import { TREE_CONTEXT, treeMessages, type TreeContext } from './tree';
import { TAG } from './demo-intents';

export const TaskSummaryReplySchema = z.object({ summary: z.string().min(1).max(4000) });
export type TaskSummaryReply = z.infer<typeof TaskSummaryReplySchema>;

const INSTRUCTION =
  'The current task has reached its iteration limit and stops here. Summarise what its actions did reach (facts found, results produced) and what is still missing, for the tasks after it and the final answer. Reply {"summary"}.';

/** The demo's summary of a task stopped at its limit: what its actions observed, last first. */
export function demoTaskSummary(ctx: TreeContext): string {
  const { state, task } = ctx;
  const mine = new Set(state.steps.filter((s) => s.task === task?.index).map((s) => s.id));
  const seen = state.observations.filter((o) => o.stepId !== null && mine.has(o.stepId) && (o.kind === 'tool' || o.kind === 'user_reply')).map((o) => o.content);
  return `${TAG} ${seen.length ? `reached: ${seen.slice(-3).reverse().join('; ')}` : 'nothing was reached'}`.slice(0, 4000);
}

export const taskSummary = modelCall({
  name: 'task_summary',
  schema: TaskSummaryReplySchema,
  context: TREE_CONTEXT,
  messages: (ctx) => treeMessages(ctx, { instruction: INSTRUCTION }),
  demo: (ctx) => ({ summary: demoTaskSummary(ctx) }),
});
