/**
 * Request schemas of the REST API v1 (DESIGN.md §4). Each is the source of
 * truth for its request and its TypeScript type; routes see only parsed values.
 */
import { z } from 'zod';
import type { Allow } from '../planning/capabilities';
import { RUN_STATUSES } from '../planning/execution-state';
import { TaskTreeReplySchema } from '../calls/task-tree';
import { StepSpecSchema } from '../planning/step-spec';

const ID_CHARS = /^[A-Za-z0-9._@:+-]+$/;
const id = (what: string) => z.string().min(1).max(128).regex(ID_CHARS, `${what} may contain only letters, digits and . _ @ : + -`);

/** Longest goal or reply text we accept; keeps workflow inputs and signals far below Temporal's payload limit. */
export const MAX_TEXT_CHARS = 10_000;

export const UserIdSchema = id('userId');
export const SessionIdSchema = id('sessionId');

export const CreateRunBody = z.object({
  userId: UserIdSchema,
  goal: z.string().trim().min(1, 'goal must not be blank').max(MAX_TEXT_CHARS),
  sessionId: SessionIdSchema.nullish(),
  /**
   * `plan`: seed 000's planner; `tree`: seed 003's task tree, proposed first; `react`: seed 003's ReAct first — one
   * loop on the goal that answers directly or acts, and plans a task tree only when it needs one. @default "plan"
   */
  engine: z.enum(['plan', 'tree', 'react']).optional(),
  /** Tree runs: self-reflection — `off`, after failed actions (`failures`), or also periodically (`periodic`). @default REFLECTION */
  reflection: z.enum(['off', 'failures', 'periodic']).optional(),
  /** Tree runs: wait for a person's review of the proposed plan. @default false */
  review: z.boolean().optional(),
  /** Tree runs: start from a blueprint (none are installed yet: any name is unknown). */
  blueprint: id('blueprint').optional(),
  params: z.record(z.string(), z.unknown()).optional(),
  /**
   * Capability switches (seed 003's allow* gates): what the run and its children may not do — call tools,
   * ask the person (off for unattended runs), plan sub-plans, invoke blueprints, recall long-term memory.
   * @default all true
   */
  allow: z.object({ tools: z.boolean(), askUser: z.boolean(), plan: z.boolean(), blueprints: z.boolean(), recall: z.boolean() }).partial().strict().optional() satisfies z.ZodType<Allow | undefined>,
  /** Tools whose calls wait for a person's approval in this run (names or patterns, `*` for all), added to TOOL_APPROVAL. */
  approval: z.array(z.string().trim().min(1).max(200)).max(100).optional(),
});

/** `POST /v1/runs/:runId/fork`: where the fork starts (exactly one of version, stepId, taskIndex) and what a person changes there. */
export const ForkBody = z
  .object({
    version: z.number().int().min(1).optional(),
    stepId: z.string().min(1).max(100).optional(),
    taskIndex: z
      .string()
      .regex(/^\d+(-\d+)*$/, 'a task index such as 1-2')
      .optional(),
    edits: z
      .object({
        goal: z.string().trim().min(1).max(MAX_TEXT_CHARS).optional(),
        observations: z
          .array(z.object({ stepId: z.string().min(1).max(100), content: z.string().max(MAX_TEXT_CHARS) }))
          .max(100)
          .optional(),
        args: z
          .array(z.object({ stepId: z.string().min(1).max(100), args: z.record(z.string(), z.unknown()) }))
          .max(100)
          .optional(),
        remainingSteps: z.array(StepSpecSchema).max(50).optional(),
      })
      .optional(),
  })
  .refine((b) => [b.version, b.stepId, b.taskIndex].filter((x) => x !== undefined).length === 1, { message: 'give exactly one of version, stepId or taskIndex' });

/** `POST /v1/runs/:runId/approval`: a person's decision on the tool call that waits. `edit` needs `args`. */
export const ApprovalBody = z
  .object({
    stepId: z.string().min(1).max(100),
    decision: z.enum(['approve', 'reject', 'edit']),
    args: z.record(z.string(), z.unknown()).optional(),
    feedback: z.string().max(MAX_TEXT_CHARS).optional(),
  })
  .refine((b) => b.decision !== 'edit' || b.args !== undefined, { message: 'an edit needs args', path: ['args'] });
export type CreateRunBody = z.infer<typeof CreateRunBody>;

export const ReplyBody = z.object({
  text: z
    .string()
    .min(1)
    .max(MAX_TEXT_CHARS)
    .refine((text) => text.trim().length > 0, 'text must not be blank'),
});
export type ReplyBody = z.infer<typeof ReplyBody>;

export const RunParams = z.object({ runId: z.string().min(1).max(255) });
export const RunVersionParams = RunParams.extend({ version: z.coerce.number().int().min(1) });

/** A task of a tree run, by its hierarchical index (`1-2-3`). */
export const TaskParams = z.object({
  runId: z.string().min(1).max(255),
  index: z
    .string()
    .regex(/^1(-[1-9]\d{0,3})*$/, 'index is like 1-2-3')
    .max(200),
});
export const SteerBody = z.object({ reason: z.string().trim().max(MAX_TEXT_CHARS).optional() }).default({});

/** A person's decision on a tree run's proposed plan (POST /v1/runs/:runId/review). */
export const ReviewBody = z
  .object({
    decision: z.enum(['approve', 'revise', 'reject']),
    planId: z.string().min(1).max(300),
    tree: TaskTreeReplySchema.optional(),
    feedback: z.string().trim().min(1).max(MAX_TEXT_CHARS).optional(),
  })
  .refine((b) => b.decision !== 'revise' || b.tree !== undefined || b.feedback !== undefined, { path: ['feedback'], message: 'revise needs feedback or an edited tree' });
export type ReviewBody = z.infer<typeof ReviewBody>;

export const ListRunsQuery = z.object({
  userId: UserIdSchema.optional(),
  status: z.enum(RUN_STATUSES).optional(),
  /** At most this many runs. @default 100 */
  limit: z.coerce.number().int().min(1).max(1000).optional(),
});
export type ListRunsQuery = z.infer<typeof ListRunsQuery>;
