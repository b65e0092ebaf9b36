/**
 * `task_tree` (seed 003's planning): a goal split into a tree of tasks — a run's first plan, a plan
 * action's subtasks, or a revision after a person's review. Limits a schema cannot express (depth and
 * width) are checked by `treeProblems` and sent back for repair like any invalid reply.
 */
import { z } from 'zod';
import type { StepSpec } from '../planning/step-spec';
import { TASK_GOAL, TASK_NAME, TaskSpecSchema } from '../planning/task-spec';
import type { TaskSpec } from '../planning/task-tree';
import { modelCall } from './call';
import { TREE_CONTEXT, treeMessages, type TreeContext } from './tree';
import { demoIntents } from './demo-intents';

/** `task_tree`: the root task and its subtasks. */
export const TaskTreeReplySchema = z.object({ name: TASK_NAME, goal: TASK_GOAL, subtasks: z.array(TaskSpecSchema).min(1).max(50) });
export type TaskTreeReply = z.infer<typeof TaskTreeReplySchema>;

const INSTRUCTION =
  'Split the goal into a tree of tasks: a root task with subtasks (and their subtasks where a part is still too big). Each task has a short "name" and a concrete "goal"; mark a subtask "optional": true when the goal can be met without it (a task that is not optional and cannot be done fails the plan). Reply {"name", "goal", "subtasks": [...]}.';

/** A subtask whose goal the demo's own rules read back to the same tool call. */
function intentTask(step: StepSpec): TaskSpec {
  const args = step.args ?? {};
  const goal = (() => {
    switch (step.tool) {
      case 'notes_write':
        return `Remember that my ${String(args.key)} is ${String(args.value)}`;
      case 'notes_read':
        return `What is my ${String(args.key)}?`;
      case 'current_time':
        return `Look up the current time${args.timezone ? ` in ${String(args.timezone)}` : ''}`;
      default:
        return step.description;
    }
  })();
  return { name: step.description, goal };
}

/**
 * The demo's tree: one subtask per request it understands (arithmetic, notes, time, waiting); a goal it
 * cannot place becomes a task that asks the person.
 */
export function demoTaskTree(ctx: TreeContext): TaskTreeReply {
  const goal = ctx.planGoal ?? ctx.state.goal;
  const intents = demoIntents(goal).slice(0, ctx.limits.maxFanout);
  const subtasks = intents.length > 0 ? intents.map(intentTask) : [{ name: 'Find out what is wanted', goal: 'Ask the person what they would like done' }];
  return { name: goal.slice(0, 200), goal, subtasks };
}

export const taskTree = modelCall({
  name: 'task_tree',
  schema: TaskTreeReplySchema,
  context: TREE_CONTEXT,
  messages: (ctx) => treeMessages(ctx, { instruction: INSTRUCTION }),
  demo: demoTaskTree,
});
