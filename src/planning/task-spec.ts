/**
 * A task as proposed (seed 003): name, goal and optional subtasks, recursively — the piece a model's
 * `task_tree` (src/calls/task-tree.ts), a blueprint and a person's revised plan share.
 */
import { z } from 'zod';
import type { TaskSpec } from './task-tree';

export const TASK_NAME = z.string().min(1).max(200);
export const TASK_GOAL = z.string().min(1).max(4000);

/** A task as proposed: name, goal and optional subtasks, recursively. */
export const TaskSpecSchema: z.ZodType<TaskSpec> = z.lazy(() => z.object({ name: TASK_NAME, goal: TASK_GOAL, optional: z.boolean().optional(), subtasks: z.array(TaskSpecSchema).max(50).optional() }));
