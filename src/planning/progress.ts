/** Renders a run's plan as a short progress list ([x] done, [~] running, [-] skipped, [ ] pending). */
import type { ExecutionState, PlanStep } from './execution-state';

export const MARK: Record<PlanStep['status'], string> = {
  completed: '[x]',
  running: '[~]',
  pending: '[ ]',
  failed: '[!]',
  replaced: '[-]',
  skipped: '[-]',
};

export function renderProgress(state: ExecutionState): string {
  const head = `**${state.status}** — ${state.goal}${state.model ? ` (model: ${state.model})` : ''}`;
  const lines = state.steps.map((s) => `${MARK[s.status]} ${s.index}. ${s.type}: ${s.description}`);
  const tail = state.finalAnswer ? [`Answer: ${state.finalAnswer}`] : state.lastError ? [`Error: ${state.lastError}`] : [];
  return [head, ...lines, ...tail].join('\n');
}

/** One line naming a step, for activity summaries in the Web UI. */
export function stepSummary(step: PlanStep): string {
  const what = step.type === 'tool' ? `tool ${step.tool ?? '?'}` : step.type;
  return `step ${step.index} · ${what}: ${step.description}`.slice(0, 200);
}
