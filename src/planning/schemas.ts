/**
 * Wire schemas of the model protocol (DESIGN.md §4 "Model wire protocol").
 * Each reply is validated with these zod schemas; the JSON Schema sent to the
 * model in `response_format` is derived from them, so the two never drift.
 */
import { z } from 'zod';
import { BlueprintParamsReplySchema, ReactActionReplySchema, ReflectionReplySchema, SpinCheckReplySchema, TaskSummaryReplySchema, TaskTreeReplySchema } from './tree-schemas';
import { MemoryExtractionSchema, MemoryPromotionSchema } from './memory-schemas';

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

export const ExecutionPlanReplySchema = z.object({
  steps: z.array(StepSpecSchema).min(1).max(50),
});
export type ExecutionPlanReply = z.infer<typeof ExecutionPlanReplySchema>;

export const REPLAN_DECISIONS = ['continue', 'replace_remaining', 'ask_user', 'finish'] as const;
export type ReplanDecisionKind = (typeof REPLAN_DECISIONS)[number];

export const ReplanDecisionReplySchema = z
  .object({
    decision: z.enum(REPLAN_DECISIONS),
    steps: z.array(StepSpecSchema).max(50).optional(),
    question: z.string().min(1).max(4000).optional(),
    answer: z.string().min(1).optional(),
  })
  .superRefine((reply, ctx) => {
    if (reply.decision === 'replace_remaining' && (reply.steps === undefined || reply.steps.length === 0)) {
      ctx.addIssue({ code: 'custom', path: ['steps'], message: 'replace_remaining needs a non-empty "steps"' });
    }
    if (reply.decision === 'ask_user' && reply.question === undefined) {
      ctx.addIssue({ code: 'custom', path: ['question'], message: 'ask_user needs "question"' });
    }
    if (reply.decision === 'finish' && reply.answer === undefined) {
      ctx.addIssue({ code: 'custom', path: ['answer'], message: 'finish needs "answer"' });
    }
  });
export type ReplanDecisionReply = z.infer<typeof ReplanDecisionReplySchema>;

export const ReasoningReplySchema = z.object({ thought: z.string().min(1) });
export type ReasoningReply = z.infer<typeof ReasoningReplySchema>;

export const FinalAnswerReplySchema = z.object({ answer: z.string().min(1) });
export type FinalAnswerReply = z.infer<typeof FinalAnswerReplySchema>;

/** A faithful summary of memory chunks, made when a thread passes its soft token limit (compaction). */
export const MemorySummaryReplySchema = z.object({ summary: z.string().min(1) });
export type MemorySummaryReply = z.infer<typeof MemorySummaryReplySchema>;

/**
 * Seed 000's TaskState as the model writes it when older turns of a session are compressed
 * (`task_state_summary`); the session stamps `UpdatedAt` itself.
 */
export const TaskStateSummaryReplySchema = z.object({
  CurrentGoal: z.string().max(2000),
  ActiveFlow: z.string().max(2000),
  OpenLoops: z.array(z.string().min(1).max(1000)).max(20),
  ImportantFacts: z.array(z.string().min(1).max(1000)).max(50),
  LastDecision: z.string().max(2000),
});
export type TaskStateSummaryReply = z.infer<typeof TaskStateSummaryReplySchema>;

/**
 * `message_route` (seed 000's routing): a message sent while runs of the session wait is a reply
 * (to `runId`'s question; the newest when absent) or a new request.
 */
export const MessageRouteReplySchema = z.object({ route: z.enum(['reply', 'new_request']), runId: z.string().max(300).optional() });
export type MessageRouteReply = z.infer<typeof MessageRouteReplySchema>;

/**
 * `approval_edit` (issue 28): a person answered a tool call held for approval with a change in words;
 * the reply is the call's new arguments (checked against the tool's schema before the call runs).
 */
export const ApprovalEditReplySchema = z.object({ args: z.record(z.string(), z.unknown()) });
export type ApprovalEditReply = z.infer<typeof ApprovalEditReplySchema>;

/** The call kinds of the wire protocol, each a name and its reply schema. */
/** `live_state_check`: which live tools a request concerns, so their state is refreshed before planning. */
export const LiveStateCheckReplySchema = z.object({ tools: z.array(z.string().min(1).max(100)).max(20) });

export const MODEL_CALLS = {
  task_tree: TaskTreeReplySchema,
  react_action: ReactActionReplySchema,
  spin_check: SpinCheckReplySchema,
  reflection: ReflectionReplySchema,
  task_summary: TaskSummaryReplySchema,
  blueprint_params: BlueprintParamsReplySchema,
  execution_plan: ExecutionPlanReplySchema,
  replan_decision: ReplanDecisionReplySchema,
  reasoning: ReasoningReplySchema,
  final_answer: FinalAnswerReplySchema,
  memory_summary: MemorySummaryReplySchema,
  task_state_summary: TaskStateSummaryReplySchema,
  live_state_check: LiveStateCheckReplySchema,
  memory_extraction: MemoryExtractionSchema,
  memory_promotion: MemoryPromotionSchema,
  message_route: MessageRouteReplySchema,
  approval_edit: ApprovalEditReplySchema,
} as const;
export type ModelCallName = keyof typeof MODEL_CALLS;
/** The calls seed 003's tree engine makes (with `final_answer`), each from a TreeContext. */
export const TREE_CALLS = ['task_tree', 'react_action', 'spin_check', 'reflection', 'task_summary', 'blueprint_params'] as const;
export type TreeCallName = (typeof TREE_CALLS)[number];
/** The calls the planner makes from a PlannerContext (all but the memory service's, the session's, long-term memory's and the tree engine's). */
export type PlannerCallName = Exclude<ModelCallName, 'memory_summary' | 'task_state_summary' | 'message_route' | 'approval_edit' | MemoryPassName | TreeCallName>;
/** Long-term memory's passes after an invocation and at a conversation's end (seed 002). */
export type MemoryPassName = 'memory_extraction' | 'memory_promotion';
export type ModelReply<N extends ModelCallName> = z.infer<(typeof MODEL_CALLS)[N]>;

const jsonSchemaCache = new Map<ModelCallName, Record<string, unknown>>();

/** JSON Schema of a call's reply, as sent in `response_format.json_schema.schema`. */
export function replyJsonSchema(name: ModelCallName): Record<string, unknown> {
  let schema = jsonSchemaCache.get(name);
  if (!schema) {
    // Refinements are not expressible in JSON Schema; zod re-checks them on receipt.
    schema = z.toJSONSchema(MODEL_CALLS[name], { unrepresentable: 'any' }) as Record<string, unknown>;
    delete schema.$schema;
    jsonSchemaCache.set(name, schema);
  }
  return schema;
}
