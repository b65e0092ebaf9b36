/**
 * `reflection` (seed 003's self-reflection): after a failed action, what went wrong and what to do
 * differently; with periodic reflection, a task taking stock (how deep: src/engine/reflection.ts).
 */
import { z } from 'zod';
import { REFLECTION_ASKS } from '../engine/reflection';
import { modelCall } from './call';
import { TREE_CONTEXT, treeMessages } from './tree';
import { TAG } from './demo-intents';

export const ReflectionReplySchema = z.object({ assessment: z.string().min(1).max(4000), lesson: z.string().min(1).max(2000) });
export type ReflectionReply = z.infer<typeof ReflectionReplySchema>;

export const reflection = modelCall({
  name: 'reflection',
  schema: ReflectionReplySchema,
  context: TREE_CONTEXT,
  // Without a level, a failed action's (`deep`).
  messages: (ctx) => treeMessages(ctx, { instruction: `${REFLECTION_ASKS[ctx.reflection ?? 'deep']} Reply {"assessment", "lesson"}.` }),
  demo: (ctx) =>
    ctx.reflection && ctx.reflection !== 'deep'
      ? { assessment: `${TAG} task ${ctx.task?.index ?? '?'} has had ${ctx.task?.iterations ?? 0} iteration(s).`, lesson: 'Finish the task as soon as its goal is met.' }
      : { assessment: `${TAG} the last action failed.`, lesson: 'Check the arguments against the tool description before trying again.' },
});
