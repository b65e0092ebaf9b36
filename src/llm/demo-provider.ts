/**
 * The offline demo model: deterministic rules instead of a language model, so
 * Threadline runs on a fresh machine without a key. It plans arithmetic, notes
 * and time requests with the built-in tools, asks when it cannot tell what is
 * wanted, and says in every answer that it is the demo model.
 */
import type { ExecutionState } from '../planning/execution-state';
import type { ReplanDecisionReply, StepSpec, TaskStateSummaryReply } from '../planning/schemas';
import { countTextTokens } from '../memory/tokens';
import { CLARIFY, demoIntents, describeToolResult, reminderOf, TAG } from './demo-intents';
import { demoReactAction, demoTaskSummary, demoTaskTree, demoTreeAnswer } from './demo-tree';
import { demoMessageRoute, isMessageRouteContext } from './message-route';
import { demoApprovalEdit, isApprovalEditContext } from './approval-edit';
import { isTreeContext, type TreeContext } from './tree-prompts';
import { demoMemoryPass } from '../longterm/passes';
import { isMemoryPassContext, isSummaryContext, isTaskStateSummaryContext, type ModelProvider, type ModelRequest, type TaskStateSummaryContext } from './provider';

export const DEMO_LABEL = 'offline-demo';
const SUMMARY_TAG = '[offline demo summary]';
const SENTENCE_CHARS = 200;

const withAnswer = (steps: StepSpec[]): StepSpec[] => [...steps, { type: 'respond', description: 'Answer the user' }];

function describeObservation(state: ExecutionState, stepId: string | null, content: string): string | null {
  const step = state.steps.find((s) => s.id === stepId);
  if (!step || step.type !== 'tool') return null;
  return describeToolResult(step, content);
}

function answer(state: ExecutionState): string {
  // A reminder's own run (scheduled by `schedule_run`): the reminder is the answer.
  const reminder = reminderOf(state.goal);
  if (reminder !== null && state.observations.length === 0) return `${TAG} Reminder: ${reminder}`;
  const lines = state.observations
    .map((o) => (o.kind === 'tool' ? describeObservation(state, o.stepId, o.content) : o.kind === 'error' ? `Something went wrong: ${o.content}` : o.kind === 'subplan' ? o.content : null))
    .filter((l): l is string => l !== null);
  return `${TAG} ${lines.length > 0 ? lines.join(' ') : 'I could not find anything I know how to do in that request.'}`;
}

function replan(state: ExecutionState): ReplanDecisionReply {
  const last = state.observations[state.observations.length - 1];
  if (last?.kind === 'user_reply') {
    const steps = demoIntents(last.content);
    return steps.length > 0
      ? { decision: 'replace_remaining', steps: withAnswer(steps) }
      : { decision: 'finish', answer: `${TAG} I still could not tell what to do with "${last.content}". ${CLARIFY}` };
  }
  if (!state.steps.some((s) => s.status === 'pending')) return { decision: 'finish', answer: answer(state) };
  return { decision: 'continue' };
}

/** The first sentence of a text, whitespace collapsed, at most SENTENCE_CHARS characters. */
function firstSentence(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  const sentence = /^.*?[.!?](?=\s|$)/.exec(flat)?.[0] ?? flat;
  return sentence.length > SENTENCE_CHARS ? `${sentence.slice(0, SENTENCE_CHARS - 1).trimEnd()}…` : sentence;
}

/**
 * The demo's `memory_summary`: extractive, not abstractive — the first sentence
 * of each text, labelled, cut to fit `maxTokens`. Deterministic.
 */
export function demoSummary(texts: readonly string[], maxTokens: number): string {
  const full = [SUMMARY_TAG, ...texts.map(firstSentence).filter((s) => s !== '')].join(' ');
  if (countTextTokens(full) <= maxTokens) return full;
  // The longest prefix (plus an ellipsis) that fits, found by bisection on its length.
  const fits = (length: number) => countTextTokens(`${full.slice(0, length).trimEnd()}…`) <= maxTokens;
  let lo = SUMMARY_TAG.length;
  let hi = full.length;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (fits(mid)) lo = mid;
    else hi = mid - 1;
  }
  return `${full.slice(0, lo).trimEnd()}…`;
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

/** The demo's reply to a tree engine call. */
function demoTreeReply(ctx: TreeContext): unknown {
  switch (ctx.call) {
    case 'task_tree':
      return demoTaskTree(ctx);
    case 'react_action':
      return demoReactAction(ctx);
    case 'spin_check':
      return { spinning: true, reason: `${TAG} the same action again without new information.` };
    case 'reflection':
      return ctx.reflection && ctx.reflection !== 'deep'
        ? { assessment: `${TAG} task ${ctx.task?.index ?? '?'} has had ${ctx.task?.iterations ?? 0} iteration(s).`, lesson: 'Finish the task as soon as its goal is met.' }
        : { assessment: `${TAG} the last action failed.`, lesson: 'Check the arguments against the tool description before trying again.' };
    case 'task_summary':
      return { summary: demoTaskSummary(ctx) };
    case 'blueprint_params':
      return { params: {} };
    case 'final_answer':
      return { answer: demoTreeAnswer(ctx) };
  }
}

export class DemoProvider implements ModelProvider {
  readonly label = DEMO_LABEL;

  async complete(request: ModelRequest): Promise<string> {
    if (isSummaryContext(request.context)) {
      return JSON.stringify({ summary: demoSummary(request.context.texts, request.context.maxTokens) });
    }
    if (isTaskStateSummaryContext(request.context)) return JSON.stringify(demoTaskState(request.context));
    if (isMemoryPassContext(request.context)) return JSON.stringify(demoMemoryPass(request.context));
    if (isTreeContext(request.context)) return JSON.stringify(demoTreeReply(request.context));
    if (isMessageRouteContext(request.context)) return JSON.stringify(demoMessageRoute(request.context));
    if (isApprovalEditContext(request.context)) return JSON.stringify(demoApprovalEdit(request.context));
    const { state } = request.context;
    switch (request.name) {
      case 'memory_summary':
        throw new Error('a memory_summary request needs a SummaryContext (texts, maxTokens)');
      case 'task_state_summary':
        throw new Error('a task_state_summary request needs a TaskStateSummaryContext (previous, turns)');
      case 'memory_extraction':
      case 'memory_promotion':
        throw new Error(`a ${request.name} request needs a MemoryPassContext (goals, transcript)`);
      case 'message_route':
        throw new Error('a message_route request needs a MessageRouteContext (text, waiting)');
      case 'approval_edit':
        throw new Error('an approval_edit request needs an ApprovalEditContext (tool, args, text)');
      case 'live_state_check': {
        // The demo's rule: a live tool concerns a goal that names it (e.g. "balance" for account_balance).
        const words = state.goal.toLowerCase();
        const live = request.context.tools.filter((t) => t.live && t.name.split('_').some((w) => w.length > 3 && words.includes(w)));
        return JSON.stringify({ tools: live.map((t) => t.name) });
      }
      case 'execution_plan': {
        const steps = demoIntents(state.goal);
        return JSON.stringify({
          steps: steps.length > 0 || reminderOf(state.goal) !== null ? withAnswer(steps) : [{ type: 'ask_user', description: 'Ask what the user wants', question: CLARIFY }],
        });
      }
      case 'replan_decision':
        return JSON.stringify(replan(state));
      case 'reasoning':
        return JSON.stringify({ thought: `${TAG} ${state.observations.length} observation(s) so far.` });
      case 'final_answer':
        return JSON.stringify({ answer: answer(state) });
      case 'task_tree':
      case 'react_action':
      case 'spin_check':
      case 'reflection':
      case 'task_summary':
      case 'blueprint_params':
        throw new Error(`a ${request.name} request needs a TreeContext`);
    }
  }
}
