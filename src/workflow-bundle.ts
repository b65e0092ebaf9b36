/**
 * The workflow code, bundled by webpack. A worker has it built in a child process: the bundler's
 * peak (~120 MB) then never counts against the worker's own memory, which also holds every run it
 * keeps loaded. `node <this file>` (with the parent's loader flags) writes the bundle to fd 3.
 */
import { spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';

/**
 * Builds the bundle in this process. `history`: the bundle that replays a run to show its state history
 * (src/temporal/run-history.ts) — with the module that hands each state version out; workers never load it.
 */
export async function bundleWorkflows(options: { history?: boolean } = {}): Promise<string> {
  const { code } = await bundleWorkflowCode({
    workflowsPath: require.resolve('./workflows'),
    // Always bundled; they trace only runs a tracing client started (src/workflows/tracing-interceptors.ts).
    workflowInterceptorModules: [require.resolve('./workflows/tracing-interceptors'), ...(options.history ? [require.resolve('./workflows/history-interceptors')] : [])],
    logger: new DefaultLogger('WARN'),
  });
  return code;
}

/** Builds the bundle in a child process and returns it. */
export function bundleWorkflowsInChild(options: { history?: boolean } = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...process.execArgv, __filename, ...(options.history ? ['--history'] : [])], { stdio: ['ignore', 'inherit', 'inherit', 'pipe'] });
    const chunks: Buffer[] = [];
    child.stdio[3]!.on('data', (chunk: Buffer) => chunks.push(chunk));
    child.once('error', reject);
    child.once('close', (code, signal) => {
      if (code === 0) resolve(Buffer.concat(chunks).toString('utf8'));
      else reject(new Error(`bundling the workflows failed (${signal ?? `exit code ${code}`})`));
    });
  });
}

if (require.main === module) {
  bundleWorkflows({ history: process.argv.includes('--history') }).then(
    (code) => createWriteStream('', { fd: 3 }).end(code),
    (err: unknown) => {
      console.error('bundling the workflows failed:', err);
      process.exit(1);
    },
  );
}
