/** What the benchmarks share to report their figures: rounding, quantiles, numeric flags, and the machine they ran on. */
import os from 'node:os';

export const round = (x: number, digits = 1) => Number(x.toFixed(digits));

/** The q-quantile (0–1) of `xs`, by the nearest rank below; NaN when empty. */
export const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * (s.length - 1)))] ?? NaN;
};

/** The positive whole number after `name` on the command line, or `fallback`. */
export function argNumber(name: string, fallback: number): number {
  const i = process.argv.indexOf(name);
  const n = i >= 0 ? Number(process.argv[i + 1]) : fallback;
  if (!Number.isInteger(n) || n < 1) throw new Error(`${name}: a positive whole number`);
  return n;
}

/** The machine a results file was measured on. */
export function machine() {
  return {
    cores: os.cpus().length,
    cpu: os.cpus()[0]?.model ?? 'unknown',
    memoryMB: Math.round(os.totalmem() / 2 ** 20),
    platform: `${os.platform()} ${os.release()} ${os.arch()}`,
    node: process.version,
  };
}
