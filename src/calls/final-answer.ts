/**
 * `final_answer`: the answer to the person, written from what a run observed — by the planner (from
 * its observations) or by the tree engine (from what its tasks produced).
 */
import { z } from 'zod';
import type { ExecutionState } from '../planning/execution-state';
import { dfs } from '../planning/task-tree';
import { modelCall, type ContextKind } from './call';
import { PLANNER_CONTEXT, plannerMessages, type PlannerContext } from './planner';
import { isTreeContext, treeMessages, type TreeContext } from './tree';
import { describeToolResult, reminderOf, TAG } from './demo-intents';

export const FinalAnswerReplySchema = z.object({ answer: z.string().min(1) });
export type FinalAnswerReply = z.infer<typeof FinalAnswerReplySchema>;

const PLANNER_INSTRUCTION = 'Write the final answer to the user from the observations. Reply {"answer": "..."}.';
const TREE_INSTRUCTION = 'All tasks are done. Write the final answer to the user from what the tasks produced. Reply {"answer": "..."}.';

const PLANNER_OR_TREE: ContextKind<PlannerContext | TreeContext> = {
  label: 'a PlannerContext or a TreeContext',
  is: (context): context is PlannerContext | TreeContext => isTreeContext(context) || PLANNER_CONTEXT.is(context),
};

function describeObservation(state: ExecutionState, stepId: string | null, content: string): string | null {
  const step = state.steps.find((s) => s.id === stepId);
  if (!step || step.type !== 'tool') return null;
  return describeToolResult(step, content);
}

/** The demo planner's answer: each tool result in a sentence. */
export function demoAnswer(state: ExecutionState): string {
  // A reminder's own run (scheduled by `schedule_run`): the reminder is the answer.
  const reminder = reminderOf(state.goal);
  if (reminder !== null && state.observations.length === 0) return `${TAG} Reminder: ${reminder}`;
  const lines = state.observations
    .map((o) => (o.kind === 'tool' ? describeObservation(state, o.stepId, o.content) : o.kind === 'error' ? `Something went wrong: ${o.content}` : o.kind === 'subplan' ? o.content : null))
    .filter((l): l is string => l !== null);
  return `${TAG} ${lines.length > 0 ? lines.join(' ') : 'I could not find anything I know how to do in that request.'}`;
}

/** The demo tree engine's answer: what each finished leaf produced, in DFS order. */
export function demoTreeAnswer(ctx: TreeContext): string {
  const results = ctx.state.tree ? dfs(ctx.state.tree).flatMap((n) => (n.subtasks.length === 0 && n.result ? [n.result] : [])) : [];
  return `${TAG} ${results.length ? results.join(' ') : 'Nothing was done.'}`;
}

export const finalAnswer = modelCall({
  name: 'final_answer',
  schema: FinalAnswerReplySchema,
  context: PLANNER_OR_TREE,
  messages: (ctx) => (isTreeContext(ctx) ? treeMessages(ctx, { instruction: TREE_INSTRUCTION }) : plannerMessages(ctx, PLANNER_INSTRUCTION)),
  demo: (ctx) => ({ answer: isTreeContext(ctx) ? demoTreeAnswer(ctx) : demoAnswer(ctx.state) }),
});
