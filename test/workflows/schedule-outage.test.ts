/**
 * Schedules are durable (issue 33 §5): they live in Temporal, so an outage delays an occurrence,
 * never loses it. On a dev server of our own that keeps its data in a SQLite file (as `npm start`
 * runs it): the server is SIGKILLed while two schedules are due and started again on the same file —
 * the occurrence inside its catch-up window runs, the one past it is skipped; and a worker that is
 * down when an occurrence fires runs it once it is back.
 */
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, before, test } from 'node:test';
import type { Client } from '@temporalio/client';
import type { Config } from '../../src/config';
import { connectClient } from '../../src/temporal/connection';
import { Runs } from '../../src/temporal/runs';
import { Schedules } from '../../src/temporal/schedules';
import { answer, cont, respondStep } from '../helpers/scenarios';
import { startCrashWorker } from '../helpers/crash-workers';
import { StubModelServer } from '../helpers/stub-model-server';
import { testConfig, waitFor } from '../helpers/temporal-env';

interface DevServer {
  process: ChildProcess;
  address: string;
  stop(): Promise<void>;
}
interface Lib {
  startTemporalDev(options: { bin?: string; dbFile: string; port: number; uiPort: null; onLine: (line: string) => void }): Promise<DevServer>;
  freePort(): Promise<number>;
}

const stub = new StubModelServer();
stub.fallback = (req) => {
  if (!req.goal.startsWith('durable:')) return undefined;
  if (req.name === 'execution_plan') return { steps: [respondStep] };
  if (req.name === 'replan_decision') return cont;
  if (req.name === 'final_answer') return answer(`done: ${req.goal}`);
  return undefined;
};

let lib: Lib;
let dbFile = '';
let port = 0;
let server: DevServer | null = null;
const root = path.resolve(__dirname, '../..');
let worker: ChildProcess | null = null;
let client: Client | null = null;
let config: Config;

async function startServer(): Promise<void> {
  server = await lib.startTemporalDev({ bin: process.env.THREADLINE_TEMPORAL_BIN, dbFile, port, uiPort: null, onLine: () => undefined });
}

/** SIGKILL of the server's whole process group, as a crash (the chaos run does the same). */
async function killServer(): Promise<void> {
  const child = server?.process;
  server = null;
  if (!child?.pid || child.exitCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  process.kill(-child.pid, 'SIGKILL');
  await exited;
}

/** The production worker in a process of its own (test/helpers/crash-worker.ts), on the pre-built workflow bundle. */
async function startWorker(): Promise<void> {
  worker = await startCrashWorker(config, stub.url);
}

async function killWorker(): Promise<void> {
  const child = worker;
  worker = null;
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGKILL');
  await exited;
}

const schedules = () => new Schedules(client as Client, new Runs(client as Client, config));

before(async () => {
  await stub.start();
  lib = (await import(pathToFileURL(path.join(root, 'scripts/lib.mjs')).href)) as Lib;
  dbFile = path.join(mkdtempSync(path.join(os.tmpdir(), 'threadline-schedule-outage-')), 'temporal.sqlite');
  port = await lib.freePort();
  config = testConfig({ TEMPORAL_ADDRESS: `127.0.0.1:${port}` });
  await startServer();
  client = await connectClient(config);
  await startWorker();
});
after(async () => {
  await killWorker();
  await client?.connection.close();
  await server?.stop();
  await stub.stop();
});

test('the server SIGKILLed while schedules are due: after a restart on the same data the one within its catch-up window runs, the one past it does not', { timeout: 120_000 }, async () => {
  // Ahead by more than two creates take on a loaded machine (2.8 s each was seen): both are made before it is due.
  const dueAt = new Date(Math.ceil((Date.now() + 8_000) / 1000) * 1000);
  const at = dueAt.toISOString();
  const within = await schedules().create({ userId: 'outage-ada', goal: 'durable: within the window', at, catchupWindow: '60s' });
  const past = await schedules().create({ userId: 'outage-ada', goal: 'durable: past the window', at, catchupWindow: '10s' });
  assert.deepEqual(within.nextRuns, [at]);

  await client?.connection.close();
  client = null;
  await killServer();
  // Down through the due time, and 12 s past it: longer than the short window, within the long one.
  await new Promise((r) => setTimeout(r, dueAt.getTime() + 12_000 - Date.now()));
  const restarted = Date.now();
  await startServer();
  client = await connectClient(config);

  const fired = await waitFor(
    'the occurrence within its window to run and complete',
    async () => {
      const v = await schedules().get(within.scheduleId);
      return v.recentRuns[0]?.status === 'completed' ? v : null;
    },
    40_000,
  );
  assert.equal(fired.recentRuns.length, 1);
  assert.equal(fired.recentRuns[0]?.at, at, 'the occurrence is the one that was due');
  const run = await (client as Client).workflow.getHandle(fired.recentRuns[0]?.runId ?? '').describe();
  assert.ok(run.startTime.getTime() >= restarted, `started after the restart (${run.startTime.toISOString()})`);
  const pastView = await schedules().get(past.scheduleId);
  assert.deepEqual(pastView.recentRuns, [], 'missed by more than its 10 s catch-up window: skipped');
  assert.deepEqual(pastView.nextRuns, []);
  await schedules().delete(within.scheduleId);
  await schedules().delete(past.scheduleId);
});

test('a worker down when an occurrence fires: the run starts on time and completes once a worker is back', { timeout: 120_000 }, async () => {
  await killWorker();
  const at = new Date(Math.ceil((Date.now() + 2_000) / 1000) * 1000).toISOString();
  const { scheduleId } = await schedules().create({ userId: 'outage-bo', goal: 'durable: while no worker runs', at });
  const started = await waitFor('the occurrence to start', async () => (await schedules().get(scheduleId)).recentRuns[0]);
  const handle = (client as Client).workflow.getHandle(started.runId);
  await new Promise((r) => setTimeout(r, 1_500));
  assert.equal((await handle.describe()).status.name, 'RUNNING', 'no worker: it waits');
  await startWorker();
  const state = (await handle.result()) as { status: string; finalAnswer: string };
  assert.equal(state.status, 'completed');
  assert.equal(state.finalAnswer, 'done: durable: while no worker runs');
  assert.equal((await schedules().get(scheduleId)).recentRuns.length, 1, 'one run, no duplicate');
  await schedules().delete(scheduleId);
});
