/**
 * `task_state_summary` (seed 000's compression): older turns of a conversation folded into the
 * TaskState, under seed 000's rules for what belongs there. Pure; the session's activity sends it
 * with `completeStructured`.
 */
import { z } from 'zod';
import type { ChatMessage } from '../text/chat-message';
import { renderTurn } from '../sessions/session-state';
import type { TaskState, Turn } from '../sessions/session-model';
import { modelCall, type ContextKind } from './call';

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

/** What a `task_state_summary` call is made from: the session's TaskState so far and the older turns to fold into it. */
export interface TaskStateSummaryContext {
  call: 'task_state_summary';
  previous: TaskStateSummaryReply;
  turns: { role: 'user' | 'assistant'; text: string }[];
}

/** Tells a session's TaskState summary request from the others. */
export function isTaskStateSummaryContext(context: { call: string }): context is TaskStateSummaryContext {
  return context.call === 'task_state_summary' && 'turns' in context;
}

export const TASK_STATE_SYSTEM = `You maintain the TaskState of a conversation between a person and an AI agent: a durable, structured summary of what still matters across turns.
You are given the current TaskState and older turns that are about to leave the recent history. Fold what matters in those turns into a new TaskState.
Keep (durable context only):
- CurrentGoal: the person's goal that still matters across turns.
- ActiveFlow: the high-level flow under way, if any.
- OpenLoops: high-level unresolved issues that still matter across turns.
- ImportantFacts: facts the person stated that tools cannot cheaply re-fetch (names, preferences, identifiers, constraints). Carry every earlier fact forward unless the person corrected or withdrew it.
- LastDecision: the latest important decision and why it was made.
Never put in the TaskState:
- live balances, current positions, current market prices or any other state that changes outside the chat;
- step-level pending items ("wait for the API key", "call get_exchange_configs") — they belong to the running plan;
- conclusions about whether tools, models, exchanges or configuration exist or are set up — they must be checked with tools at planning time.
Reply with JSON only: {"CurrentGoal": "...", "ActiveFlow": "...", "OpenLoops": [...], "ImportantFacts": [...], "LastDecision": "..."}.`;

export const withoutTimestamp = ({ CurrentGoal, ActiveFlow, OpenLoops, ImportantFacts, LastDecision }: TaskState): TaskStateSummaryReply => ({
  CurrentGoal,
  ActiveFlow,
  OpenLoops,
  ImportantFacts,
  LastDecision,
});

export function taskStateSummaryContext(previous: TaskState, turns: readonly Turn[]): TaskStateSummaryContext {
  return { call: 'task_state_summary', previous: withoutTimestamp(previous), turns: turns.map((t) => ({ role: t.role, text: t.text })) };
}

export function taskStateSummaryMessages(context: TaskStateSummaryContext): ChatMessage[] {
  return [
    { role: 'system', content: TASK_STATE_SYSTEM },
    {
      role: 'user',
      content: `Current TaskState:\n${JSON.stringify(context.previous, null, 1)}\n\nOlder turns to fold in (oldest first):\n${context.turns.map(renderTurn).join('\n')}`,
    },
  ];
}

/** Live state changes outside the chat: never a durable fact (seed 000). */
const LIVE = /\b(balances?|positions?|prices?)\b/i;
const FACT = /\b(?:my\s+[\w -]{1,40}?\s+(?:is|are|=)\s+[^.!?\n]+|remember(?: that)?\s+[^.!?\n]+)/gi;

/**
 * The demo's `task_state_summary`: keeps the earlier facts and adds the user's statements that look
 * like durable facts ("my X is Y", "remember …") but not live state (balances, positions, prices);
 * the goal is the latest request. Deterministic.
 */
export function demoTaskState(context: Pick<TaskStateSummaryContext, 'previous' | 'turns'>): TaskStateSummaryReply {
  const facts = [...context.previous.ImportantFacts];
  for (const turn of context.turns) {
    if (turn.role !== 'user') continue;
    for (const match of turn.text.matchAll(FACT)) {
      const fact = match[0].trim();
      if (LIVE.test(fact)) continue;
      if (!facts.some((f) => f.toLowerCase() === fact.toLowerCase())) facts.push(fact);
    }
  }
  const lastRequest = [...context.turns].reverse().find((t) => t.role === 'user')?.text ?? context.previous.CurrentGoal;
  const lastAnswer = [...context.turns].reverse().find((t) => t.role === 'assistant')?.text;
  return {
    CurrentGoal: lastRequest.slice(0, 2000),
    ActiveFlow: context.previous.ActiveFlow,
    OpenLoops: context.previous.OpenLoops,
    ImportantFacts: facts.slice(-50),
    LastDecision: (lastAnswer ?? context.previous.LastDecision).slice(0, 2000),
  };
}

const TASK_STATE_CONTEXT: ContextKind<TaskStateSummaryContext> = { label: 'a TaskStateSummaryContext (previous, turns)', is: isTaskStateSummaryContext };

export const taskStateSummary = modelCall({
  name: 'task_state_summary',
  schema: TaskStateSummaryReplySchema,
  context: TASK_STATE_CONTEXT,
  messages: taskStateSummaryMessages,
  demo: (ctx) => demoTaskState(ctx),
});
