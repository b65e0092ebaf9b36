/**
 * How a run's end or a conversation's end hands work to the user's long-term memory workflow
 * (src/workflows/user-memory.ts): a signal that starts the workflow when it is not running.
 */
import { Context } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import { memoryJobSignal, USER_MEMORY_WORKFLOW_TYPE, userMemoryWorkflowId, type MemoryJob, type MemoryWorkflowSettings, type UserMemoryInput } from '../workflows/memory-definitions';

/** Hands a job to the user's memory workflow, starting it if it is not running (from an activity: the worker's client). */
export async function sendMemoryJob(
  userId: string,
  job: MemoryJob,
  settings: MemoryWorkflowSettings,
  client: Client = Context.current().client,
  taskQueue = Context.current().info.taskQueue,
): Promise<void> {
  const input: UserMemoryInput = { userId, settings };
  await client.workflow.signalWithStart(USER_MEMORY_WORKFLOW_TYPE, {
    workflowId: userMemoryWorkflowId(userId),
    taskQueue,
    args: [input],
    signal: memoryJobSignal,
    signalArgs: [job],
    staticSummary: `${userId}: long-term memory (extraction and promotion)`.slice(0, 200),
  });
}
