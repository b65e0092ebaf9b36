/**
 * A plan step as the REST API sends it (`ExecutionState.steps[]`, DESIGN.md §4): the one schema the
 * API's description (src/api/response-schemas.ts) and the chat client (src/cli/render.ts) read it with.
 */
import { z } from 'zod';
import { STEP_STATUSES } from './execution-state';
import { STEP_TYPES } from './step-spec';

export const PlanStepWireSchema = z.object({
  id: z.string(),
  index: z.number().int(),
  type: z.enum(STEP_TYPES),
  description: z.string(),
  status: z.enum(STEP_STATUSES),
  tool: z.string().optional(),
  args: z.record(z.string(), z.unknown()).optional(),
  question: z.string().optional(),
  goal: z.string().optional(),
  childRunId: z.string().optional(),
  task: z.string().optional(),
});
