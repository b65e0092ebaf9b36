/**
 * Spin detection (seed 003 §5.2), pure: a task that repeats the same action — the same tool with
 * the same arguments — over and over is probably going round in circles. Counted over the task's
 * own tool steps, most recent first; the model is asked to confirm (`spin_check`) when the count
 * reaches `warnAt`, and again from `stopAt` on.
 */
import type { ExecutionState } from '../planning/execution-state';

export interface SpinLimits {
  /** Identical calls in a row that make the engine ask whether the task spins. @default 3 */
  warnAt: number;
  /** Identical calls in a row from which it asks again; a second confirmed spin aborts the task. @default 5 */
  stopAt: number;
}
export const DEFAULT_SPIN_LIMITS: SpinLimits = { warnAt: 3, stopAt: 5 };

/** How many of the task's latest tool calls in a row are the same call (tool and arguments). */
export function repeatedCalls(state: ExecutionState, taskIndex: string): number {
  const calls = state.steps.filter((s) => s.task === taskIndex && s.type === 'tool').map((s) => `${s.tool ?? ''} ${JSON.stringify(s.args ?? {})}`);
  const last = calls.at(-1);
  if (last === undefined) return 0;
  let n = 0;
  for (let i = calls.length - 1; i >= 0 && calls[i] === last; i--) n++;
  return n;
}

/** Whether the engine should ask the model if the task spins, after its latest call. */
export const shouldCheckSpin = (repeats: number, limits: SpinLimits): boolean => repeats === limits.warnAt || repeats >= limits.stopAt;
