/**
 * The baseline of the orchestration benchmark: a workflow that runs N no-op
 * activities one after another, with nothing else — what Temporal itself costs
 * per step. Workflow code only: bundled by the benchmark's second worker.
 */
import { executeChild, proxyActivities, proxyLocalActivities, workflowInfo } from '@temporalio/workflow';

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

/**
 * (d') what (d)'s shape costs Temporal: a parent that makes one regular call, then runs `groups` child
 * workflows one after another, each `perChild` local calls — a tree run's workflows, calls and child
 * starts and ends, with no engine, memory or state.
 */
export async function bareTreeWorkflow(groups: number, perChild: number): Promise<number> {
  await noop();
  let steps = 0;
  for (let g = 0; g < groups; g++) steps += await executeChild(bareLocalWorkflow, { args: [perChild], workflowId: `${workflowInfo().workflowId}.g${g + 1}` });
  return steps;
}
