/**
 * Sessions.send against a scripted client: which failures it sends the message again after (turned away
 * during a hand-over; caught in a workflow task the server failed) and which it passes on at once.
 * The real server exercises the same paths in test/workflows/session.test.ts under never-pausing traffic.
 * Also resendUntilTaken itself: an attempt past its own deadline is sent again.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ApplicationFailure, ServiceError, WorkflowUpdateFailedError, type Client } from '@temporalio/client';
import { resendUntilTaken } from '../../src/temporal/resend';
import { MessageRejectedError, Sessions } from '../../src/temporal/sessions';
import { HANDING_OVER, SESSION_WORKFLOW_TYPE, type MessageOutcome } from '../../src/workflows/session-definitions';
import { grpcError } from '../helpers/grpc';

const notReady = () =>
  new ServiceError('Workflow Update failed', {
    cause: grpcError(9, 'Unable to perform workflow execution update due to unexpected workflow task failure.'),
  });
const handingOver = () => new WorkflowUpdateFailedError('Workflow Update failed', ApplicationFailure.retryable('handing over', HANDING_OVER));

/** A client whose session answers each update attempt from `script` (an error is thrown). */
function scriptedClient(script: (Error | MessageOutcome)[]) {
  const updateIds: (string | undefined)[] = [];
  const handle = {
    describe: async () => ({ type: SESSION_WORKFLOW_TYPE, status: { name: 'RUNNING' } }),
    executeUpdate: async (_def: unknown, options: { updateId?: string }) => {
      updateIds.push(options.updateId);
      const next = script.shift();
      if (next === undefined) throw new Error('script ran out');
      if (next instanceof Error) throw next;
      return next;
    },
  };
  const client = {
    workflow: { getHandle: () => handle },
    connection: { withDeadline: <T>(_deadline: number, fn: () => Promise<T>) => fn() },
  } as unknown as Client;
  return { client, updateIds };
}

const sessionsOf = (client: Client) =>
  new Sessions(client, { createThread: async () => undefined as never, view: async () => undefined as never }, { TASK_QUEUE: 'q', MAX_STEPS: 6, MAX_SUBPLAN_DEPTH: 1 });

test('a message turned away during a hand-over or caught in a failed workflow task is sent again, under one update id', async () => {
  const outcome: MessageOutcome = { kind: 'new_run', runId: 's.r1' };
  const { client, updateIds } = scriptedClient([handingOver(), notReady(), notReady(), outcome]);
  assert.deepEqual(await sessionsOf(client).send('s', 'hello'), outcome);
  assert.equal(updateIds.length, 4);
  assert.ok(updateIds[0]);
  assert.ok(updateIds.every((id) => id === updateIds[0]));
});

test('other failures are passed on at once: a rejected message as MessageRejectedError, a server error as is', async () => {
  const rejected = scriptedClient([new WorkflowUpdateFailedError('Workflow Update failed', ApplicationFailure.nonRetryable('a message needs a non-empty "text"'))]);
  await assert.rejects(sessionsOf(rejected.client).send('s', ' '), MessageRejectedError);
  assert.equal(rejected.updateIds.length, 1);

  const invalid = new ServiceError('Workflow Update failed', { cause: grpcError(3, 'invalid argument') });
  const other = scriptedClient([invalid]);
  await assert.rejects(sessionsOf(other.client).send('s', 'hello'), (err) => err === invalid);
  assert.equal(other.updateIds.length, 1);
});

test('an attempt that runs out of its time is sent again under the same update id, each attempt with its own deadline', async () => {
  const outcome: MessageOutcome = { kind: 'new_run', runId: 's.r1' };
  // As @temporalio/client raises a deadline that expired: a ServiceError over gRPC DEADLINE_EXCEEDED.
  const timedOut = () => new ServiceError('Workflow Update failed', { cause: grpcError(4, 'Deadline exceeded') });
  const deadlines: number[] = [];
  const updateIds: string[] = [];
  const client = {
    connection: {
      withDeadline: <T>(deadline: number, fn: () => Promise<T>) => {
        deadlines.push(deadline - Date.now());
        return fn();
      },
    },
  } as unknown as Client;
  let attempts = 0;
  const taken = await resendUntilTaken(
    client,
    async (updateId) => {
      updateIds.push(updateId);
      if (attempts++ < 2) throw timedOut();
      return outcome;
    },
    () => false, // nothing else is resent
    { deadlineMs: 60_000, attemptMs: 5_000 },
  );
  assert.deepEqual(taken, outcome);
  assert.equal(updateIds.length, 3);
  assert.ok(updateIds.every((id) => id === updateIds[0]));
  assert.ok(
    deadlines.every((ms) => ms <= 5_000),
    `each attempt gets at most attemptMs, got ${deadlines.join(', ')}`,
  );
});
