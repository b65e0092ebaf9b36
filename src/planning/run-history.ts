/**
 * A run's state history (GET /v1/runs/:runId/history), pure: each version of its ExecutionState
 * summed up as what changed it, from the version before.
 */
import { isTerminal, type ExecutionState, type RunStatus } from './execution-state';

export interface RunVersion {
  version: number;
  at: string;
  status: RunStatus;
  /** The step the run was at. */
  stepId?: string;
  /** That step's task, in a tree run. */
  taskIndex?: string;
  event: string;
}

const count = (s: ExecutionState, status: string) => s.steps.filter((x) => x.status === status).length;

/** What made `next` out of `prev` (null: the run's first state). */
export function versionEvent(prev: ExecutionState | null, next: ExecutionState): string {
  if (!prev) return 'started';
  if (next.status !== prev.status && isTerminal(next.status)) return next.status === 'completed' ? 'answered' : next.status;
  if (next.pendingApproval && !prev.pendingApproval) return 'approval_requested';
  const added = next.observations.slice(prev.observations.length);
  if (prev.pendingApproval && !next.pendingApproval) return added.some((o) => o.kind === 'rejected') ? 'rejected' : 'approved';
  if (next.status === 'waiting_review' && prev.status !== 'waiting_review') return 'review_requested';
  if (prev.status === 'waiting_review' && next.status !== 'waiting_review') return 'reviewed';
  if (next.status === 'waiting_user' && prev.status !== 'waiting_user') return 'asked';
  if (added.some((o) => o.kind === 'user_reply')) return 'replied';
  if (added.some((o) => o.kind === 'rejected')) return 'rejected';
  if (next.planId !== prev.planId || (prev.steps.length === 0 && next.steps.length > 0) || (!prev.tree && next.tree)) return 'planned';
  if (count(next, 'replaced') > count(prev, 'replaced')) return 'replanned';
  if (count(next, 'skipped') > count(prev, 'skipped')) return 'skipped';
  if (count(next, 'failed') > count(prev, 'failed')) return 'step_failed';
  if (count(next, 'completed') > count(prev, 'completed')) return 'step_completed';
  if (next.steps.length > prev.steps.length) return 'step_added';
  if (count(next, 'running') > count(prev, 'running') || next.currentStepId !== prev.currentStepId) return 'step_started';
  if (added.length > 0) return 'observed';
  if (JSON.stringify(next.tree) !== JSON.stringify(prev.tree)) return 'task_updated';
  return 'updated';
}

/** The versions of a run, oldest first, each with what changed it; a version seen twice (replayed) once. */
export function runVersions(states: readonly ExecutionState[]): { versions: RunVersion[]; states: Map<number, ExecutionState> } {
  const byVersion = new Map<number, ExecutionState>();
  for (const s of states) byVersion.set(s.version, s);
  const ordered = [...byVersion.values()].sort((a, b) => a.version - b.version);
  const versions = ordered.map((s, i) => {
    const step = s.currentStepId ? s.steps.find((x) => x.id === s.currentStepId) : undefined;
    return {
      version: s.version,
      at: s.updatedAt,
      status: s.status,
      ...(s.currentStepId ? { stepId: s.currentStepId } : {}),
      ...(step?.task ? { taskIndex: step.task } : {}),
      event: versionEvent(i === 0 ? null : (ordered[i - 1] ?? null), s),
    };
  });
  return { versions, states: byVersion };
}
