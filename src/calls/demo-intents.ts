/**
 * What the offline demo model understands of a request: arithmetic, notes, the time and waits, as
 * tool steps, and how it puts a tool's result in a sentence. Shared by the demo answers of the
 * planner's calls and the tree engine's. Pure.
 */
import type { PlanStep } from '../planning/execution-state';
import type { StepSpec } from '../planning/step-spec';

/** Every demo answer says it comes from the demo model. */
export const TAG = '[offline demo model]';
export const CLARIFY =
  'I am the offline demo model, so I can only calculate, keep notes and tell the time. What would you like me to do? ' +
  '(e.g. "what is 12*7", "remember that my color is green", "what is my color", "what time is it in Europe/Paris")';

/** A demo plan's steps, then the answer. */
export const withAnswer = (steps: StepSpec[]): StepSpec[] => [...steps, { type: 'respond', description: 'Answer the user' }];

/** What a reminder's own run (goal "Remind me to …", made by `schedule_run`) reminds of; null for any other goal. */
export const reminderOf = (goal: string): string | null => /^Remind me to (.+)$/i.exec(goal.trim())?.[1] ?? null;

/** Finds the requests the demo understands in a piece of text, in order. */
export function demoIntents(text: string): StepSpec[] {
  const steps: StepSpec[] = [];
  // "remind me in 10 minutes to stretch": a schedule of the rest of the sentence, and nothing else now.
  const remind = /\bremind me in\s+(\d+(?:\.\d+)?)\s*(seconds?|secs?|s|minutes?|mins?|m|hours?|h)\s+(?:to\s+)?(.+?)[.!]?$/i.exec(text.trim());
  if (remind?.[1] && remind[2] && remind[3]) {
    const unit = remind[2].toLowerCase().startsWith('h') ? 'h' : remind[2].toLowerCase().startsWith('m') ? 'm' : 's';
    const goal = `Remind me to ${remind[3].trim()}`;
    return [{ type: 'tool', description: `Schedule a reminder in ${remind[1]}${unit}`, tool: 'schedule_run', args: { goal, in: `${remind[1]}${unit}` } }];
  }
  // A reminder's own run: its answer is the reminder.
  if (reminderOf(text) !== null) return [];
  const remember = /\b(?:remember|note|save)(?: that)?\s+(?:my\s+)?(.+?)\s+(?:is|=)\s+(.+?)(?:[.!]|$|\band\b)/i.exec(text);
  if (remember?.[1] && remember[2]) {
    const key = remember[1].trim().toLowerCase();
    steps.push({ type: 'tool', description: `Save the note "${key}"`, tool: 'notes_write', args: { key, value: remember[2].trim() } });
  }
  const recall = /\b(?:what(?:'s| is| was)\s+my|recall(?:\s+my)?|read\s+(?:my\s+)?note)\s+([\w -]+?)(?:\?|[.!]|$|\band\b)/i.exec(text);
  if (recall?.[1]) {
    const key = recall[1].trim().toLowerCase();
    steps.push({ type: 'tool', description: `Read the note "${key}"`, tool: 'notes_read', args: { key } });
  }
  // A note's value ("555-1234", "1990-05-03") is data, not arithmetic.
  const rest = remember ? text.replace(remember[0], ' ') : text;
  const candidates = rest.replace(/×/g, '*').matchAll(/(?:sqrt\s*\(|[-(]?\d)[\d\s.+\-*/^%()]*(?:sqrt\s*\([^)]*\)[\d\s.+\-*/^%()]*)*/gi);
  const expression = [...candidates].map((m) => m[0].trim().replace(/[\s(]+$/, '')).find((e) => /[-+*/^%]|sqrt/.test(e) && /\d/.test(e));
  if (expression) {
    steps.push({ type: 'tool', description: `Calculate ${expression}`, tool: 'calculator', args: { expression } });
  }
  if (/\b(time|date|clock)\b/i.test(text)) {
    const zone = /\b([A-Z][a-z]+\/[A-Za-z_]+(?:\/[A-Za-z_]+)?|UTC)\b/.exec(text)?.[1];
    steps.push({ type: 'tool', description: 'Look up the current time', tool: 'current_time', args: zone ? { timezone: zone } : {} });
  }
  const wait = /\bwait\s+(\d+(?:\.\d+)?)\s*(?:s|sec|secs|seconds?)\b/i.exec(text);
  if (wait?.[1]) steps.push({ type: 'tool', description: `Wait ${wait[1]} seconds`, tool: 'wait', args: { seconds: Number(wait[1]) } });
  return steps;
}

/** A tool step's result in a sentence. */
export function describeToolResult(step: Pick<PlanStep, 'tool' | 'args'>, content: string): string {
  let result: Record<string, unknown> = {};
  try {
    result = JSON.parse(content) as Record<string, unknown>;
  } catch {
    return content;
  }
  const args = step.args ?? {};
  switch (step.tool) {
    case 'schedule_run':
      return `Scheduled "${String(args.goal)}"${Array.isArray(result.nextRuns) && result.nextRuns[0] ? ` for ${String(result.nextRuns[0])}` : ''}.`;
    case 'calculator':
      return `${String(args.expression)} = ${String(result.value)}.`;
    case 'notes_write':
      return `I saved your ${String(args.key)}.`;
    case 'notes_read':
      return result.value === null ? `I have no note about your ${String(args.key)}.` : `Your ${String(args.key)} is ${String(result.value)}.`;
    case 'current_time':
      return `The time is ${String(result.iso)}.`;
    case 'wait':
      return `I waited ${String(result.waited)} seconds.`;
    default:
      return content;
  }
}
