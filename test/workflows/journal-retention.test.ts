/**
 * Journal retention on a real run: a run waiting for a person longer than the retention has its
 * journal logs swept, and still takes the reply and ends, its next calls journaled in new logs.
 * Real server, real worker with its file journals under DATA_DIR, the real `openai` client to the stub model server.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import { after, before, test } from 'node:test';
import type { ExecutionState } from '../../src/planning/execution-state';
import { journalDirectories, kvDirOf } from '../../src/store/kv';
import { sweepJournals } from '../../src/store/journal-retention';
import { Runs } from '../../src/temporal/runs';
import { answer, askStep, cont, respondStep, toolStep } from '../helpers/scenarios';
import { StubModelServer } from '../helpers/stub-model-server';
import { startTestEnv, stubProvider, waitFor, type TestEnv } from '../helpers/temporal-env';

const stub = new StubModelServer();
let env: TestEnv;
let runs: Runs;

before(async () => {
  await stub.start();
  env = await startTestEnv({ provider: stubProvider(stub.url) });
  runs = new Runs(env.client, env.config);
});
after(async () => {
  await env?.stop();
  await stub.stop();
});

/** The journals' run logs under the worker's DATA_DIR (a journal no call has written yet has no directory). */
const journalLogs = (): string[] =>
  journalDirectories(kvDirOf(env.config)).flatMap(({ logs }) =>
    existsSync(logs)
      ? readdirSync(logs, { withFileTypes: true })
          .filter((e) => e.isFile())
          .map((e) => e.name)
      : [],
  );

test('a run whose journals were swept while it waited for a person takes the reply and ends', async () => {
  // A tool step (journaled) before the question, so the run has logs while it waits.
  const goal = 'plan a trip once my journals are gone';
  stub.script(goal, {
    execution_plan: [{ steps: [toolStep('calculator', { expression: '2*21' }), askStep('Where to?'), respondStep] }],
    replan_decision: [cont, cont],
    final_answer: [answer('Thanks, noted.')],
  });
  const { runId } = await runs.start({ userId: 'tester', goal });
  await waitFor('the run to wait for the user', async () => (await runs.get(runId)).status === 'waiting_user');
  const logsWhileWaiting = journalLogs();
  assert.ok(logsWhileWaiting.length > 0, 'the run journaled its calls');

  // As if the retention had passed: every log is older than the cutoff.
  const swept = await sweepJournals(kvDirOf(env.config), new Date(Date.now() + 60_000));
  assert.equal(swept.removed, logsWhileWaiting.length);
  assert.deepEqual(journalLogs(), []);

  await runs.reply(runId, 'Lisbon');
  const state = (await env.client.workflow.getHandle(runId).result()) as ExecutionState;
  assert.equal(state.status, 'completed');
  assert.equal(state.finalAnswer, 'Thanks, noted.');
  assert.deepEqual(
    state.observations.filter((o) => o.kind === 'user_reply').map((o) => o.content),
    ['Lisbon'],
  );
  assert.ok(journalLogs().length > 0, 'the calls after the reply are journaled in new logs');
});
