/**
 * Spin detection (seed 003 §5.2), pure: a task that repeats the same action — the same tool with
 * the same arguments, or an action of the same kind that gets it nowhere (a `plan` or `blueprint`
 * refused again) — is probably going round in circles. Counted over the task's own actions, most
 * recent first; the model is asked to confirm (`spin_check`) when the count reaches `warnAt`, and
 * again from `stopAt` on.
 */
import type { ExecutionState } from '../planning/execution-state';

export interface SpinLimits {
  /** Identical calls in a row that make the engine ask whether the task spins. @default 3 */
  warnAt: number;
  /** Identical calls in a row from which it asks again; a second confirmed spin aborts the task. @default 5 */
  stopAt: number;
  /**
   * Calls of one tool in a row, whatever their arguments (seed 003's same-action-type spin), at which —
   * and at each multiple of which — the engine asks the model whether the task spins (its logic spin check). @default 6
   */
  typeAt?: number;
}
export const DEFAULT_SPIN_LIMITS: SpinLimits = { warnAt: 3, stopAt: 5 };
export const DEFAULT_SPIN_TYPE_AT = 6;

/** The engine's own notes on a task (reflections, spin checks): not actions of the model. */
const isNote = (description: string) => /\] (reflection|spin check)$/.test(description);

/** How many of the task's latest actions in a row are the same: one tool call with the same arguments, or a refused action. */
export function repeatedCalls(state: ExecutionState, taskIndex: string): number {
  return latestRun(actionsOf(state, taskIndex, (s) => (s.type === 'tool' ? `tool ${s.tool ?? ''} ${JSON.stringify(s.args ?? {})}` : 'a refused action')));
}

/** How many of the task's latest actions in a row call the same tool, whatever their arguments (seed 003's same-action-type spin). */
export function repeatedActionType(state: ExecutionState, taskIndex: string): number {
  return latestRun(actionsOf(state, taskIndex, (s) => (s.type === 'tool' ? `tool ${s.tool ?? ''}` : 'a refused action')));
}

/** Whether the same-action-type count asks for a spin check: at `typeAt` and each multiple of it. */
export const shouldCheckTypeSpin = (repeats: number, limits: SpinLimits): boolean => {
  const at = limits.typeAt ?? DEFAULT_SPIN_TYPE_AT;
  return repeats >= at && repeats % at === 0;
};

/** The task's model actions (tool calls and refused actions), oldest first, each as `key` names it. */
function actionsOf(state: ExecutionState, taskIndex: string, key: (step: ExecutionState['steps'][number]) => string): string[] {
  return state.steps.filter((s) => s.task === taskIndex && !isNote(s.description) && (s.type === 'tool' || (s.type === 'reason' && s.status === 'failed'))).map(key);
}

/** How many of the latest entries in a row equal the last. */
function latestRun(calls: readonly string[]): number {
  const last = calls.at(-1);
  if (last === undefined) return 0;
  let n = 0;
  for (let i = calls.length - 1; i >= 0 && calls[i] === last; i--) n++;
  return n;
}

/** Whether the engine should ask the model if the task spins, after its latest call. */
export const shouldCheckSpin = (repeats: number, limits: SpinLimits): boolean => repeats === limits.warnAt || repeats >= limits.stopAt;
