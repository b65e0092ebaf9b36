/**
 * The worker: runs Threadline's workflows and activities on TASK_QUEUE.
 * `npm run worker` starts it; `createWorker` lets tests and the benchmark
 * build one with their own model, tools or store.
 */
import { NativeConnection, Worker, type WorkerOptions as SdkWorkerOptions } from '@temporalio/worker';
import { createPlanActivities } from './activities/plan-activities';
import { createSessionActivities } from './activities/session-activities';
import { createTreeActivities } from './activities/tree-activities';
import { StateCache, stateRefInterceptor } from './activities/state-refs';
import { agentsConfigPath, loadAgents } from './agents/load';
import { loadBlueprints } from './blueprints/load';
import { loadSkills } from './skills/load';
import { openLongTerm } from './store/longterm/open-longterm';
import { longTermTools } from './tools/memory-tools';
import { ToolSet, type ToolSource } from './tools/source';
import { loadSkillTool } from './tools/load-skill';
import { loadConfig, memoryPassSettingsOf, treeLimitsOf, type Config } from './config';
import { createMemoryActivities } from './activities/memory-activities';
import { describeProvider, selectProvider } from './llm/select-provider';
import type { ModelProvider } from './llm/provider';
import { FileKeyValueStore, kvDirOf, type KeyValueStore } from './store/kv';
import { sealerFor } from './store/sealing/sealer';
import { toolResultStoreFor } from './temporal/tool-results';
import type { MemoryService } from './store/memory-service';
import { openMemory } from './store/open-memory';
import { startBlobSweeps } from './store/blobs/blob-store';
import { startJournalSweeps } from './store/journal-retention';
import { dataConverterFor } from './temporal/data-converter';
import { recordUsageInterceptor } from './usage/record-usage';
import { createUsageStore, type UsageStore } from './store/usage/usage-store';
import { retrieveMessageTool } from './tools/retrieve-message';
import { WORKING_MEMORY_TOOLS } from './tools/working-memory-tools';
import { BUILTIN_TOOLS, liveToolsOf, ToolRegistry } from './tools/registry';
import { scheduleTools, type ScheduleService } from './tools/schedule-tools';
import { connectClient, connectionOptions } from './temporal/connection';
import { deploymentVersionOf, promoteWhenPolling, workerDeploymentOptions } from './temporal/deployment';
import { codeVersionOf } from './activities/code-version';
import { Schedules } from './temporal/schedules';
import { Runs } from './temporal/runs';
import { recycleOnLostTasks } from './temporal/recycling-worker';
import type { Client } from '@temporalio/client';
import type { DataConverter } from '@temporalio/common';
import { callsInterceptor } from './activities/calls-interceptor';
import { liveTokensInterceptor } from './activities/live-tokens-interceptor';
import { openPublisher } from './live/channels';
import type { LivePublisher } from './live/messages';
import type { ToolDefinition } from './tools/tool';
import { mcpToolSourceFor } from './mcp/tool-source';
import { bundleWorkflowsToFile } from './workflow-bundle';
import { logContextInterceptor } from './activities/log-context';
import { createLogger, installRuntimeLogger } from './telemetry/logger';
import { tracingActivityInterceptor, workflowSpanSinks } from './telemetry/temporal';
import { activeTracing, tracingFromConfig, type Tracing } from './telemetry/tracing';
import type { Logger } from 'pino';

export interface WorkerOptions {
  config: Config;
  provider?: ModelProvider;
  /** Tools besides the built-in ones. */
  extraTools?: ToolDefinition[];
  /**
   * Sources of tools that may change while the worker runs (src/tools/source.ts), besides the MCP
   * servers of MCP_CONFIG: started before the worker polls, closed when it stops.
   */
  toolSources?: ToolSource[];
  store?: KeyValueStore;
  taskQueue?: string;
  connection?: NativeConnection;
  /** @default the configured memory store (MEMORY_STORE), closed when the worker stops */
  memory?: MemoryService;
  /** Where model usage is recorded. @default the store beside the memory (MEMORY_STORE), closed when the worker stops */
  usage?: UsageStore;
  /** Where activity spans and workflow spans go. @default the tracing this process installed (src/telemetry/tracing.ts), if any */
  tracing?: Tracing;
  /** The worker's own messages. @default a pino logger named "worker" at LOG_LEVEL */
  logger?: Logger;
  /** Where live tokens go (src/live/). @default the channel of the config (src/live/channels.ts), closed when the worker stops */
  tokens?: LivePublisher;
  /** How payloads are written into history (a test stands in an earlier release's). @default the config's (dataConverterFor) */
  dataConverter?: DataConverter;
}

export async function createWorker(options: WorkerOptions): Promise<Worker> {
  const { config } = options;
  const logger = options.logger ?? createLogger('worker', config);
  const tracing = options.tracing ?? activeTracing();
  const provider = options.provider ?? selectProvider(config);
  const opened = options.memory ? undefined : await openMemory(config, provider);
  const memory = options.memory ?? opened!.memory;
  const ownUsage = options.usage ? undefined : createUsageStore(config);
  await ownUsage?.setup();
  const usage = options.usage ?? ownUsage!;
  // react_mem: long-term memory, opened like the memory threads (MEMORY_STORE), with its tools.
  const longterm = config.MEMORY_MANAGER === 'react_mem' ? await openLongTerm(config, { warn: (message, details) => logger.warn(details, message) }) : undefined;
  const memoryPasses = longterm ? memoryPassSettingsOf(config) : null;
  const toolResultStore = toolResultStoreFor(config);
  // MCP tools' images, audio and blobs go where large results go: sealed like them, swept like every blob.
  const mcp = mcpToolSourceFor(config, (base64, mimeType) => toolResultStore.putMedia(Buffer.from(base64, 'base64'), mimeType));
  const sources: ToolSource[] = [...(mcp ? [mcp] : []), ...(longterm ? [new ToolSet('longterm', longTermTools(longterm.longterm))] : []), ...(options.toolSources ?? [])];
  // Schedules as tools: a Temporal client, connected when a run first calls one.
  let scheduleClient: Promise<Client> | undefined;
  const schedulesNow = async () => {
    scheduleClient ??= connectClient(config);
    const client = await scheduleClient;
    return new Schedules(client, new Runs(client, config), { perUser: config.SCHEDULES_PER_USER });
  };
  const scheduleService: ScheduleService = {
    create: async (request) => (await schedulesNow()).create(request),
    list: async (filter) => (await schedulesNow()).list(filter),
    ownerOf: async (id) => (await schedulesNow()).ownerOf(id),
    delete: async (id) => (await schedulesNow()).delete(id),
  };
  // Live tokens (issue 29): model calls' deltas to the APIs, never through Temporal.
  const ownTokens = options.tokens ? undefined : openPublisher(config);
  const tokens = options.tokens ?? ownTokens!;
  const closeStores = async () => {
    await ownTokens?.close();
    if (scheduleClient) await (await scheduleClient).connection.close();
    await Promise.all(sources.map((s) => s.close?.()));
    await toolResultStore.end();
    await longterm?.close();
    await opened?.close();
    await ownUsage?.end();
  };
  const skills = loadSkills(config.SKILLS_DIR);
  // Sub-agents (AGENTS_CONFIG): a bad file stops the worker with its name and the field at fault.
  const agents = loadAgents(agentsConfigPath(config));
  const tools = new ToolRegistry(
    [...BUILTIN_TOOLS, retrieveMessageTool(longterm?.longterm), ...WORKING_MEMORY_TOOLS, ...scheduleTools(scheduleService), ...loadSkillTool(skills), ...(options.extraTools ?? [])],
    sources,
    {
      live: liveToolsOf(config.LIVE_TOOLS),
    },
  );
  // The tool set a run is planned with is complete from the first poll (a later change makes runs stale).
  await Promise.all(sources.map((s) => s.start?.())).catch(async (err: unknown) => {
    await closeStores();
    throw err;
  });
  if (mcp) logger.info({ mcpServers: mcp.summary() || 'none configured' }, 'MCP servers');
  // Worker Deployment Versioning (WORKER_DEPLOYMENT): this worker is the version its code adds up to, unless told.
  const version = deploymentVersionOf(config, codeVersionOf(provider, tools));
  const runDeps = {
    provider,
    tools,
    versioned: version !== null,
    memory,
    contextBudget: config.MEMORY_HARD_LIMIT,
    compressEvery: config.MEMORY_COMPRESS_EVERY,
    ...(longterm ? { longterm: longterm.longterm } : {}),
    ...(memoryPasses ? { memoryPasses } : {}),
    store: options.store ?? new FileKeyValueStore(kvDirOf(config), sealerFor(config)),
    repairAttempts: config.MODEL_REPAIR_ATTEMPTS,
    maxSteps: config.MAX_STEPS,
    maxDepth: config.MAX_SUBPLAN_DEPTH,
    agents,
    toolResults: { maxBytes: config.MAX_TOOL_RESULT_BYTES, store: toolResultStore },
  };
  const activities = {
    ...createPlanActivities(runDeps),
    ...createTreeActivities({ ...runDeps, treeLimits: treeLimitsOf(config), blueprints: loadBlueprints(config.BLUEPRINTS_DIR) }),
    // Sessions share the tools (their fingerprint detects capability changes) and the memory.
    ...createSessionActivities({
      provider,
      tools,
      memory,
      store: runDeps.store,
      repairAttempts: config.MODEL_REPAIR_ATTEMPTS,
      versioned: version !== null,
      ...(longterm ? { longterm: longterm.longterm } : {}),
      ...(memoryPasses ? { memoryPasses } : {}),
    }),
    // react_mem's passes, run by each user's memory workflow.
    ...(longterm ? createMemoryActivities({ provider, memory, longterm: longterm.longterm, store: runDeps.store, repairAttempts: config.MODEL_REPAIR_ATTEMPTS }) : {}),
  };
  const connection = options.connection ?? (await NativeConnection.connect(connectionOptions(config)));
  // Tests bundle the workflow code once and share it; otherwise the worker bundles at start, in a child
  // process, into a file the SDK reads in Worker.create (given as code, the bundle would be held twice).
  const bundlePath = process.env.THREADLINE_WORKFLOW_BUNDLE;
  const built = bundlePath
    ? undefined
    : await bundleWorkflowsToFile().catch(async (err: unknown) => {
        await closeStores();
        throw err;
      });
  // Read by the SDK's workflow threads (patched, see WORKFLOW_STACK_TRACES), which copy the environment when
  // Worker.create starts them; set each time, as tests make workers of either setting in one process.
  process.env.THREADLINE_WORKFLOW_STACK_TRACES = config.WORKFLOW_STACK_TRACES;
  const workerOptions: SdkWorkerOptions = {
    connection,
    namespace: config.TEMPORAL_NAMESPACE,
    taskQueue: options.taskQueue ?? config.TASK_QUEUE,
    workflowBundle: { codePath: bundlePath ?? built!.path },
    activities,
    dataConverter: options.dataConverter ?? dataConverterFor(config),
    // Bounds the worker's memory: runs past it are evicted and replayed from history when they resume.
    maxCachedWorkflows: config.workerCachedWorkflows,
    ...(version ? { workerDeploymentOptions: workerDeploymentOptions(version) } : {}),
    // Runs pass their state to activities as patches; the first restores it (src/engine/state-ref.ts),
    // so the second sees whose run an activity works for when it records the model's usage.
    // Tracing goes first, so the state restore and everything after it run inside the activity's span;
    // the log context comes after the state restore, which gives it the run's state to read ids from.
    interceptors: {
      activity: [
        ...(tracing ? [tracingActivityInterceptor] : []),
        // Outside the rest: times the workflows' calls, and a local call run again returns its journaled result without running anything.
        callsInterceptor(runDeps.store),
        liveTokensInterceptor(tokens),
        stateRefInterceptor(new StateCache()),
        logContextInterceptor,
        recordUsageInterceptor({
          store: usage,
          model: provider.label,
          budget: config.USER_TOKEN_BUDGET,
          ownerOf: (threadId) => memory.ownerOf(threadId),
          onError: (err) => logger.error({ err }, 'usage not recorded or not read'),
        }),
      ],
    },
    sinks: workflowSpanSinks(tracing),
  };
  // What lives exactly as long as the worker, released in this order once it stops (or fails to start):
  const afterRun: (() => Promise<void>)[] = [];
  // the bundle file, kept while the worker runs because a replacement (recycleOnLostTasks) is made from it;
  if (built) afterRun.push(() => built.remove());
  // the stores (e.g. a PostgreSQL pool) and tool sources (e.g. MCP server processes) this function opened;
  afterRun.push(closeStores);
  // the connection: while it is open the Runtime lives, and with the core's log forwarded to this
  // process (src/telemetry/core-faults.ts) a live Runtime keeps the process from exiting.
  if (!options.connection) afterRun.push(() => connection.close().catch((err: unknown) => logger.warn({ err }, 'the connection to Temporal did not close')));
  const worker = recycleOnLostTasks(
    await Worker.create(workerOptions).catch(async (err: unknown) => {
      await releaseAll(afterRun);
      throw err;
    }),
    { create: () => Worker.create(workerOptions), warn: (message, fields) => logger.warn(fields ?? {}, message) },
  );
  if (version && config.WORKER_PROMOTE === 'auto') {
    // Once it polls, this worker's version becomes current: new runs and sessions' next turns come here,
    // runs pinned to the version before stay there until they end.
    const run = worker.run.bind(worker);
    worker.run = () => {
      const stopped = new AbortController();
      const promoted = connectClient(config).then(async (client) => {
        try {
          if (!(await promoteWhenPolling(client, version, { signal: stopped.signal, log: (m) => logger.info(version, m) })) && !stopped.signal.aborted)
            logger.warn(version, 'this version did not become current; set it with `temporal worker deployment set-current-version`');
        } finally {
          await client.connection.close();
        }
      });
      promoted.catch((err: unknown) => logger.warn({ err }, 'could not make this version current'));
      return run().finally(async () => {
        stopped.abort();
        await promoted.catch(() => undefined);
      });
    };
  }
  const run = worker.run.bind(worker);
  worker.run = () => run().finally(() => releaseAll(afterRun));
  return worker;
}

/** Runs each release in turn, each even when one before it failed; then fails with the first failure. */
async function releaseAll(releases: readonly (() => Promise<void>)[]): Promise<void> {
  const failures: unknown[] = [];
  for (const release of releases) await release().catch((err: unknown) => failures.push(err));
  if (failures.length > 0) throw failures[0];
}

async function main(): Promise<void> {
  const loaded = loadConfig();
  const logger = createLogger('worker', loaded);
  installRuntimeLogger(logger, loaded.WORKER_METRICS_ADDRESS);
  // The admin key is the API's: a worker runs tools and MCP servers a model chooses, so it never holds it.
  if (loaded.THREADLINE_ADMIN_KEY) logger.warn('THREADLINE_ADMIN_KEY is set for the worker, which never uses it: ignored and removed from its environment; give it to the API only');
  delete process.env.THREADLINE_ADMIN_KEY;
  const config: Config = { ...loaded, THREADLINE_ADMIN_KEY: undefined };
  const tracing = tracingFromConfig(config, 'threadline-worker');
  const provider = selectProvider(config);
  const worker = await createWorker({ config, provider, logger });
  const stopSweeps = config.CLAIM_CHECK_THRESHOLD > 0 ? startBlobSweeps(config, (m) => logger.info(m)) : async () => undefined;
  const stopJournalSweeps = startJournalSweeps(kvDirOf(config), config.JOURNAL_RETENTION_DAYS, (m) => logger.info(m));
  logger.info(
    {
      taskQueue: config.TASK_QUEUE,
      temporal: config.temporalAddress,
      model: describeProvider(provider, config),
      workflowCache: config.workerCachedWorkflows,
      tracing: tracing ? config.OTEL_EXPORTER_OTLP_ENDPOINT : 'off',
    },
    `worker: task queue "${config.TASK_QUEUE}" on ${config.temporalAddress}, model: ${describeProvider(provider, config)}, workflow cache: ${config.workerCachedWorkflows} runs`,
  );
  await worker.run().finally(async () => {
    await stopSweeps();
    await stopJournalSweeps();
    await tracing?.shutdown();
  });
}

/**
 * Ends a worker process with `main`: exits 0 once it is done, 1 (after printing why) when it fails — even
 * while a worker replaced after a lost task still holds the Runtime (recycleOnLostTasks), which would keep
 * the process alive.
 */
export function exitWhenDone(main: Promise<void>): void {
  main.then(
    () => process.exit(0),
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
}

if (require.main === module) exitWhenDone(main());
