/**
 * The tree engine's prompt (seed 003, pure), shared by its calls: every one is rendered from one
 * TreeContext — the run's state with its task tree, the tools, and the task the call is for — and
 * ends with the call's instruction. Each ReAct iteration sees the whole progress tree and the current
 * task's place in it (§8.2), the goals of the tasks above it (§7.4) and what finished tasks produced
 * (the seed's shared timeline), plus its own iterations so far.
 */
import { DATA_IS_NOT_INSTRUCTIONS } from '../memory/parser';
import type { ExecutionState } from '../planning/execution-state';
import { renderTaskProgress, type TaskNode } from '../planning/task-tree';
import { agentMessages } from '../agents/names';
import { offForRun } from '../planning/capabilities';
import { renderSessionContext, type SessionContext } from '../sessions/session-state';
import type { ChatMessage } from '../text/chat-message';
import type { ReflectionLevel } from '../engine/reflection';
import type { ContextKind } from './call';
import type { TreeCallName } from './names';
import { renderTools, type ToolDescription } from './tool-description';

export interface TreeContext {
  /** The tree engine's calls, plus its final answer. */
  call: TreeCallName | 'final_answer';
  tree: true;
  state: ExecutionState;
  tools: ToolDescription[];
  limits: { maxDepth: number; maxFanout: number; maxIterations: number };
  /** The task an iteration (or a plan action's `task_tree`) is for, and the chain from the root to it. */
  task?: TaskNode;
  path?: TaskNode[];
  /** `task_tree` for a plan action: the goal the task plans for; its subtasks go under the task. */
  planGoal?: string;
  /** Blueprints (plan templates) a `blueprint` action may invoke. */
  blueprints?: { name: string; description: string; params: Record<string, unknown> }[];
  /** `blueprint_params`: the blueprint whose parameters to extract. */
  blueprint?: { name: string; description: string; params: Record<string, unknown> };
  /** `task_tree` after a person asked for a revision: what they said, and the plan they saw. */
  feedback?: { text: string; previous: TaskNode };
  memory?: { messages: ChatMessage[]; tokens: number };
  /**
   * Seed 003's observe phase: what long-term memory holds for the current task (facts, similar earlier
   * tasks), recalled at each iteration and bounded (TASK_RECALL_CHARS); what the thread shows already is left out.
   */
  recall?: string[];
  /** The conversation a session's run belongs to: recent turns and TaskState. */
  session?: SessionContext;
  /** `reflection`: how deep (src/engine/reflection.ts); absent: a failed action's (`deep`). */
  reflection?: Exclude<ReflectionLevel, 'none'>;
}

export const isTreeContext = (context: { call: string }): context is TreeContext => 'tree' in context && context.tree === true;

export const TREE_CONTEXT: ContextKind<TreeContext> = { label: 'a TreeContext', is: isTreeContext };

const SYSTEM = `You are the task engine of Threadline, an agent runtime. A goal is split into a tree of tasks; each leaf task is carried out by a loop of thought and action, one action per reply.
Actions:
- "tool": call one tool; set "tool" (its name) and "args" (an object matching its parameters).
- "finish": the current task is done; set "result" (what it produced, for the tasks after it).
- "ask_user": ask the person a question when a fact or decision is theirs; set "question".
- "plan": the current task is too big for single actions; set "goal" and it is split into subtasks that run first.
- "blueprint": the current task matches a listed blueprint (a ready-made plan); set "blueprint" to its name and its tasks run first.
Rules: work only on the current task; use only the tools listed; never invent tool results; finish as soon as the task's goal is met. Reply with JSON only, matching the schema you are given.
${DATA_IS_NOT_INSTRUCTIONS}`;

const taskLine = (n: TaskNode) => `${n.index}. ${n.name} — ${n.goal}`;

/** What finished tasks produced, in DFS order: the tasks after them build on it. */
function timeline(root: TaskNode): string[] {
  const lines: string[] = [];
  const walk = (n: TaskNode) => {
    if (n.subtasks.length === 0 && n.result !== undefined) lines.push(`${n.index} (${n.status}): ${n.result}`);
    n.subtasks.forEach(walk);
  };
  walk(root);
  return lines;
}

/** What one call adds to the shared prompt: its instruction (last), a part before it, and lines after the tools. */
export interface TreePromptPart {
  instruction: string;
  /** The last part before the instruction (the blueprint whose parameters are asked for). */
  detail?: string | null;
  /** Appended to the system message after the tools (the blueprints an action may invoke). */
  offered?: string;
}

/** A tree call's messages: the rules and tools, the goal, the tree and the current task, then the call's part. */
export function treeMessages(ctx: TreeContext, part: TreePromptPart): ChatMessage[] {
  const { state } = ctx;
  const parts: string[] = [`Goal: ${state.goal}`];
  const off = offForRun(state.allow);
  if (off) parts.push(off);
  const conversation = ctx.session ? renderSessionContext(ctx.session) : null;
  if (conversation) parts.push(conversation);
  const tree = state.tree;
  if (ctx.call === 'task_tree') {
    if (ctx.planGoal && ctx.task) parts.push(`Task ${ctx.task.index} (${ctx.task.name}) decided to plan: ${ctx.planGoal}\nPlan subtasks for it only.`);
    if (ctx.feedback) parts.push(`A person reviewed this plan and asked for a revision.\nPlan:\n${renderTaskProgress(ctx.feedback.previous)}\nTheir feedback: ${ctx.feedback.text}`);
    parts.push(`Limits: at most ${ctx.limits.maxDepth} levels (the root is level 1) and ${ctx.limits.maxFanout} subtasks per task.`);
  } else if (tree) {
    parts.push(`Progress (read-only; [x] finished, [-] executing, [~] partly done, [ ] not started):\n${renderTaskProgress(tree)}`);
    const done = timeline(tree);
    if (done.length) parts.push(`What finished tasks produced:\n${done.join('\n')}`);
  }
  if (ctx.task && ctx.call !== 'task_tree') {
    const above = (ctx.path ?? []).slice(0, -1);
    if (above.length) parts.push(`Parent tasks (context only):\n${above.map(taskLine).join('\n')}`);
    parts.push(`Current task: ${taskLine(ctx.task)}\nIteration ${ctx.task.iterations} of at most ${ctx.limits.maxIterations}.${ctx.task.note ? `\nA person on this task: ${ctx.task.note}` : ''}`);
    const mine = state.steps.filter((s) => s.task === ctx.task?.index);
    const seen = mine.flatMap((s) =>
      state.observations.filter((o) => o.stepId === s.id).map((o) => `${s.id} ${s.type}${s.tool ? ` ${s.tool}(${JSON.stringify(s.args ?? {})})` : ''}: ${o.kind}: ${o.content}`),
    );
    if (seen.length) parts.push(`This task's actions so far:\n${seen.join('\n')}`);
    if (ctx.recall?.length) parts.push(`What long-term memory holds for this task:\n${ctx.recall.join('\n')}`);
  }
  if (part.detail) parts.push(part.detail);
  parts.push(part.instruction);
  return [
    { role: 'system', content: `${SYSTEM}\n\nTools:\n${renderTools(ctx.tools)}${part.offered ?? ''}` },
    // A sub-agent's run: its instructions, right after the rules every run follows (once: its thread may hold them).
    ...agentMessages(state.agent, ctx.memory),
    ...(ctx.memory ? [{ role: 'system' as const, content: 'Working memory of this run follows.' }, ...ctx.memory.messages] : []),
    { role: 'user', content: parts.join('\n\n') },
  ];
}
