/**
 * The model calls (DESIGN.md "Model wire protocol"), one file each in this folder: every call's wire
 * name, reply schema, prompt and offline demo answer. Validation (src/llm/structured.ts), the JSON
 * Schema sent in `response_format` and the demo model (src/llm/demo-provider.ts) all read this table,
 * so a call's parts never drift apart.
 */
import { z } from 'zod';
import type { ChatMessage } from '../text/chat-message';
import type { ModelCall } from './call';
import { approvalEdit, type ApprovalEditContext } from './approval-edit';
import { blueprintParams } from './blueprint-params';
import { executionPlan } from './execution-plan';
import { finalAnswer } from './final-answer';
import { liveStateCheck } from './live-state-check';
import { memoryExtraction, memoryPromotion, type MemoryPassContext } from './memory-passes';
import { memorySummary, type SummaryContext } from './memory-summary';
import { messageRoute, type MessageRouteContext } from './message-route';
import type { PlannerContext } from './planner';
import { reactAction } from './react-action';
import { reasoning } from './reasoning';
import { reflection } from './reflection';
import { replanDecision } from './replan-decision';
import { spinCheck } from './spin-check';
import { taskStateSummary, type TaskStateSummaryContext } from './task-state-summary';
import { taskSummary } from './task-summary';
import { taskTree } from './task-tree';
import type { TreeContext } from './tree';

/**
 * The version of the prompts (planner, tree engine, summaries). Bump it when a change of prompts
 * would make a plan made with the old ones wrong: runs planned before it stop as stale.
 */
export const PROMPT_VERSION = '1';

/** Every call by its wire name. */
export const CALLS = {
  task_tree: taskTree,
  react_action: reactAction,
  spin_check: spinCheck,
  reflection,
  task_summary: taskSummary,
  blueprint_params: blueprintParams,
  execution_plan: executionPlan,
  replan_decision: replanDecision,
  reasoning,
  final_answer: finalAnswer,
  memory_summary: memorySummary,
  task_state_summary: taskStateSummary,
  live_state_check: liveStateCheck,
  memory_extraction: memoryExtraction,
  memory_promotion: memoryPromotion,
  message_route: messageRoute,
  approval_edit: approvalEdit,
} as const;

export type ModelCallName = keyof typeof CALLS;
export type ModelReply<N extends ModelCallName> = z.infer<(typeof CALLS)[N]['schema']>;
/** What any call is made from: the structured context its messages were rendered from. */
export type CallContext = PlannerContext | TreeContext | SummaryContext | TaskStateSummaryContext | MemoryPassContext | MessageRouteContext | ApprovalEditContext;

/** A call whose name is known only at run time. */
type AnyCall = ModelCall<string, z.ZodType, { call: string }>;
const callNamed = (name: ModelCallName): AnyCall => CALLS[name] as unknown as AnyCall;

/** The messages of a planner call (live_state_check, execution_plan, replan_decision, reasoning, final_answer). */
export const buildMessages = (ctx: PlannerContext): ChatMessage[] => callNamed(ctx.call).messages(ctx);

/** The messages of a tree engine call (its calls and its final answer). */
export const buildTreeMessages = (ctx: TreeContext): ChatMessage[] => callNamed(ctx.call).messages(ctx);

/** Validates a reply against its call's schema. */
export const parseCallReply = <N extends ModelCallName>(name: N, json: unknown) => (CALLS[name].schema as unknown as z.ZodType<ModelReply<N>>).safeParse(json);

/** The offline demo model's reply to a call, read from the call's context; a context of the wrong kind is a programming error. */
export function demoReply(name: ModelCallName, context: CallContext): unknown {
  const call = callNamed(name);
  if (!call.context.is(context)) throw new Error(`${/^[aeiou]/.test(name) ? 'an' : 'a'} ${name} request needs ${call.context.label}`);
  return call.demo(context);
}

const jsonSchemaCache = new Map<ModelCallName, Record<string, unknown>>();

/** JSON Schema of a call's reply, as sent in `response_format.json_schema.schema`. */
export function replyJsonSchema(name: ModelCallName): Record<string, unknown> {
  let schema = jsonSchemaCache.get(name);
  if (!schema) {
    // Refinements are not expressible in JSON Schema; zod re-checks them on receipt.
    schema = z.toJSONSchema(CALLS[name].schema, { unrepresentable: 'any' }) as Record<string, unknown>;
    delete schema.$schema;
    jsonSchemaCache.set(name, schema);
  }
  return schema;
}
