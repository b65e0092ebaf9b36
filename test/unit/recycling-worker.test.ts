/** The worker's replacement after a lost task (src/temporal/recycling-worker.ts), on stand-in workers: when it gives up. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Worker } from '@temporalio/worker';
import { LOST_TASK_SIGNS, noteCoreLog } from '../../src/telemetry/core-faults';
import { recycleOnLostTasks, TooManyLeftBehind } from '../../src/temporal/recycling-worker';

/** A stand-in for the SDK's worker: `run()` ends once shut down, unless it `holdsLostRun` (as a worker whose run the core lost). */
class StandIn {
  state: 'RUNNING' | 'STOPPING' | 'STOPPED' = 'RUNNING';
  holdsLostRun = false;
  shutdowns = 0;
  #end!: () => void;
  readonly #done = new Promise<void>((resolve) => (this.#end = resolve));
  run = (): Promise<void> => this.#done;
  getState = () => this.state;
  shutdown = (): void => {
    this.shutdowns++;
    this.state = 'STOPPING';
    if (this.holdsLostRun) return;
    this.state = 'STOPPED';
    this.#end();
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function until(what: string, ok: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !ok(); i++) await sleep(5);
  assert.ok(ok(), what);
}

function recycled(options: { maxLeftBehind: number }) {
  const workers = [new StandIn()];
  const warnings: string[] = [];
  const worker = recycleOnLostTasks(workers[0] as unknown as Worker, {
    create: async () => {
      workers.push(new StandIn());
      return workers.at(-1) as unknown as Worker;
    },
    warn: (message) => void warnings.push(message),
    drainMs: 20,
    ...options,
  });
  /** The core loses a run of the worker polling: it will not stop once shut down. */
  const loseRun = async () => {
    const count = workers.length;
    workers.at(-1)!.holdsLostRun = true;
    noteCoreLog(LOST_TASK_SIGNS[0]!);
    await until('a replacement is made', () => workers.length === count + 1);
  };
  return { worker, workers, warnings, loseRun };
}

test('past maxLeftBehind replaced workers that never stopped, run() stops the one polling and fails', async () => {
  const { worker, workers, warnings, loseRun } = recycled({ maxLeftBehind: 2 });
  const running = worker.run();
  let failure: unknown;
  running.catch((err: unknown) => (failure = err));
  await loseRun();
  await until('the first is left behind', () => warnings.filter((w) => w.includes('left behind')).length === 1);
  assert.equal(failure, undefined, 'one left behind is allowed');
  await loseRun();
  await assert.rejects(running, (err: unknown) => err instanceof TooManyLeftBehind && err.leftBehind === 2);
  assert.equal(workers.length, 3);
  assert.deepEqual(
    workers.map((w) => w.state),
    ['STOPPING', 'STOPPING', 'STOPPED'],
    'the two that lost a run are left behind; the one polling was shut down and stopped before run() failed',
  );
});

test('replaced workers that stop are not counted, and shutdown() still ends run()', async () => {
  const { worker, workers, warnings } = recycled({ maxLeftBehind: 1 });
  const running = worker.run();
  for (let i = 1; i <= 3; i++) {
    noteCoreLog(LOST_TASK_SIGNS[1]!);
    await until(`replacement ${i}`, () => workers.length === i + 1);
  }
  await sleep(60);
  assert.equal(warnings.filter((w) => w.includes('left behind')).length, 0);
  worker.shutdown();
  await running;
  assert.deepEqual(
    workers.map((w) => w.state),
    ['STOPPED', 'STOPPED', 'STOPPED', 'STOPPED'],
  );
});
