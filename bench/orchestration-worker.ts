/**
 * One Threadline worker in a process of its own, as (a)'s worker in bench/orchestration.ts is made
 * (the zero-latency model, the no-op tools, the step journal in memory), on TASK_QUEUE of the
 * environment. The orchestration benchmark starts it to measure what the tree run (d) costs a worker
 * process by itself: the benchmark's own process holds five workers (the plan worker, (g)'s, (h)'s,
 * (h')'s and the bare one) and its client, so its peak RSS is theirs together.
 *
 * Prints `ready` once the worker polls; stops on SIGTERM.
 */
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { loadConfig } from '../src/config';
import { MemoryKeyValueStore } from '../src/store/kv';
import { createWorker } from '../src/worker';
import { BIG_TOOL, NOOP_TOOL, ZeroLatencyProvider } from './zero-latency-provider';

async function main(): Promise<void> {
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const config = loadConfig();
  const worker = await createWorker({ config, provider: new ZeroLatencyProvider(), extraTools: [NOOP_TOOL, BIG_TOOL], store: new MemoryKeyValueStore() });
  process.once('SIGTERM', () => worker.shutdown());
  const running = worker.run();
  console.log('ready');
  await running;
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
