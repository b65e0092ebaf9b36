/**
 * The planner's prompt (pure), shared by its calls (live_state_check, execution_plan,
 * replan_decision, reasoning, final_answer): every one is rendered from one PlannerContext — the
 * run's ExecutionState, the tools, and what this call is for — and ends with the call's instruction.
 */
import { DATA_IS_NOT_INSTRUCTIONS } from '../memory/parser';
import type { ExecutionState, Observation, PlanStep } from '../planning/execution-state';
import { renderSessionContext, type SessionContext } from '../sessions/session-state';
import { agentMessages } from '../agents/names';
import { offForRun } from '../planning/capabilities';
import type { ChatMessage } from '../text/chat-message';
import type { ContextKind } from './call';
import type { PlannerCallName } from './names';
import { renderTools, type ToolDescription } from './tool-description';

export interface PlannerContext {
  call: PlannerCallName;
  state: ExecutionState;
  tools: ToolDescription[];
  /** The step a reasoning or final-answer call is for. */
  step?: PlanStep;
  /** The run's working memory rendered from its memory thread within the token budget; replaces the raw observations. */
  memory?: { messages: ChatMessage[]; tokens: number };
  maxSteps: number;
  maxDepth: number;
  /** The conversation this run belongs to (its session's memory thread): recent turns with their ids, compressed ones by id, and TaskState. */
  session?: SessionContext;
}

export const PLANNER_CONTEXT: ContextKind<PlannerContext> = {
  label: 'a PlannerContext (state, tools)',
  is: (context): context is PlannerContext => 'state' in context && !('tree' in context),
};

const SYSTEM = `You are the planner of Threadline, an agent runtime. You turn a user's goal into a short plan of steps and adapt it as observations arrive.
Step types:
- "tool": call one tool; set "tool" (its name) and "args" (an object matching its parameters).
- "reason": think about the observations so far; no side effects.
- "ask_user": ask the person a question when the goal is unclear or a decision is theirs; set "question".
- "respond": give the final answer to the user; ends the run. A plan normally ends with one.
- "subplan": delegate a self-contained part of the goal to a nested plan; set "goal".
Rules: use only the tools listed; never invent tool results; ask the user rather than guess missing facts; keep plans short. Reply with JSON only, matching the schema you are given.
${DATA_IS_NOT_INSTRUCTIONS}`;

function renderStep(step: PlanStep): string {
  const detail =
    step.type === 'tool'
      ? ` ${step.tool ?? '?'}(${JSON.stringify(step.args ?? {})})`
      : step.type === 'ask_user'
        ? ` "${step.question ?? ''}"`
        : step.type === 'subplan'
          ? ` goal: ${step.goal ?? ''}`
          : '';
  return `${step.id} [${step.status}] ${step.type}${detail} — ${step.description}`;
}

const renderObservation = (o: Observation) => `${o.stepId ?? '-'} ${o.kind}: ${o.content}`;

/** The latest question and the person's reply to it, so a short reply ("yes", "the second one") is read in context. */
export function resumeContext(state: ExecutionState): string | null {
  const reply = [...state.observations].reverse().find((o) => o.kind === 'user_reply');
  if (!reply || !reply.stepId) return null;
  const question = state.steps.find((s) => s.id === reply.stepId)?.question;
  return `You asked the user: "${question ?? '(question not recorded)'}". The user replied: "${reply.content}". Continue the plan in the light of this reply.`;
}

/** A planner call's messages: the rules and tools, the run so far, then the call's `instruction`. */
export function plannerMessages(ctx: PlannerContext, instruction: string): ChatMessage[] {
  const { state } = ctx;
  const parts: string[] = [`Goal: ${state.goal}`];
  if (state.parentRunId) parts.push(`This is a sub-plan (depth ${state.depth}) of run ${state.parentRunId}.`);
  // Seed 000's dynamic state refresh: once live snapshots were taken, TaskState's older conclusions stay out.
  const refreshed = state.observations.some((o) => o.kind === 'snapshot');
  const conversation = ctx.session ? renderSessionContext(refreshed ? { ...ctx.session, taskState: null } : ctx.session) : null;
  if (conversation) parts.push(conversation);
  const executed = state.steps.filter((s) => s.status !== 'pending').length;
  parts.push(`Steps used: ${executed} of at most ${ctx.maxSteps}. Sub-plans allowed: ${state.depth < ctx.maxDepth ? 'yes' : 'no'}.`);
  const off = offForRun(state.allow);
  if (off) parts.push(off);
  if (state.steps.length > 0) parts.push(`Plan:\n${state.steps.map(renderStep).join('\n')}`);
  // With a memory thread, the observations reach the model as working memory (above), within budget.
  if (!ctx.memory && state.observations.length > 0) parts.push(`Observations:\n${state.observations.map(renderObservation).join('\n')}`);
  const resume = resumeContext(state);
  if (resume) parts.push(`Resume context: ${resume}`);
  if (ctx.step) parts.push(`Current step: ${renderStep(ctx.step)}`);
  parts.push(instruction);
  return [
    { role: 'system', content: `${SYSTEM}\n\nTools:\n${renderTools(ctx.tools)}` },
    // A sub-agent's run: its instructions, right after the rules every run follows (once: its thread may hold them).
    ...agentMessages(state.agent, ctx.memory),
    ...(ctx.memory ? [{ role: 'system' as const, content: 'Working memory of this run follows.' }, ...ctx.memory.messages] : []),
    { role: 'user', content: parts.join('\n\n') },
  ];
}
