/**
 * Seed 003's self-reflection (the REFLECT phase of its OODA loop), pure: after an action the engine
 * decides how deep to reflect. A failed action is examined for its lesson (`deep`); with periodic
 * reflection a task also takes stock every `every` iterations (`standard`), and once more when one
 * iteration is left before its limit (`critical`: finish with what it has). The switch turns it off.
 */

export type ReflectionMode = 'off' | 'failures' | 'periodic';
export type ReflectionLevel = 'none' | 'standard' | 'deep' | 'critical';

export interface ReflectionSettings {
  /** `off`: never; `failures`: after a failed action; `periodic`: that, and the stock-takings below (`REFLECTION`). */
  mode: ReflectionMode;
  /** Periodic mode: a task takes stock after every this many iterations (`REFLECTION_EVERY`; 0: only before its limit). */
  every: number;
}

/** Runs started before the setting existed reflect after failed actions only. */
export const FAILURES_ONLY: ReflectionSettings = { mode: 'failures', every: 0 };

/** How deep to reflect after a task's latest action (`iterations`: the task's iterations so far). */
export function reflectionLevel(settings: ReflectionSettings, at: { failed: boolean; iterations: number; maxIterations: number }): ReflectionLevel {
  if (settings.mode === 'off') return 'none';
  if (at.failed) return 'deep';
  if (settings.mode !== 'periodic') return 'none';
  if (at.maxIterations > 2 && at.iterations === at.maxIterations - 1) return 'critical';
  if (settings.every > 0 && at.iterations > 0 && at.iterations % settings.every === 0) return 'standard';
  return 'none';
}

/** What each level asks of the model (`reflection` {assessment, lesson}). */
export const REFLECTION_ASKS: Record<Exclude<ReflectionLevel, 'none'>, string> = {
  deep: 'The last action failed. Say what went wrong and the lesson for the next attempt.',
  standard: 'Take stock of the current task: is it getting closer to its goal? Assess the progress so far and say what to do differently, if anything, as the lesson.',
  critical: 'One iteration is left before the current task hits its limit. Assess what it has achieved, and as the lesson say how to finish it with the next action.',
};
