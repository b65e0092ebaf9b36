/**
 * Wire schemas of seed 003's calls (DESIGN.md "Tree engine"): the task tree a model proposes,
 * one ReAct action per iteration, spin checks, reflections and blueprint parameters. Limits a
 * schema cannot express (tree depth and width) are checked by `treeProblems` and sent back for
 * repair like any invalid reply.
 */
import { z } from 'zod';
import type { TaskSpec } from './task-tree';

const name = z.string().min(1).max(200);
const goal = z.string().min(1).max(4000);

/** A task as proposed: name, goal and optional subtasks, recursively. */
export const TaskSpecSchema: z.ZodType<TaskSpec> = z.lazy(() => z.object({ name, goal, optional: z.boolean().optional(), subtasks: z.array(TaskSpecSchema).max(50).optional() }));

/** `task_tree`: the root task and its subtasks. */
export const TaskTreeReplySchema = z.object({ name, goal, subtasks: z.array(TaskSpecSchema).min(1).max(50) });
export type TaskTreeReply = z.infer<typeof TaskTreeReplySchema>;

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
    const need: Record<ReactActionKind, 'tool' | 'result' | 'question' | 'goal' | 'blueprint'> = {
      tool: 'tool',
      finish: 'result',
      ask_user: 'question',
      plan: 'goal',
      blueprint: 'blueprint',
    };
    const field = need[reply.action];
    if (reply[field] === undefined) ctx.addIssue({ code: 'custom', path: [field], message: `a ${reply.action} action needs "${field}"` });
  });
export type ReactActionReply = z.infer<typeof ReactActionReplySchema>;

/** `spin_check`: is the task going round in circles? */
export const SpinCheckReplySchema = z.object({ spinning: z.boolean(), reason: z.string().max(2000) });
export type SpinCheckReply = z.infer<typeof SpinCheckReplySchema>;

/** `reflection`: after a failed action, what went wrong and what to do differently. */
export const ReflectionReplySchema = z.object({ assessment: z.string().min(1).max(4000), lesson: z.string().min(1).max(2000) });
export type ReflectionReply = z.infer<typeof ReflectionReplySchema>;

/** `task_summary`: what a task stopped at its iteration limit did reach (seed 003's summary at max iterations). */
export const TaskSummaryReplySchema = z.object({ summary: z.string().min(1).max(4000) });
export type TaskSummaryReply = z.infer<typeof TaskSummaryReplySchema>;

/** `blueprint_params`: a blueprint's parameters extracted from a goal (validated against its JSON Schema after). */
export const BlueprintParamsReplySchema = z.object({ params: z.record(z.string(), z.unknown()) });
export type BlueprintParamsReply = z.infer<typeof BlueprintParamsReplySchema>;
