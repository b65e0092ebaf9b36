/**
 * The deadlock guard on the real server (patches/@temporalio+worker: one guard per activation
 * instead of one per call into the workflow's VM): a workflow that stops yielding, on its first
 * activation or after several, has its workflow task failed with the SDK's timeout error once
 * isolateExecutionTimeout has passed, while the same worker goes on running other workflows.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import type { Client } from '@temporalio/client';
import type { spinAfterWorkflow, stepsWorkflow } from '../fixtures/workflows/guard-workflows';
import { startFixtureWorker, type FixtureWorker } from '../helpers/fixture-worker';
import { testConfig, waitFor } from '../helpers/temporal-env';

const config = testConfig();
/** The SDK's isolateExecutionTimeout, which Threadline's workers keep (the option is not public). */
const GUARD_MS = 5000;
let client: Client;
let fixture: FixtureWorker;

before(async () => {
  fixture = await startFixtureWorker(config, require.resolve('../fixtures/workflows/guard-workflows'), { activities: { noop: async () => undefined } });
  client = fixture.client;
});

after(() => fixture.stop());

/** The failure messages of a workflow's failed workflow tasks, in history order. */
async function failedTasks(workflowId: string): Promise<string[]> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  return (history.events ?? []).flatMap((e) => (e.workflowTaskFailedEventAttributes ? [e.workflowTaskFailedEventAttributes.failure?.message ?? ''] : []));
}

for (const before of [0, 3]) {
  test(`a workflow that stops yielding after ${before} local calls fails its task with the timeout error; the worker runs on`, async () => {
    const workflowId = `spin-${before}-${randomUUID().slice(0, 8)}`;
    const spinning = await client.workflow.start<typeof spinAfterWorkflow>('spinAfterWorkflow', { taskQueue: config.TASK_QUEUE, workflowId, args: [before] });
    try {
      const messages = await waitFor('a failed workflow task', async () => {
        const found = await failedTasks(workflowId);
        return found.length > 0 && found;
      });
      assert.match(messages[0]!, new RegExp(`Script execution timed out after ${GUARD_MS}ms`));
      // The worker's workflow thread is free again: another workflow runs to its end on it.
      const steps = await client.workflow.execute<typeof stepsWorkflow>('stepsWorkflow', { taskQueue: config.TASK_QUEUE, workflowId: `steps-${randomUUID().slice(0, 8)}`, args: [12] });
      assert.equal(steps, 12);
    } finally {
      await spinning.terminate('test done');
    }
  });
}
