/**
 * Workflow sink calls on the real server (patches/@temporalio+worker: an activation's sink calls come
 * back from the workflow thread with its completion, instead of in a second round trip per
 * activation): every sink call is delivered once and in order, and the main thread never asks the
 * workflow thread for them separately.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import type { Client } from '@temporalio/client';
import type { InjectedSinks } from '@temporalio/worker';
import { WorkerThreadClient } from '@temporalio/worker/lib/workflow/threaded-vm';
import type { sinkStepsWorkflow, StepSinks } from '../fixtures/workflows/sink-workflows';
import { startFixtureWorker, type FixtureWorker } from '../helpers/fixture-worker';
import { testConfig } from '../helpers/temporal-env';

const config = testConfig();
let client: Client;
let fixture: FixtureWorker;
/** What each workflow recorded through its sink, by workflow id. */
const recorded = new Map<string, number[]>();
/** The requests the main thread sent to the workflow thread, by type. */
const requests = new Map<string, number>();
const send = WorkerThreadClient.prototype.send;

before(async () => {
  WorkerThreadClient.prototype.send = function (this: WorkerThreadClient, input: Parameters<typeof send>[0]) {
    requests.set(input.type, (requests.get(input.type) ?? 0) + 1);
    return send.call(this, input);
  };
  const sinks: InjectedSinks<StepSinks> = {
    steps: {
      record: {
        fn: (info, step) => {
          recorded.set(info.workflowId, [...(recorded.get(info.workflowId) ?? []), step]);
        },
        callDuringReplay: false,
      },
    },
  };
  fixture = await startFixtureWorker(config, require.resolve('../fixtures/workflows/sink-workflows'), { activities: { noop: async () => undefined }, sinks });
  client = fixture.client;
});

after(async () => {
  WorkerThreadClient.prototype.send = send;
  await fixture.stop();
});

test('each sink call of a workflow is delivered once, in order, with its activation and no round trip of its own', async () => {
  const ids = [0, 1, 2].map((i) => `sinks-${i}-${randomUUID().slice(0, 8)}`);
  const counts = await Promise.all(ids.map((workflowId) => client.workflow.execute<typeof sinkStepsWorkflow>('sinkStepsWorkflow', { taskQueue: config.TASK_QUEUE, workflowId, args: [8] })));
  assert.deepEqual(counts, [8, 8, 8]);
  for (const id of ids) assert.deepEqual(recorded.get(id), [0, 1, 2, 3, 4, 5, 6, 7], id);
  assert.ok((requests.get('activate-workflow') ?? 0) >= 3 * 8, `activations: ${JSON.stringify([...requests])}`);
  assert.equal(requests.get('extract-sink-calls') ?? 0, 0, 'no separate request for the sink calls');
});
