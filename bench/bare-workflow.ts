/**
 * The baseline of the orchestration benchmark: a workflow that runs N no-op
 * activities one after another, with nothing else — what Temporal itself costs
 * per step. Workflow code only: bundled by the benchmark's second worker.
 */
import { condition, defineUpdate, executeChild, proxyActivities, proxyLocalActivities, setHandler, workflowInfo } from '@temporalio/workflow';

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

/** The floor's reply: an update a parked bare run takes, refused by its validator unless the run waits. */
export const bareReplyUpdate = defineUpdate<{ accepted: boolean }, [{ text: string }]>('submitReply');

/**
 * The many-runs floor: what Temporal costs a run that makes `before` local calls, parks until a person's
 * reply (an update, as Threadline's runs take one), then makes `after` local calls and ends — a waiting
 * run's shape with no engine, memory, state or status.
 */
export async function bareAskWorkflow(before: number, after: number): Promise<string> {
  let reply: string | undefined;
  let waiting = false;
  setHandler(
    bareReplyUpdate,
    ({ text }) => {
      reply = text;
      waiting = false;
      return { accepted: true };
    },
    {
      validator: (_reply: { text: string }) => {
        if (!waiting) throw new Error('the run is not waiting for a reply');
      },
    },
  );
  for (let i = 0; i < before; i++) await local.noop();
  waiting = true;
  await condition(() => reply !== undefined);
  for (let i = 0; i < after; i++) await local.noop();
  return reply!;
}
