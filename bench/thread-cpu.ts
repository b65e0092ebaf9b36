/**
 * This process's CPU by thread kind, from /proc/self/task (Linux; elsewhere every figure is null):
 * where a benchmark case's time goes — the main thread (activities, the SDK's activity side), the
 * workflow threads (the SDK's sandbox), V8's helper threads (GC, compilation) and the Temporal core.
 *
 * Node names its V8 platform threads and its worker threads alike ("node"), so they are told apart by
 * age: the ones alive when `ThreadCpu` is made (before any worker) are V8's, later ones workflow threads.
 */
import { readdirSync } from 'node:fs';
import { procStat } from './server-metrics';

export const THREAD_KINDS = ['main', 'workflow', 'v8', 'core', 'other'] as const;
export type ThreadKind = (typeof THREAD_KINDS)[number];
export type CpuByKind = Record<ThreadKind, number>;

const TASKS = '/proc/self/task';

const zero = (): CpuByKind => ({ main: 0, workflow: 0, v8: 0, core: 0, other: 0 });

export class ThreadCpu {
  readonly #early: Set<string>;
  readonly #pid = String(process.pid);

  /** Make it before any worker: the threads alive now are the main thread and V8's. */
  constructor() {
    this.#early = new Set(ThreadCpu.#tids());
  }

  static #tids(): string[] {
    try {
      return readdirSync(TASKS);
    } catch {
      return [];
    }
  }

  #kind(tid: string, name: string): ThreadKind {
    if (tid === this.#pid) return 'main';
    if (name.startsWith('tokio-runtime') || name.startsWith('workflow-proces')) return 'core';
    if (name === 'node') return this.#early.has(tid) ? 'v8' : 'workflow';
    return 'other';
  }

  /** Each live thread's CPU ms so far, by thread id, with its kind. */
  snapshot(): Map<string, { kind: ThreadKind; ms: number }> {
    const out = new Map<string, { kind: ThreadKind; ms: number }>();
    for (const tid of ThreadCpu.#tids()) {
      const task = procStat(`${TASKS}/${tid}/stat`);
      if (task) out.set(tid, { kind: this.#kind(tid, task.name), ms: task.cpuMs });
    }
    return out;
  }

  /** CPU ms by kind between two snapshots (a thread that exited meanwhile is left out). */
  static between(before: ReturnType<ThreadCpu['snapshot']>, after: ReturnType<ThreadCpu['snapshot']>): CpuByKind {
    const sum = zero();
    for (const [tid, { kind, ms }] of after) sum[kind] += ms - (before.get(tid)?.ms ?? 0);
    return sum;
  }

  /** Runs `fn` and adds the CPU each kind of thread spent meanwhile to `into`. */
  async measure<T>(into: CpuByKind, fn: () => Promise<T>): Promise<T> {
    const before = this.snapshot();
    const result = await fn();
    const spent = ThreadCpu.between(before, this.snapshot());
    for (const kind of THREAD_KINDS) into[kind] += spent[kind];
    return result;
  }

  static zero = zero;
}

/** `cpu` per unit (step, iteration), rounded to hundredths of a ms; null where /proc is missing. */
export function perUnit(cpu: CpuByKind, units: number): CpuByKind | null {
  const total = THREAD_KINDS.reduce((s, k) => s + cpu[k], 0);
  if (total === 0 || units === 0) return null;
  return Object.fromEntries(THREAD_KINDS.map((k) => [k, Math.round((cpu[k] / units) * 100) / 100])) as CpuByKind;
}
