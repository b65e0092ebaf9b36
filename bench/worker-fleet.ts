/**
 * Worker processes as the many-runs benchmark measures them: started one after another, each with its
 * SDK metrics endpoint; their CPU from /proc/<pid>/stat, their memory from /proc/<pid>/status sampled
 * every 200 ms (VmRSS per phase, VmHWM overall, the largest of them), and the SDK's workflow-task counters.
 */
import { readFileSync } from 'node:fs';
import type { ChildProcess } from 'node:child_process';
import { round } from './figures';
import { serverCpuMs } from './server-metrics';
import { freePort, startWorker } from './worker-process';

const SAMPLE_MS = 200;

/** VmRSS and VmHWM (peak RSS) of a process, in KiB; null once it is gone. */
function memoryOf(pid: number): { rss: number; hwm: number } | null {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
    return { rss: field('VmRSS'), hwm: field('VmHWM') };
  } catch {
    return null;
  }
}

/** What the workers' SDK metrics (WORKER_METRICS_ADDRESS) say about where their workflow tasks went. */
export const WORKER_COUNTERS = [
  'temporal_sticky_cache_hit',
  'temporal_sticky_cache_miss',
  'temporal_sticky_cache_total_forced_eviction',
  'temporal_workflow_task_execution_latency_count',
  'temporal_workflow_task_execution_failed',
  'temporal_workflow_task_schedule_to_start_latency_sum',
  'temporal_workflow_task_schedule_to_start_latency_count',
] as const;
export type WorkerCounts = Record<(typeof WORKER_COUNTERS)[number], number>;

export const countsBetween = (before: WorkerCounts, after: WorkerCounts) => Object.fromEntries(WORKER_COUNTERS.map((name) => [name, round(after[name] - before[name])])) as WorkerCounts;

export const mb = (kib: number) => round(kib / 1024);

export type Phase = 'idle' | 'starting' | 'replying';

/** N worker processes, measured. */
export class WorkerFleet {
  readonly peakRss: Record<Phase, number> = { idle: 0, starting: 0, replying: 0 };
  phase: Phase = 'idle';
  /** Rejects when a worker exits before `stop`. */
  readonly exited: Promise<never>;
  #lastHwm = 0;
  readonly #sampler: NodeJS.Timeout;

  private constructor(
    readonly workers: { child: ChildProcess; banner: string; tail: () => string }[],
    readonly metricsUrls: string[],
  ) {
    this.exited = Promise.race(
      workers.map((w) => new Promise<never>((_, reject) => w.child.once('exit', (code) => reject(new Error(`a worker exited (${code}) during the benchmark:\n${w.tail()}`))))),
    );
    this.exited.catch(() => undefined);
    this.#sample();
    this.#sampler = setInterval(() => this.#sample(), SAMPLE_MS);
  }

  /** `count` workers (`script`: a benchmark's own, see startWorker), one after another: the first creates the memory store's tables, the next finds them. */
  static async start(count: number, env: NodeJS.ProcessEnv, script?: string): Promise<WorkerFleet> {
    const workers: WorkerFleet['workers'] = [];
    const metricsUrls: string[] = [];
    for (let i = 0; i < count; i++) {
      const metricsAddress = `127.0.0.1:${await freePort()}`;
      metricsUrls.push(`http://${metricsAddress}/metrics`);
      workers.push(await startWorker({ ...env, WORKER_METRICS_ADDRESS: metricsAddress }, script));
    }
    return new WorkerFleet(workers, metricsUrls);
  }

  get pids(): number[] {
    return this.workers.map((w) => w.child.pid!);
  }

  /** CPU seconds the workers have used so far (user + system). */
  cpuS(): number {
    return this.pids.reduce((sum, pid) => sum + (serverCpuMs(pid) ?? NaN), 0) / 1000;
  }

  /** The SDK counters, summed over every series and every worker. */
  async counts(): Promise<WorkerCounts> {
    const counts = Object.fromEntries(WORKER_COUNTERS.map((name) => [name, 0])) as WorkerCounts;
    for (const url of this.metricsUrls) {
      const text = await fetch(url).then(
        (res) => res.text(),
        () => '',
      );
      for (const line of text.split('\n')) {
        const m = /^(\w+)(?:\{[^}]*\})?\s+(\S+)$/.exec(line);
        if (m && m[1]! in counts) counts[m[1] as keyof WorkerCounts] += Number(m[2]);
      }
    }
    return counts;
  }

  /** The largest VmHWM of the workers, in KiB. */
  hwmKiB(): number {
    return Math.max(this.#lastHwm, ...this.pids.map((pid) => memoryOf(pid)?.hwm ?? 0));
  }

  #sample(): void {
    for (const pid of this.pids) {
      const m = memoryOf(pid);
      if (!m) continue;
      this.peakRss[this.phase] = Math.max(this.peakRss[this.phase], m.rss);
      this.#lastHwm = Math.max(this.#lastHwm, m.hwm);
    }
  }

  /** Stops sampling and the workers (SIGTERM), and waits until they have exited. */
  async stop(): Promise<void> {
    clearInterval(this.#sampler);
    await Promise.all(
      this.workers.map(async (w) => {
        w.child.removeAllListeners('exit');
        if (w.child.exitCode === null && w.child.signalCode === null) w.child.kill('SIGTERM');
        await new Promise((r) => (w.child.exitCode !== null || w.child.signalCode !== null ? r(undefined) : w.child.once('exit', r)));
      }),
    );
  }
}
