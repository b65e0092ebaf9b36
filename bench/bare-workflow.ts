/**
 * The baseline of the orchestration benchmark: a workflow that runs N no-op
 * activities one after another, with nothing else — what Temporal itself costs
 * per step. Workflow code only: bundled by the benchmark's second worker.
 */
import { proxyActivities } from '@temporalio/workflow';

export interface BareActivities {
  noop(): Promise<Record<string, never>>;
}

const { noop } = proxyActivities<BareActivities>({ startToCloseTimeout: '1 minute' });

/** Runs `steps` no-op activities sequentially; returns how many ran. */
export async function bareWorkflow(steps: number): Promise<number> {
  for (let i = 0; i < steps; i++) await noop();
  return steps;
}
