/**
 * The offline demo model's rules for the tree engine, so `npm start` shows seed 003 with no key:
 * one subtask per request it understands (arithmetic, notes, time, waiting), each carried out by
 * one tool call and a finish; a goal it cannot place becomes a task that asks the person, and
 * plans subtasks from the answer (planning as an action).
 */
import type { StepSpec } from '../planning/schemas';
import { dfs, type TaskSpec } from '../planning/task-tree';
import type { ReactActionReply, TaskTreeReply } from '../planning/tree-schemas';
import { CLARIFY, demoIntents, describeToolResult, TAG } from './demo-intents';
import type { TreeContext } from './tree-prompts';

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

export function demoTaskTree(ctx: TreeContext): TaskTreeReply {
  const goal = ctx.planGoal ?? ctx.state.goal;
  const intents = demoIntents(goal).slice(0, ctx.limits.maxFanout);
  const subtasks = intents.length > 0 ? intents.map(intentTask) : [{ name: 'Find out what is wanted', goal: 'Ask the person what they would like done' }];
  return { name: goal.slice(0, 200), goal, subtasks };
}

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

/** A task stopped at its limit: what its actions observed, last first. */
export function demoTaskSummary(ctx: TreeContext): string {
  const { state, task } = ctx;
  const mine = new Set(state.steps.filter((s) => s.task === task?.index).map((s) => s.id));
  const seen = state.observations.filter((o) => o.stepId !== null && mine.has(o.stepId) && (o.kind === 'tool' || o.kind === 'user_reply')).map((o) => o.content);
  return `${TAG} ${seen.length ? `reached: ${seen.slice(-3).reverse().join('; ')}` : 'nothing was reached'}`.slice(0, 4000);
}

/** The final answer: what each finished leaf produced, in DFS order. */
export function demoTreeAnswer(ctx: TreeContext): string {
  const results = ctx.state.tree ? dfs(ctx.state.tree).flatMap((n) => (n.subtasks.length === 0 && n.result ? [n.result] : [])) : [];
  return `${TAG} ${results.length ? results.join(' ') : 'Nothing was done.'}`;
}
