/**
 * A planned step as the model writes it (DESIGN.md §4 "Model wire protocol", `Step`): the piece the
 * planner's calls share (src/calls/execution-plan.ts, replan-decision.ts), the run's state keeps and
 * the API accepts in a fork's edits.
 */
import { z } from 'zod';

export const STEP_TYPES = ['tool', 'reason', 'ask_user', 'respond', 'subplan'] as const;
export type StepType = (typeof STEP_TYPES)[number];

const stepShape = z.object({
  type: z.enum(STEP_TYPES),
  description: z.string().min(1).max(2000),
  tool: z.string().min(1).max(100).optional(),
  args: z.record(z.string(), z.unknown()).optional(),
  question: z.string().min(1).max(4000).optional(),
  goal: z.string().min(1).max(4000).optional(),
});

/** One planned step as the model writes it. */
export const StepSpecSchema = stepShape.superRefine((step, ctx) => {
  const need = (field: 'tool' | 'question' | 'goal') => {
    if (step[field] === undefined) {
      ctx.addIssue({ code: 'custom', path: [field], message: `a ${step.type} step needs "${field}"` });
    }
  };
  if (step.type === 'tool') need('tool');
  if (step.type === 'ask_user') need('question');
  if (step.type === 'subplan') need('goal');
});
export type StepSpec = z.infer<typeof StepSpecSchema>;
