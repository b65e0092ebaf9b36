/**
 * A plain SDK worker for a test's own fixture workflows (test/fixtures/workflows), on the test
 * server's queue, with a client: for tests of what the patched SDK does (patches/@temporalio+worker).
 */
import type { Client } from '@temporalio/client';
import { NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import { connectClient } from '../../src/temporal/connection';
import type { Config } from '../../src/config';

export interface FixtureWorker {
  client: Client;
  worker: Worker;
  stop(): Promise<void>;
}

/** Starts a worker running `workflowsPath`'s workflows with `options` (activities, sinks) and connects a client. */
export async function startFixtureWorker(config: Config, workflowsPath: string, options: Pick<WorkerOptions, 'activities' | 'sinks'>): Promise<FixtureWorker> {
  const client = await connectClient(config);
  const connection = await NativeConnection.connect({ address: config.temporalAddress });
  const worker = await Worker.create({ connection, namespace: config.TEMPORAL_NAMESPACE, taskQueue: config.TASK_QUEUE, workflowsPath, ...options });
  const running = worker.run();
  return {
    client,
    worker,
    async stop() {
      worker.shutdown();
      await running;
      await connection.close();
      await client.connection.close();
    },
  };
}
