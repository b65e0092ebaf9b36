/** `react_action` (seed 003's ReAct loop): one iteration's thought and the one action it takes on the current task. */
import { z } from 'zod';
import { modelCall } from './call';
import { TREE_CONTEXT, treeMessages, type TreeContext } from './tree';
import { CLARIFY, demoIntents, describeToolResult, TAG } from './demo-intents';

export const REACT_ACTIONS = ['tool', 'finish', 'ask_user', 'plan', 'blueprint'] as const;
export type ReactActionKind = (typeof REACT_ACTIONS)[number];

/** `react_action`: one ReAct iteration's thought and the one action it takes. */
export const ReactActionReplySchema = z
  .object({
    thought: z.string().min(1).max(8000),
    action: z.enum(REACT_ACTIONS),
    tool: z.string().min(1).max(100).optional(),
    args: z.record(z.string(), z.unknown()).optional(),
    result: z.string().min(1).optional(),
    question: z.string().min(1).max(4000).optional(),
    goal: z.string().min(1).max(4000).optional(),
    blueprint: z.string().min(1).max(100).optional(),
  })
  .superRefine((reply, ctx) => {
    // A finish without "result" has its thought as the task's result.
    const need: Record<ReactActionKind, 'tool' | 'question' | 'goal' | 'blueprint' | null> = {
      tool: 'tool',
      finish: null,
      ask_user: 'question',
      plan: 'goal',
      blueprint: 'blueprint',
    };
    const field = need[reply.action];
    if (field !== null && reply[field] === undefined) ctx.addIssue({ code: 'custom', path: [field], message: `a ${reply.action} action needs "${field}"` });
  });
export type ReactActionReply = z.infer<typeof ReactActionReplySchema>;

/**
 * The demo's iteration: a task it understands is one tool call and a finish; a goal of several
 * requests is planned as subtasks (planning as an action); one it cannot place asks the person, and
 * plans subtasks from the answer.
 */
export function demoReactAction(ctx: TreeContext): ReactActionReply {
  const task = ctx.task;
  if (!task) return { thought: `${TAG} no current task`, action: 'finish', result: 'nothing to do' };
  const { state } = ctx;
  const mine = state.steps.filter((s) => s.task === task.index);
  const observed = mine.flatMap((s) => state.observations.filter((o) => o.stepId === s.id).map((o) => ({ step: s, o })));
  const lastTool = [...observed].reverse().find(({ o }) => o.kind === 'tool' || o.kind === 'error');
  if (lastTool) {
    const result = lastTool.o.kind === 'error' ? `Something went wrong: ${lastTool.o.content}` : describeToolResult(lastTool.step, lastTool.o.content);
    return { thought: `${TAG} the tool answered; task ${task.index} is done.`, action: 'finish', result };
  }
  const intents = demoIntents(task.goal);
  // ReAct first (one task for the whole goal): a goal of several requests is planned as subtasks.
  if (intents.length > 1 && task.subtasks.length === 0 && ctx.limits.maxDepth > task.index.split('-').length) {
    return { thought: `${TAG} the goal holds ${intents.length} requests; planning them as subtasks.`, action: 'plan', goal: task.goal };
  }
  const [intent] = intents;
  if (intent?.tool) return { thought: `${TAG} ${intent.description}.`, action: 'tool', tool: intent.tool, args: intent.args ?? {} };
  const reply = [...observed].reverse().find(({ o }) => o.kind === 'user_reply')?.o.content;
  if (reply === undefined) return { thought: `${TAG} I cannot tell what is wanted.`, action: 'ask_user', question: CLARIFY };
  if (demoIntents(reply).length > 0 && ctx.limits.maxDepth > task.index.split('-').length) {
    return { thought: `${TAG} the answer names things I can do; planning them as subtasks.`, action: 'plan', goal: reply };
  }
  return { thought: `${TAG} still nothing I know how to do.`, action: 'finish', result: `I could not tell what to do with "${reply}".` };
}

export const reactAction = modelCall({
  name: 'react_action',
  schema: ReactActionReplySchema,
  context: TREE_CONTEXT,
  messages: (ctx) =>
    treeMessages(ctx, {
      instruction: 'Decide the next action for the current task. Reply {"thought", "action", ...}.',
      offered: ctx.blueprints?.length ? `\n\nBlueprints:\n${ctx.blueprints.map((b) => `- ${b.name}: ${b.description}`).join('\n')}` : '',
    }),
  demo: demoReactAction,
});
