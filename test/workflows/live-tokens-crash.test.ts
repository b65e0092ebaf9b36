/**
 * Live tokens across a worker crash (issue 29): the worker process is SIGKILLed while the model's
 * answer streams; the run's SSE client gets `token_reset` for that call, then the tokens of the
 * call asked again by the next worker, and the run's final answer is the retried one.
 */
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { after, before, test } from 'node:test';
import pino from 'pino';
import { createApp } from '../../src/api/app';
import type { ExecutionState } from '../../src/planning/execution-state';
import { connectClient } from '../../src/temporal/connection';
import { Runs } from '../../src/temporal/runs';
import type { Client } from '@temporalio/client';
import { listen, requestJson, type Listening } from '../helpers/http';
import { answer, respondStep } from '../helpers/scenarios';
import { readEvents } from '../helpers/sse-client';
import { startCrashWorker } from '../helpers/crash-workers';
import { StubModelServer } from '../helpers/stub-model-server';
import { testConfig } from '../helpers/temporal-env';

const stub = new StubModelServer();
const config = testConfig();
const workers: ChildProcess[] = [];
let client: Client;
let app: Listening;

async function startWorker(): Promise<ChildProcess> {
  const child = await startCrashWorker(config, stub.url);
  workers.push(child);
  return child;
}

before(async () => {
  await stub.start();
  stub.streaming = true;
  stub.chunkChars = 4;
  stub.chunkDelayMs = 40;
  client = await connectClient(config);
  // The API in this process, the worker in another: tokens cross the embedded channel (DATA_DIR/live).
  app = await listen(createApp({ runs: new Runs(client, config), config, isHealthy: async () => true, logger: pino({ level: 'silent' }) }));
});
after(async () => {
  for (const w of workers) if (w.exitCode === null && w.signalCode === null) w.kill('SIGKILL');
  await app?.close();
  await client?.connection.close();
  await stub.stop();
});

test('a worker SIGKILLed mid-stream: token_reset, then the retried call’s tokens, and the final answer is the retried one', async () => {
  const goal = 'stream through a crash';
  const first = 'The first worker starts this answer but never gets to finish it, however long it talks.';
  const second = 'The second worker answers again, from the start, and this is the answer that counts.';
  stub.script(goal, { execution_plan: [{ steps: [respondStep] }, { steps: [respondStep] }], final_answer: [answer(first), answer(second)] });
  const worker = await startWorker();
  const res = await requestJson<{ runId: string }>(app.url, 'POST', '/v1/runs', { userId: 'crash-live@example.com', goal });
  assert.equal(res.status, 201);
  const { runId } = res.body;
  let killed = false;
  const sse = await readEvents(`${app.url}/v1/runs/${runId}/events`, {
    timeoutMs: 90_000,
    onEvent: (e) => {
      if (killed || e.event !== 'token' || (JSON.parse(e.data) as { field: string }).field !== 'answer') return;
      killed = true;
      worker.kill('SIGKILL');
      void worker.once('exit', () => void startWorker());
    },
  });
  assert.ok(killed, 'the answer streamed before the crash');
  const done = JSON.parse([...sse.events].reverse().find((e) => e.event === 'done')!.data) as ExecutionState;
  assert.equal(done.status, 'completed');
  assert.equal(done.finalAnswer, second);
  const sequence = sse.events.filter((e) => e.event === 'token_reset' || e.event === 'token').map((e) => (e.event === 'token_reset' ? 'RESET' : (JSON.parse(e.data) as { field: string }).field));
  const reset = sequence.lastIndexOf('RESET');
  assert.ok(reset > sequence.indexOf('answer'), `token_reset after the first answer tokens: ${sequence.join(' ')}`);
  const after = sse.events
    .filter((e) => e.event === 'token')
    .slice(sequence.slice(0, reset).filter((k) => k !== 'RESET').length)
    .map((e) => JSON.parse(e.data) as { field: string; delta: string })
    .filter((t) => t.field === 'answer');
  assert.equal(after.map((t) => t.delta).join(''), second, 'after the reset, the retried call’s answer, whole');
});
