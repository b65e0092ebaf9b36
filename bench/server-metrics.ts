/**
 * The dev server's own Prometheus metrics, read before and after a benchmark case, so the
 * report says where a step's time goes inside Temporal: how long each history queue task
 * waited before it was loaded (`task_latency_load`, the queue reader's rate limit shows
 * here), how long it was scheduled and processed, and how long matching took to hand
 * a task to a poller. scripts/bench.mjs passes the endpoint in
 * THREADLINE_BENCH_METRICS_URL. Also the server process's CPU time (`serverCpuMs`), from the pid
 * it passes in THREADLINE_BENCH_SERVER_PID.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';

/**
 * Where a benchmark on the dev server writes its results: `bench/results/<name>.json`, or
 * `<name>-<variant>.json` when scripts/bench.mjs ran the server with other settings
 * (THREADLINE_BENCH_VARIANT: `--server-defaults`, extra `--dynamic-config`, `--db-file`), so the
 * standard results stay comparable.
 */
export function resultsFile(name: string, variant = process.env.THREADLINE_BENCH_VARIANT): string {
  return path.join(__dirname, 'results', variant ? `${name}-${variant}.json` : `${name}.json`);
}

/** Histograms read, by the label that names what was measured. */
const HISTOGRAMS = {
  /** queue task created → loaded by the queue reader (the reader's poll rate limit) */
  task_latency_load: 'operation',
  /** loaded → picked by the scheduler */
  task_latency_schedule: 'operation',
  /** processing time of the task */
  task_latency_processing: 'operation',
  /** created → done, the whole time a task spent in its history queue */
  task_latency_queue: 'operation',
  /** matching: a task handed straight to a waiting poller */
  syncmatch_latency: 'task_type',
  /** matching: a task taken from the backlog */
  asyncmatch_latency: 'task_type',
} as const;
export type HistogramName = keyof typeof HISTOGRAMS;

/** sum (seconds) and count per histogram and label value. */
export type MetricsSnapshot = Record<string, { sum: number; count: number }>;

const key = (name: string, label: string) => `${name}|${label}`;

/** Parses the Prometheus text format for the histograms above. */
export function parseMetrics(text: string): MetricsSnapshot {
  const out: MetricsSnapshot = {};
  const line = /^(\w+?)_(sum|count)\{([^}]*)\}\s+(\S+)/;
  for (const raw of text.split('\n')) {
    const m = line.exec(raw);
    if (!m) continue;
    const [, name = '', part, labels = '', value = ''] = m;
    if (!(name in HISTOGRAMS)) continue;
    const labelName = HISTOGRAMS[name as HistogramName];
    const labelValue = new RegExp(`(?:^|,)${labelName}="([^"]*)"`).exec(labels)?.[1] ?? 'all';
    const entry = (out[key(name, labelValue)] ??= { sum: 0, count: 0 });
    // Series differing in other labels (namespace, service) add up.
    if (part === 'sum') entry.sum += Number(value);
    else entry.count += Number(value);
  }
  return out;
}

export async function scrapeMetrics(url: string | undefined): Promise<MetricsSnapshot | null> {
  if (!url) return null;
  try {
    const res = await fetch(url);
    return res.ok ? parseMetrics(await res.text()) : null;
  } catch {
    return null; // metrics are extra information; the benchmark does not depend on them
  }
}

export interface LatencyRow {
  metric: HistogramName;
  of: string;
  count: number;
  meanMs: number;
}

/** Mean latency per histogram and label over what happened between two snapshots (busiest first). */
export function latencyBetween(before: MetricsSnapshot, after: MetricsSnapshot, minCount = 10): LatencyRow[] {
  const rows: LatencyRow[] = [];
  for (const [k, a] of Object.entries(after)) {
    const b = before[k] ?? { sum: 0, count: 0 };
    const count = a.count - b.count;
    if (count < minCount) continue;
    const [metric = '', of = ''] = k.split('|');
    rows.push({ metric: metric as HistogramName, of, count, meanMs: Number(((1000 * (a.sum - b.sum)) / count).toFixed(2)) });
  }
  return rows.sort((x, y) => x.metric.localeCompare(y.metric) || y.count - x.count);
}

/**
 * CPU time (ms) a process has used so far, from /proc (Linux; null elsewhere, or for no pid): by
 * default the dev server's, whose pid scripts/bench.mjs passes in THREADLINE_BENCH_SERVER_PID. The kernel counts in clock ticks of
 * 10 ms (USER_HZ is 100 on Linux).
 */
export function serverCpuMs(pid = Number(process.env.THREADLINE_BENCH_SERVER_PID)): number | null {
  if (!Number.isInteger(pid) || pid <= 0) return null;
  return procStat(`/proc/${pid}/stat`)?.cpuMs ?? null;
}

/** A process's or thread's name and CPU ms (user + system) from its /proc stat file; null when gone or unreadable. */
export function procStat(file: string): { name: string; cpuMs: number } | null {
  let stat: string;
  try {
    stat = readFileSync(file, 'utf8');
  } catch {
    return null;
  }
  // The name is in parentheses and may hold spaces; after it, utime and stime are the 12th and 13th fields.
  const close = stat.lastIndexOf(')');
  const fields = stat.slice(close + 2).split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]);
  return Number.isFinite(ticks) ? { name: stat.slice(stat.indexOf('(') + 1, close), cpuMs: ticks * 10 } : null;
}
