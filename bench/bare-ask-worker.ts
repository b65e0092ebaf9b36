/**
 * The many-runs benchmark's floor: a bare Temporal worker in a process of its own, started with the
 * worker's node flags and malloc setting (scripts/lib.mjs), caching as many runs as Threadline's worker
 * (its WORKER_CACHED_WORKFLOWS default for this machine), running bench/bare-workflow.ts's
 * `bareAskWorkflow` with a no-op local activity: no engine, memory, state, status or API. Compiled as the
 * worker is and given its workflow bundle as a file, as the worker is (bench/worker-process.ts, many-runs-floor.ts).
 *
 * Environment: TEMPORAL_ADDRESS, TASK_QUEUE, WORKER_METRICS_ADDRESS (its SDK metrics, as the worker's),
 * BARE_WORKFLOW_BUNDLE (the bundled bench/bare-workflow.ts).
 * Prints `worker: …` once it polls; stops on SIGTERM.
 */
import os from 'node:os';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { z } from 'zod';
import { cachedWorkflowsFor } from '../src/config';

const Env = z.object({
  TEMPORAL_ADDRESS: z.string().min(1),
  TASK_QUEUE: z.string().min(1),
  WORKER_METRICS_ADDRESS: z.string().min(1),
  BARE_WORKFLOW_BUNDLE: z.string().min(1),
  WORKER_CACHED_WORKFLOWS: z.coerce.number().int().min(0).optional(),
});

async function main(): Promise<void> {
  const env = Env.parse(process.env);
  Runtime.install({ logger: new DefaultLogger('WARN'), telemetryOptions: { metrics: { prometheus: { bindAddress: env.WORKER_METRICS_ADDRESS } } } });
  const maxCachedWorkflows = env.WORKER_CACHED_WORKFLOWS ?? cachedWorkflowsFor(os.totalmem());
  const worker = await Worker.create({
    connection: await NativeConnection.connect({ address: env.TEMPORAL_ADDRESS }),
    taskQueue: env.TASK_QUEUE,
    workflowBundle: { codePath: env.BARE_WORKFLOW_BUNDLE },
    activities: { noop: async () => ({}) },
    maxCachedWorkflows,
  });
  process.once('SIGTERM', () => worker.shutdown());
  const running = worker.run();
  console.log(`worker: bare Temporal worker on task queue "${env.TASK_QUEUE}", workflow cache: ${maxCachedWorkflows} runs`);
  await running;
  process.exit(0);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
