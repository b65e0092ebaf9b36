/**
 * What both engines build from a run's input: its first state, and a sub-agent's child run.
 * Pure and zod-free (the engines run in the workflow sandbox).
 */
import type { AgentInvocation } from '../agents/names';
import type { NewRunInput } from '../planning/execution-state';
import type { PlanExecutionInput, TreeLimits } from './contract';

/** The engine a starter asks for: seed 000's planner, seed 003's task tree, or seed 003's ReAct first (a tree run that plans when needed). */
export type EngineChoice = 'plan' | 'tree' | 'react';

/** A run's input fields for the engine chosen (none for the planner, so plan runs keep the input they always had). */
export function engineFields(choice: EngineChoice | undefined, treeLimits: TreeLimits | undefined): Pick<PlanExecutionInput, 'engine' | 'entry' | 'treeLimits'> {
  if (choice !== 'tree' && choice !== 'react') return {};
  return { engine: 'tree', ...(choice === 'react' ? { entry: 'react' as const } : {}), ...(treeLimits ? { treeLimits } : {}) };
}

/** The first state's fields from the run's input (the model is named by the first model call). */
export function newRunOf(input: PlanExecutionInput & { runId: string }): NewRunInput {
  return {
    runId: input.runId,
    userId: input.userId,
    goal: input.goal,
    sessionId: input.sessionId,
    parentRunId: input.parentRunId,
    depth: input.depth,
    model: '',
    sessionThreadId: input.sessionThreadId ?? null,
    ...(input.agent ? { agent: input.agent } : {}),
    ...(input.allow ? { allow: input.allow } : {}),
  };
}

/**
 * A sub-agent's child run: the task is its goal, it carries the agent, runs on the profile's engine
 * and starts afresh (its own memory thread, no session conversation).
 */
export function agentRunInput(parent: { input: PlanExecutionInput; runId: string; depth: number }, call: AgentInvocation): PlanExecutionInput {
  return {
    userId: parent.input.userId,
    goal: call.task,
    sessionId: parent.input.sessionId ?? null,
    parentRunId: parent.runId,
    depth: parent.depth + 1,
    limits: parent.input.limits,
    agent: call.agent,
    relayQuestions: true,
    // What the run may not do, its sub-agents may not either.
    ...(parent.input.allow ? { allow: parent.input.allow } : {}),
    // So do the calls it holds for approval.
    ...(parent.input.approval ? { approval: parent.input.approval } : {}),
    // A run under review has its sub-agents' plans reviewed too.
    ...(parent.input.review ? { review: true } : {}),
    ...engineFields(call.engine, parent.input.treeLimits),
  };
}
