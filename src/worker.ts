/**
 * The worker: runs Threadline's workflows and activities on TASK_QUEUE.
 * `npm run worker` starts it; `createWorker` lets tests and the benchmark
 * build one with their own model, tools or store.
 */
import path from 'node:path';
import { NativeConnection, Worker } from '@temporalio/worker';
import { createPlanActivities } from './activities/plan-activities';
import { loadConfig, type Config } from './config';
import { describeProvider, selectProvider } from './llm/select-provider';
import type { ModelProvider } from './llm/provider';
import { FileKeyValueStore, type KeyValueStore } from './store/kv';
import { BUILTIN_TOOLS, ToolRegistry } from './tools/registry';
import type { ToolDefinition } from './tools/tool';

export interface WorkerOptions {
  config: Config;
  provider?: ModelProvider;
  /** Tools besides the built-in ones. */
  extraTools?: ToolDefinition[];
  store?: KeyValueStore;
  taskQueue?: string;
  connection?: NativeConnection;
}

export async function createWorker(options: WorkerOptions): Promise<Worker> {
  const { config } = options;
  const provider = options.provider ?? selectProvider(config);
  const activities = createPlanActivities({
    provider,
    tools: new ToolRegistry([...BUILTIN_TOOLS, ...(options.extraTools ?? [])]),
    store: options.store ?? new FileKeyValueStore(path.join(config.dataDir, 'kv')),
    repairAttempts: config.MODEL_REPAIR_ATTEMPTS,
    maxSteps: config.MAX_STEPS,
    maxDepth: config.MAX_SUBPLAN_DEPTH,
  });
  const connection = options.connection ?? (await NativeConnection.connect({ address: config.temporalAddress }));
  // Tests bundle the workflow code once and share it; otherwise the worker bundles at start.
  const bundlePath = process.env.THREADLINE_WORKFLOW_BUNDLE;
  return Worker.create({
    connection,
    namespace: config.TEMPORAL_NAMESPACE,
    taskQueue: options.taskQueue ?? config.TASK_QUEUE,
    ...(bundlePath ? { workflowBundle: { codePath: bundlePath } } : { workflowsPath: require.resolve('./workflows') }),
    activities,
  });
}

async function main(): Promise<void> {
  const config = loadConfig();
  const provider = selectProvider(config);
  const worker = await createWorker({ config, provider });
  console.log(`worker: task queue "${config.TASK_QUEUE}" on ${config.temporalAddress}, model: ${describeProvider(provider, config)}`);
  await worker.run();
}

if (require.main === module) {
  main().catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
}
