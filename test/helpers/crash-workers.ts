/** Real worker processes to SIGKILL: test/helpers/crash-worker.ts (the production worker plus a `tally` tool), one process each. */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import type { Config } from '../../src/config';
import { waitFor } from './temporal-env';

const root = path.resolve(__dirname, '../..');

/** Starts a worker on `config`'s server, task queue and data directory, with the stub model at `modelUrl`; resolved once it polls. */
export async function startCrashWorker(config: Config, modelUrl: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/helpers/crash-worker.ts'], {
    cwd: root,
    env: {
      ...process.env,
      TEMPORAL_ADDRESS: config.temporalAddress,
      TASK_QUEUE: config.TASK_QUEUE,
      DATA_DIR: config.dataDir,
      OPENAI_BASE_URL: modelUrl,
      OPENAI_API_KEY: 'test-key',
      AGENT_MODEL: 'stub-model',
      // As testConfig: the memory passes after each run would ask the stub for replies no test scripted.
      MEMORY_EXTRACTION: config.MEMORY_EXTRACTION,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (output += d.toString()));
  return waitFor(
    'the worker process to start',
    async () => {
      if (child.exitCode !== null) throw new Error(`worker exited early:\n${output}`);
      return output.includes('crash-worker: running') ? child : undefined;
    },
    60_000,
  );
}
