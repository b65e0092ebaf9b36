/**
 * A real worker process for the crash test: the production worker plus a
 * `tally` tool that appends each execution to DATA_DIR/tally.log, so the test
 * can prove which tool steps ran and how often across the kill.
 */
import { appendFile } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { loadConfig } from '../../src/config';
import { defineTool } from '../../src/tools/tool';
import { createWorker, exitWhenDone } from '../../src/worker';
import { runtimeOptionsFor } from '../../src/telemetry/core-faults';
import { Runtime } from '@temporalio/worker';

async function main(): Promise<void> {
  // As the production worker's: the core's log is heard, so a lost run replaces the worker (src/telemetry/core-faults.ts).
  Runtime.install(runtimeOptionsFor());
  const config = loadConfig();
  const tally = defineTool({
    name: 'tally',
    quick: true,
    description: 'Counts a label (test tool).',
    input: z.object({ label: z.string() }),
    async handler({ label }) {
      await appendFile(path.join(config.dataDir, 'tally.log'), `${label}\n`);
      return { counted: label };
    },
  });
  const worker = await createWorker({ config, extraTools: [tally] });
  console.log('crash-worker: running');
  await worker.run();
}

exitWhenDone(main());
