/**
 * Capability switches of a run (seed 003's `allowToolCall`, `allowUserInteract`, `allowPlanAndExec`,
 * `allowAIForge`, `allowRAG`): what a run may do, all on unless its starter turns some off — e.g.
 * `askUser: false` for a run nobody attends (a scheduled one). Its prompts say what is off, and the
 * engines refuse an action that is off as a failed step the model sees. Pure.
 */
export const CAPABILITIES = ['tools', 'askUser', 'plan', 'blueprints', 'recall'] as const;
export type Capability = (typeof CAPABILITIES)[number];
/** Switches given (absent: on). */
export type Allow = Partial<Record<Capability, boolean>>;

/** What each switch governs, as the prompts and refusals name it. */
const WHAT: Record<Capability, string> = {
  tools: 'calling tools and sub-agents',
  askUser: 'asking the person (ask_user): nobody is there to answer',
  plan: 'sub-plans and planning a task into subtasks',
  blueprints: 'invoking blueprints',
  recall: 'recalling long-term memory',
};

export const allows = (allow: Allow | null | undefined, capability: Capability): boolean => allow?.[capability] !== false;

/** What each kind of step (the planner's) or action (a tree iteration's) needs. */
const NEEDS: Partial<Record<string, Capability>> = { tool: 'tools', ask_user: 'askUser', subplan: 'plan', plan: 'plan', blueprint: 'blueprints' };

/** The capability a step or action of `kind` needs that is off for the run, or null when it may go ahead. */
export function offFor(kind: string, allow: Allow | null | undefined): Capability | null {
  const needs = NEEDS[kind];
  return needs !== undefined && !allows(allow, needs) ? needs : null;
}

/** The prompt line naming what is off for the run, or null when everything is on. */
export function offForRun(allow: Allow | null | undefined): string | null {
  const off = CAPABILITIES.filter((c) => !allows(allow, c));
  return off.length ? `Off for this run — do not use: ${off.map((c) => WHAT[c]).join('; ')}.` : null;
}

/** The error a refused action observes. */
export const refusedAction = (capability: Capability): string => `refused: ${WHAT[capability]} is off for this run; carry on without it`;
