/**
 * The `task_state_summary` prompt (seed 000's compression): older turns of a
 * conversation folded into the TaskState, under seed 000's rules for what
 * belongs there. Pure; the session's activity sends it with `completeStructured`.
 */
import type { ChatMessage } from '../text/chat-message';
import type { TaskStateSummaryContext } from './provider';
import type { TaskStateSummaryReply } from '../planning/schemas';
import { renderTurn } from '../sessions/session-state';
import type { TaskState, Turn } from '../sessions/session-model';

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
