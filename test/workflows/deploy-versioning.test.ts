/**
 * Deploys that never break a waiting run (issue 27 item 4), against the real Temporal server with
 * Worker Deployment Versioning: worker v1 runs, a run and a session's run wait for replies; v2 — with
 * a changed tool set, which without versioning makes waiting runs stale — is deployed and becomes
 * current. The waiting runs get their replies and complete on v1; new runs go to v2; the session
 * (auto-upgrade) goes on across the deploy.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import type { Worker } from '@temporalio/worker';
import { z } from 'zod';
import type { ExecutionState } from '../../src/planning/execution-state';
import { openMemory, type OpenMemory } from '../../src/store/open-memory';
import { Runs } from '../../src/temporal/runs';
import { Sessions } from '../../src/temporal/sessions';
import { defineTool } from '../../src/tools/tool';
import { createWorker } from '../../src/worker';
import { askThenAnswer } from '../helpers/scenarios';
import { StubModelServer } from '../helpers/stub-model-server';
import { startTestEnv, stubProvider, testConfig, waitFor, type TestEnv } from '../helpers/temporal-env';

const stub = new StubModelServer();
const deployment = `tl-deploy-${randomBytes(4).toString('hex')}`;
let env: TestEnv;
let runs: Runs;
let mem: OpenMemory;
let v2: { worker: Worker; running: Promise<void> } | undefined;

before(async () => {
  await stub.start();
  env = await startTestEnv({ provider: stubProvider(stub.url), config: testConfig({ WORKER_DEPLOYMENT: deployment, WORKER_BUILD_ID: 'v1' }) });
  runs = new Runs(env.client, env.config);
  mem = await openMemory(env.config);
});
after(async () => {
  if (v2?.worker.getState() === 'RUNNING') v2.worker.shutdown();
  await v2?.running;
  await mem?.close();
  await env?.stop();
  await stub.stop();
});

/** The deployment's current build id, as the server routes new work. */
async function currentBuildId(): Promise<string | undefined> {
  const described = await env.client.workflowService.describeWorkerDeployment({ namespace: env.config.TEMPORAL_NAMESPACE, deploymentName: deployment }).catch(() => null);
  return described?.workerDeploymentInfo?.routingConfig?.currentDeploymentVersion?.buildId ?? undefined;
}
/** The build id a workflow runs on (its versioning info). */
async function buildIdOf(workflowId: string): Promise<string | undefined> {
  const described = await env.client.workflow.getHandle(workflowId).describe();
  const info = described.raw.workflowExecutionInfo?.versioningInfo;
  return info?.deploymentVersion?.buildId ?? undefined;
}
const state = (runId: string) => runs.get(runId);
const result = (runId: string) => env.client.workflow.getHandle(runId).result() as Promise<ExecutionState>;

test('a deploy under waiting runs loses none: they finish on their version, new runs go to the new one, a session goes on', async () => {
  // v1 made itself current once it polled (WORKER_PROMOTE=auto).
  await waitFor('v1 current', async () => (await currentBuildId()) === 'v1');
  stub.script(...askThenAnswer('book the v1 trip', 'Which day?'));
  const waiting = await runs.start({ userId: 'deployer', goal: 'book the v1 trip' });
  await waitFor('the run waiting for its reply', async () => (await state(waiting.runId)).status === 'waiting_user');
  assert.equal(await buildIdOf(waiting.runId), 'v1');

  // A session whose run waits for the person across the deploy.
  const sessions = new Sessions(env.client, mem.memory, env.config);
  const { sessionId } = await sessions.create({ userId: 'deployer' });
  stub.script(...askThenAnswer('plan the v1 party', 'How many guests?'));
  const started = await sessions.send(sessionId, 'plan the v1 party');
  const sessionRun = 'runId' in started ? (started.runId ?? '') : '';
  await waitFor('the session run waiting', async () => (await state(sessionRun)).status === 'waiting_user');

  // Deploy v2: another tool set (without versioning, the waiting runs would fail as stale), same task queue.
  const extra = defineTool({ name: 'v2_only', description: 'Only on v2.', input: z.object({}), handler: async () => ({ ok: true }) });
  const worker = await createWorker({ config: { ...env.config, WORKER_BUILD_ID: 'v2' }, provider: stubProvider(stub.url), extraTools: [extra] });
  v2 = { worker, running: worker.run() };
  await waitFor('v2 current', async () => (await currentBuildId()) === 'v2');

  // The waiting run gets its reply and completes — on v1, where it is pinned.
  await runs.reply(waiting.runId, 'Friday');
  const done = await result(waiting.runId);
  assert.equal(done.status, 'completed', done.lastError ?? '');
  assert.equal(done.finalAnswer, 'Thanks, noted.');
  assert.equal(await buildIdOf(waiting.runId), 'v1');

  // A new run goes to v2.
  stub.script(...askThenAnswer('book the v2 trip', 'Which day?'));
  const fresh = await runs.start({ userId: 'deployer', goal: 'book the v2 trip' });
  await waitFor('the new run waiting', async () => (await state(fresh.runId)).status === 'waiting_user');
  assert.equal(await buildIdOf(fresh.runId), 'v2');
  await runs.reply(fresh.runId, 'Monday');
  assert.equal((await result(fresh.runId)).status, 'completed');

  // The session's next turn (on v2: sessions auto-upgrade) answers its run, which did not go stale and finishes on v1.
  const replied = await sessions.send(sessionId, '12 guests');
  assert.equal(replied.kind, 'reply');
  const party = await result(sessionRun);
  assert.equal(party.status, 'completed', party.lastError ?? '');
  assert.equal(await buildIdOf(sessionRun), 'v1');
  assert.equal(await buildIdOf(sessionId), 'v2');
  const view = await sessions.get(sessionId);
  assert.equal(view.runs.find((r) => r.runId === sessionRun)?.status, 'completed');
});
