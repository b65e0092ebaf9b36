/**
 * Replaces a worker whose native core lost a run's workflow task (src/telemetry/core-faults.ts): the
 * run would otherwise stop until the process restarts. The old worker is shut down, so its pollers
 * stop, and a new one with the same options polls: the lost run's next task goes to it, and it replays
 * the run from history. What the old worker held goes there too, as after any worker restart: its
 * cached runs replay when they next move, and the activity attempts it was running are retried.
 */
import type { Worker } from '@temporalio/worker';
import { onLostTask } from '../telemetry/core-faults';

export interface RecycleOptions {
  /** Makes the replacement: a worker with the first one's options. */
  create: () => Promise<Worker>;
  warn: (message: string, fields?: Record<string, unknown>) => void;
  /**
   * How long a replaced worker may take to stop before it is left behind, its pollers stopped: the
   * run it lost holds its shutdown forever.
   * @default 30_000
   */
  drainMs?: number;
  /**
   * How many replaced workers may be left behind before `run()` fails: each keeps its workflow threads
   * and the runs it cached until the process exits, so past this the process ends (once the worker
   * polling has stopped) for its supervisor to start a fresh one.
   * @default 3
   */
  maxLeftBehind?: number;
}

/** `run()`'s failure once too many replaced workers were left behind in the process. */
export class TooManyLeftBehind extends Error {
  constructor(readonly leftBehind: number) {
    super(`${leftBehind} replaced workers are left behind in this process (each holds the run it lost): stopping, to be started afresh`);
    this.name = 'TooManyLeftBehind';
  }
}

interface Running {
  worker: Worker;
  shutdown: () => void;
  done: Promise<void>;
}

/**
 * Makes `first.run()` run `first`, and each replacement in turn, until shut down: a lost-task sign of
 * the core while it runs replaces the worker polling. `first.shutdown()` stops the one polling, and
 * `first.getState()` is its state. Once `maxLeftBehind` replaced workers did not stop, the one polling
 * is shut down and `run()` fails with TooManyLeftBehind. Returns `first`.
 */
export function recycleOnLostTasks(first: Worker, options: RecycleOptions): Worker {
  const drainMs = options.drainMs ?? 30_000;
  const maxLeftBehind = options.maxLeftBehind ?? 3;
  const run = first.run.bind(first);
  const shutdown = first.shutdown.bind(first);
  const getState = first.getState.bind(first);
  let current: Running | undefined;
  first.getState = () => (current && current.worker !== first ? current.worker.getState() : getState());
  let stopping = false;
  first.shutdown = () => {
    stopping = true;
    (current?.shutdown ?? shutdown)();
  };
  first.run = async () => {
    let polling: Running = { worker: first, shutdown, done: run() };
    current = polling;
    let lost: (() => void) | undefined;
    const unsubscribe = onLostTask(() => lost?.());
    let leftBehind = 0;
    let giveUp: (err: Error) => void = () => undefined;
    const gaveUp = new Promise<never>((_, reject) => (giveUp = reject));
    gaveUp.catch(() => undefined);
    try {
      for (;;) {
        const fault = new Promise<'lost'>((resolve) => (lost = () => resolve('lost')));
        let outcome: 'ended' | 'lost';
        try {
          outcome = await Promise.race([polling.done.then(() => 'ended' as const), fault, gaveUp]);
        } catch (err) {
          if (!(err instanceof TooManyLeftBehind)) throw err;
          // The one polling stops first, so its activities finish or are handed back.
          stopping = true;
          polling.shutdown();
          await drained(polling.done, drainMs);
          throw err;
        }
        if (outcome === 'ended') return;
        if (stopping || polling.worker.getState() !== 'RUNNING') continue;
        options.warn('the worker lost a run: replacing it with a new worker, which replays that run and the ones it held');
        // The old one stops polling first: the core takes one worker per task queue and connection.
        const old = polling;
        old.shutdown();
        void drained(old.done, drainMs).then((stopped) => {
          if (stopped) return;
          leftBehind++;
          options.warn(`a replaced worker did not stop within ${drainMs} ms (the run it lost holds it): left behind, its pollers stopped`, { leftBehind, maxLeftBehind });
          if (leftBehind >= maxLeftBehind) giveUp(new TooManyLeftBehind(leftBehind));
        });
        // Failing, run() fails: the process ends and restarts rather than run no worker.
        const next = await options.create();
        polling = { worker: next, shutdown: next.shutdown.bind(next), done: next.run() };
        current = polling;
        if (stopping) polling.shutdown();
      }
    } finally {
      unsubscribe();
    }
  };
  return first;
}

/** Whether `done` settles within `ms`. */
async function drained(done: Promise<void>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  try {
    return await Promise.race([
      done.then(
        () => true,
        () => true,
      ),
      timeout,
    ]);
  } finally {
    clearTimeout(timer);
  }
}
