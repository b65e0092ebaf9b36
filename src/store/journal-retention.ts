/**
 * How long the step journals are kept (JOURNAL_RETENTION_DAYS). A journal entry matters only while
 * its call can run again: a crash before the call's result reached the run's history, or a retry.
 * Afterwards the history holds the result, and a run that ended never calls again (a fork or a reset
 * is a new run, with keys of its own). Without a sweep every run left its logs under DATA_DIR/kv for
 * good: three files a run, the model's replies and the tools' results in them.
 *
 * A log is removed once nothing was appended to it for the retention. A run that waits longer than
 * that for a person keeps working: its next calls append to a new log. What is lost is a call's entry
 * written as its log is being removed, and a call retried after longer than the retention; such a
 * call runs again (docs/operations.md "Journal retention").
 */
import { opendir, stat, unlink } from 'node:fs/promises';
import path from 'node:path';
import { journalDirectories } from './kv';
import { isMissing } from './small-files';

export interface SweepResult {
  removed: number;
  bytes: number;
}

const DAY_MS = 24 * 60 * 60 * 1000;

/** Removes the files of `dir` named `*.{suffix}` last written before `before`. */
async function sweepDir(dir: string, suffix: string, before: number, into: SweepResult): Promise<void> {
  let entries;
  try {
    entries = await opendir(dir); // streamed: a journal directory may hold a file per run
  } catch (err) {
    if (isMissing(err)) return;
    throw err;
  }
  for await (const entry of entries) {
    if (!entry.isFile() || !entry.name.endsWith(suffix)) continue;
    const file = path.join(dir, entry.name);
    try {
      const { mtimeMs, size } = await stat(file);
      if (mtimeMs >= before) continue;
      await unlink(file);
      into.removed++;
      into.bytes += size;
    } catch (err) {
      if (!isMissing(err)) throw err; // another worker's sweep took it
    }
  }
}

/**
 * Removes the journal files under `root` (a FileKeyValueStore's directory) that nothing was written to
 * since `before`: the runs' logs, and the one-entry files written before the logs.
 */
export async function sweepJournals(root: string, before: Date): Promise<SweepResult> {
  const result: SweepResult = { removed: 0, bytes: 0 };
  for (const { logs, entries } of journalDirectories(root)) {
    await sweepDir(logs, '.jsonl', before.getTime(), result);
    if (entries) await sweepDir(entries, '.json', before.getTime(), result);
  }
  return result;
}

/**
 * The worker's sweep of the journals under `root`: at its start and then daily, logs untouched for
 * `retentionDays` are removed (0: kept for good). Returns what stops the sweeps (and waits for one under way).
 */
export function startJournalSweeps(root: string, retentionDays: number, log: (message: string) => void): () => Promise<void> {
  if (retentionDays <= 0) return async () => undefined;
  let running: Promise<void> | null = null;
  const sweep = () => {
    running ??= sweepJournals(root, new Date(Date.now() - retentionDays * DAY_MS))
      .then(({ removed, bytes }) => void (removed > 0 && log(`journal sweep: ${removed} journal files untouched for ${retentionDays} days removed (${bytes} bytes)`)))
      .catch((err: unknown) => log(`journal sweep failed: ${err instanceof Error ? err.message : String(err)}`)) // retried tomorrow
      .finally(() => (running = null));
  };
  sweep();
  const timer = setInterval(sweep, DAY_MS);
  timer.unref();
  return async () => {
    clearInterval(timer);
    await running;
  };
}
