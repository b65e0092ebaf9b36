/** Pieces the process-level benchmarks share: a worker built and started as `npm run worker` does, a task pool, percentiles. */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const ROOT = path.resolve(__dirname, '..');

/** The `msg` of a pino JSON line, or the line itself when it is not one. */
function logMessage(line: string): string | undefined {
  try {
    const parsed: unknown = JSON.parse(line);
    return typeof parsed === 'object' && parsed !== null && 'msg' in parsed && typeof parsed.msg === 'string' ? parsed.msg : undefined;
  } catch {
    return line;
  }
}

/** The parts of scripts/lib.mjs (the launcher scripts' helpers) these benchmarks use. */
interface ScriptsLib {
  WORKER_NODE_FLAGS: readonly string[];
  buildDist(): Promise<void>;
  nodeWorker(): string[];
  workerEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv;
  freePort(): Promise<number>;
}

const scriptsLib = async (): Promise<ScriptsLib> => (await import(pathToFileURL(path.join(ROOT, 'scripts', 'lib.mjs')).href)) as ScriptsLib;

/** A benchmark's own worker (`script`, a .ts file under bench/) compiled into dist/bench/ by esbuild, as the worker is into dist/ (no tsx at run time). */
async function buildScript(script: string): Promise<string> {
  const { build } = await import('esbuild');
  const outfile = path.join(ROOT, 'dist', 'bench', script.replace(/\.ts$/, '.js'));
  await build({ entryPoints: [path.join(__dirname, script)], outfile, bundle: true, packages: 'external', format: 'cjs', platform: 'node', target: 'node20', logLevel: 'error' });
  return outfile;
}

/**
 * The worker process, built and started as `npm run worker` does (scripts/lib.mjs), resolved once it has started
 * polling (its `worker: …` banner). `script`: a benchmark's own worker (a .ts file under bench/) instead, compiled
 * and started with the worker's node flags and environment defaults.
 */
export async function startWorker(env: NodeJS.ProcessEnv, script?: string): Promise<{ child: ChildProcess; banner: string; tail: () => string }> {
  const lib = await scriptsLib();
  const argv = script ? [...lib.WORKER_NODE_FLAGS, await buildScript(script)] : (await lib.buildDist(), lib.nodeWorker());
  const child = spawn(process.execPath, argv, { cwd: ROOT, env: lib.workerEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: string[] = [];
  const keep = (chunk: Buffer) => {
    lines.push(...chunk.toString().split('\n').filter(Boolean));
    lines.splice(0, Math.max(0, lines.length - 40));
  };
  child.stderr!.on('data', keep);
  const banner = await new Promise<string>((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      keep(chunk);
      // The worker logs pino JSON lines; its banner is the one whose msg starts "worker: ".
      const line = chunk
        .toString()
        .split('\n')
        .map(logMessage)
        .find((msg) => msg?.startsWith('worker: '));
      if (line) resolve(line);
    });
    child.once('exit', (code) => reject(new Error(`the worker exited (${code}) before it started:\n${lines.join('\n')}`)));
  });
  return { child, banner, tail: () => lines.join('\n') };
}

/** Runs `task` over `items`, `limit` at a time. */
export async function pool<T>(items: readonly T[], limit: number, task: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) await task(items[next++]!);
    }),
  );
}

/** The p-th percentile of ascending `sorted` (NaN when empty). */
export function percentile(sorted: number[], p: number): number {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]! : NaN;
}

/** A TCP port free on 127.0.0.1 right now: scripts/lib.mjs's, which the scripts use. */
export async function freePort(): Promise<number> {
  return (await scriptsLib()).freePort();
}
