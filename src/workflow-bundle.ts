/**
 * The workflow code, bundled by webpack. A worker has it built in a child process: the bundler's
 * peak (~120 MB) then never counts against the worker's own memory, which also holds every run it
 * keeps loaded. `node <this file>` (with the parent's loader flags) writes the bundle to fd 3, or
 * with `--out <file>` to that file.
 */
import { spawn } from 'node:child_process';
import { createWriteStream, readdirSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';

/**
 * The TypeScript sources the bundle is made from, also when this module runs compiled (dist/, which
 * sits beside src/): webpack compiles them itself, and the bundle's source map names them.
 */
const SOURCES = path.resolve(__dirname, '..', 'src');

/**
 * The engine core (src/engine, and the pure models it imports), evaluated once per workflow thread
 * instead of once per run the sandbox loads — every cache miss: the SDK's `preloadModules`, which
 * shares them, frozen, among runs. Safe because they are pure: no module-level state, no import of
 * '@temporalio/workflow' (dependency-cruiser's layers keep the engine below the workflows).
 */
function engineModules(): string[] {
  const dir = path.join(SOURCES, 'engine');
  return readdirSync(dir)
    .filter((f) => /\.ts$/.test(f) && !f.endsWith('.d.ts'))
    .map((f) => require.resolve(path.join(dir, f)));
}

/**
 * The bundle in ASCII. A handful of characters past it (dashes in comments, a reply word in Chinese)
 * make V8 hold the whole 2.4 MB source as UTF-16, 4.8 MB, in every workflow thread for the worker's
 * life. Escaped as `\uXXXX` they mean the same in strings, templates, regular expressions and
 * identifiers (and a comment is a comment); a backslash that escaped the character is taken in.
 */
export function asciiOnly(code: string): string {
  return code.replace(/(\\*)([^\x00-\x7f])/g, (_, slashes: string, c: string) => {
    const escaped = `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;
    return slashes.length % 2 === 1 ? slashes.slice(1) + escaped : slashes + escaped;
  });
}

/**
 * Builds the bundle in this process. `history`: the bundle that replays a run to show its state history
 * (src/temporal/run-history.ts) — with the module that hands each state version out; workers never load it.
 */
export async function bundleWorkflows(options: { history?: boolean } = {}): Promise<string> {
  const { code } = await bundleWorkflowCode({
    workflowsPath: path.join(SOURCES, 'workflows', 'index.ts'),
    // Always bundled; they trace only runs a tracing client started (src/workflows/tracing-interceptors.ts).
    workflowInterceptorModules: [path.join(SOURCES, 'workflows', 'tracing-interceptors.ts'), ...(options.history ? [path.join(SOURCES, 'workflows', 'history-interceptors.ts')] : [])],
    logger: new DefaultLogger('WARN'),
    preloadModules: engineModules(),
    // Source maps without the sources: stack traces still name the TypeScript file and line, and the
    // SDK reads the sources only for showStackTraceSources (off). They were nearly half the bundle,
    // which the worker holds once more in every workflow thread.
    webpackConfigHook: (config) => ({ ...config, devtool: 'inline-nosources-source-map' }),
  });
  return asciiOnly(code);
}

function runChild(args: string[], onOutput?: (chunk: Buffer) => void): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...process.execArgv, __filename, ...args], { stdio: ['ignore', 'inherit', 'inherit', 'pipe'] });
    if (onOutput) child.stdio[3]!.on('data', onOutput);
    child.once('error', reject);
    child.once('close', (code, signal) => {
      if (code === 0) resolve();
      else reject(new Error(`bundling the workflows failed (${signal ?? `exit code ${code}`})`));
    });
  });
}

/** Builds the bundle in a child process and returns it. */
export async function bundleWorkflowsInChild(options: { history?: boolean } = {}): Promise<string> {
  const chunks: Buffer[] = [];
  await runChild(options.history ? ['--history'] : [], (chunk) => chunks.push(chunk));
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * Builds the worker's bundle in a child process, into a file of a new temporary folder; `remove` deletes
 * it once the worker has read it. A worker given the bundle as code holds it twice (the SDK keeps its
 * own copy, with the source map's file name patched); given a path, once.
 */
export async function bundleWorkflowsToFile(): Promise<{ path: string; remove: () => Promise<void> }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'threadline-bundle-'));
  const remove = () => rm(dir, { recursive: true, force: true });
  const file = path.join(dir, 'workflow-bundle.js');
  try {
    await runChild(['--out', file]);
  } catch (err) {
    await remove();
    throw err;
  }
  return { path: file, remove };
}

if (require.main === module) {
  const out = process.argv.indexOf('--out');
  bundleWorkflows({ history: process.argv.includes('--history') }).then(
    (code) => (out > 0 ? createWriteStream(process.argv[out + 1]!) : createWriteStream('', { fd: 3 })).end(code),
    (err: unknown) => {
      console.error('bundling the workflows failed:', err);
      process.exit(1);
    },
  );
}
