/**
 * The baseline of the orchestration benchmark: a workflow that runs N no-op
 * activities one after another, with nothing else — what Temporal itself costs
 * per step. Workflow code only: bundled by the benchmark's second worker.
 */
import { proxyActivities, proxyLocalActivities } from '@temporalio/workflow';

export interface BareActivities {
  noop(): Promise<Record<string, never>>;
}

const { noop } = proxyActivities<BareActivities>({ startToCloseTimeout: '1 minute' });
const local = proxyLocalActivities<BareActivities>({ startToCloseTimeout: '1 minute' });

/** Runs `steps` no-op activities sequentially; returns how many ran. */
export async function bareWorkflow(steps: number): Promise<number> {
  for (let i = 0; i < steps; i++) await noop();
  return steps;
}

/** (b'): the same with local activities — Temporal's floor for a step that runs in the workflow's worker. */
export async function bareLocalWorkflow(steps: number): Promise<number> {
  for (let i = 0; i < steps; i++) await local.noop();
  return steps;
}
