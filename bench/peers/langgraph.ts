/**
 * Row (f) of bench/orchestration.ts: the same zero-latency plan loop as (a) in LangGraph.js with its
 * PostgreSQL checkpointer (bench/peers/langgraph/loop.mjs), driven here as a child process so that
 * its packages stay in the scratch folder scripts/bench.mjs installs, outside Threadline's dependencies.
 */
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import { z } from 'zod';

const DIR = path.join(__dirname, 'langgraph');

/**
 * When each super-step's checkpoint is written: `sync` before the next step starts (comparable to
 * Temporal, which records a step's result before the next one is scheduled); `async` (LangGraph's
 * default) while the next step runs.
 */
export type Durability = 'sync' | 'async';

export interface PeerRun {
  ms: number;
  /** Checkpoints the run left in PostgreSQL. */
  checkpoints: number;
  /** Bytes of the run's rows: checkpoints and metadata as text, blobs, pending writes. */
  bytes: number;
}

export interface LangGraphPeer {
  versions: Record<string, string>;
  run(steps: number, durability: Durability): Promise<PeerRun>;
  close(): Promise<void>;
}

const ReadySchema = z.object({ ready: z.literal(true), versions: z.record(z.string(), z.string()) });
const ReplySchema = z.union([z.object({ ms: z.number(), checkpoints: z.number(), bytes: z.number() }), z.object({ error: z.string() })]);

/** The peer, set up (schema created), or why not: its packages are installed by `npm run bench`. */
export async function startLangGraphPeer(answer: string): Promise<LangGraphPeer | { skipped: string }> {
  if (!existsSync(path.join(DIR, 'node_modules', '.package-lock.json'))) {
    return { skipped: `its packages are not installed in ${path.relative(process.cwd(), DIR)} (\`npm run bench\` installs them)` };
  }
  const child: ChildProcessByStdio<Writable, Readable, null> = spawn(process.execPath, ['loop.mjs'], { cwd: DIR, stdio: ['pipe', 'pipe', 'inherit'] });
  const waiting: { resolve(line: string): void; reject(err: Error): void }[] = [];
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let gone: Error | null = null;
  child.once('exit', (code, signal) => {
    gone = new Error(`the LangGraph.js peer exited (${signal ?? `code ${code}`})`);
    for (const w of waiting.splice(0)) w.reject(gone);
  });
  child.once('error', (err) => {
    gone = err;
    for (const w of waiting.splice(0)) w.reject(err);
  });
  child.stdin.on('error', () => undefined); // a peer that died is reported by 'exit' above
  readline.createInterface({ input: child.stdout }).on('line', (line) => waiting.shift()?.resolve(line));
  const nextLine = () => new Promise<string>((resolve, reject) => (gone ? reject(gone) : waiting.push({ resolve, reject })));

  const ready = ReadySchema.parse(JSON.parse(await nextLine()));
  return {
    versions: ready.versions,
    async run(steps, durability) {
      const reply = nextLine();
      child.stdin.write(`${JSON.stringify({ steps, answer, durability })}\n`);
      const parsed = ReplySchema.parse(JSON.parse(await reply));
      if ('error' in parsed) throw new Error(`(f) LangGraph.js run: ${parsed.error}`);
      return parsed;
    },
    async close() {
      child.stdin.end(); // it drops its schema and exits
      await exited;
    },
  };
}
