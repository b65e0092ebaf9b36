/**
 * Renders a run's plan as the seed's progress list, with the tree engine's marks
 * (`progress-marks.ts`): the goal line carries the plan's aggregate, each step its own.
 */
import type { ExecutionState, PlanStep } from './execution-state';
import { aggregateProgress, progressMark, type Progress } from './progress-marks';

/** A step's progress: a step that will not run (again) is done with, like the tree's skipped or aborted tasks. */
const STEP_PROGRESS: Record<PlanStep['status'], Progress> = {
  completed: 'finished',
  failed: 'finished',
  replaced: 'finished',
  skipped: 'finished',
  running: 'executing',
  pending: 'notStarted',
};

/** A step's mark: `[x]` done with, `[-]` executing, `[ ]` not started. */
export const stepMark = (status: PlanStep['status']): string => progressMark(STEP_PROGRESS[status]);

/** What a done-with step's mark does not say: that it failed, or never ran. */
export const stepNote = (status: PlanStep['status']): string | null => (status === 'failed' || status === 'replaced' || status === 'skipped' ? status : null);

export function renderProgress(state: ExecutionState): string {
  const plan = progressMark(aggregateProgress(state.steps.map((s) => STEP_PROGRESS[s.status])));
  const head = `-${plan} **${state.status}** — ${state.goal}${state.model ? ` (model: ${state.model})` : ''}`;
  const lines = state.steps.map((s) => {
    const note = stepNote(s.status);
    return ` -${stepMark(s.status)} ${s.index}. ${s.type}: ${s.description}${note ? ` (${note})` : ''}`;
  });
  const tail = state.finalAnswer ? [`Answer: ${state.finalAnswer}`] : state.lastError ? [`Error: ${state.lastError}`] : [];
  const held = approvalLine(state);
  return [head, ...lines, ...(held ? [held] : []), ...tail].join('\n');
}

/** What waits for a person's approval, for the Web UI's details of a run (plan or tree); null when nothing does. */
export function approvalLine(state: ExecutionState): string | null {
  const held = state.status === 'waiting_approval' ? state.pendingApproval : null;
  return held
    ? `Waiting for approval: ${held.tool}(${JSON.stringify(held.args)})${held.taskIndex ? ` in task ${held.taskIndex}` : ''} — step ${held.stepId}, POST /v1/runs/${state.runId}/approval`
    : null;
}

/** One line naming a step, for activity summaries in the Web UI. */
export function stepSummary(step: PlanStep): string {
  const what = step.type === 'tool' ? `tool ${step.tool ?? '?'}` : step.type;
  return `step ${step.index} · ${what}: ${step.description}`.slice(0, 200);
}
