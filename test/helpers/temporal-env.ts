/**
 * Test harness: a client and worker against the real Temporal server that
 * `npm test` started (TEMPORAL_ADDRESS), each test file on its own task queue.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import type { Payload } from '@temporalio/common';
import { decodeOptionalSinglePayload } from '@temporalio/common/lib/internal-non-workflow';
import { DefaultLogger, Runtime, type Logger as TemporalLogger, type Worker } from '@temporalio/worker';
import { loadConfig, type Config } from '../../src/config';
import { OpenAIProvider } from '../../src/llm/openai-provider';
import type { ModelProvider } from '../../src/llm/provider';
import { connectClient } from '../../src/temporal/connection';
import { GrpcCode, hasGrpcCode } from '../../src/temporal/grpc-status';
import type { ToolDefinition } from '../../src/tools/tool';
import { createWorker } from '../../src/worker';
import type { Logger } from 'pino';
import { runtimeOptionsFor } from '../../src/telemetry/core-faults';

let runtimeInstalled = false;
/** Keeps test output readable: the worker logs warnings and errors only (the core's too, heard for lost tasks). */
function quietRuntime(): void {
  if (runtimeInstalled) return;
  runtimeInstalled = true;
  Runtime.install(runtimeOptionsFor(new DefaultLogger('WARN')));
}

/** Gives the Temporal Runtime `logger` instead of the quiet one: call before the file's first worker. */
export function installTestRuntime(logger: TemporalLogger): void {
  if (runtimeInstalled) throw new Error('the Temporal Runtime is already installed in this test process');
  runtimeInstalled = true;
  Runtime.install(runtimeOptionsFor(logger));
}

export function testConfig(overrides: Record<string, string> = {}): Config {
  if (!process.env.TEMPORAL_ADDRESS) throw new Error('TEMPORAL_ADDRESS is not set: run the tests with `npm test`');
  return loadConfig({
    TEMPORAL_ADDRESS: process.env.TEMPORAL_ADDRESS,
    TEMPORAL_NAMESPACE: process.env.TEMPORAL_NAMESPACE ?? 'default',
    TASK_QUEUE: `test-${randomUUID().slice(0, 8)}`,
    DATA_DIR: mkdtempSync(path.join(os.tmpdir(), 'threadline-test-')),
    MODEL_REPAIR_ATTEMPTS: '3',
    // Long-term memory's passes make model calls of their own after runs; the tests of them turn them on.
    MEMORY_EXTRACTION: 'off',
    ...overrides,
  });
}

/** The real `openai` client, over HTTP, to a stub server. */
export function stubProvider(baseURL: string): ModelProvider {
  return new OpenAIProvider({ baseURL, apiKey: 'test-key', model: 'stub-model', timeoutMs: 10_000 });
}

export interface TestEnv {
  config: Config;
  client: Client;
  worker: Worker;
  /** Stops the worker and closes the client. */
  stop(): Promise<void>;
}

export async function startTestEnv(options: { provider: ModelProvider; extraTools?: ToolDefinition[]; config?: Config; logger?: Logger }): Promise<TestEnv> {
  quietRuntime();
  const config = options.config ?? testConfig();
  const client = await connectClient(config);
  const worker = await createWorker({ config, provider: options.provider, extraTools: options.extraTools, ...(options.logger ? { logger: options.logger } : {}) });
  const running = worker.run();
  return {
    config,
    client,
    worker,
    async stop() {
      if (worker.getState() === 'RUNNING') worker.shutdown();
      await running;
      await client.connection.close();
    },
  };
}

/**
 * A Temporal call that ran out of time or reached no server (gRPC DEADLINE_EXCEEDED or UNAVAILABLE, as the client's
 * ServiceError's cause or bare): on a loaded machine a query can miss its deadline (Runs.get's is QUERY_DEADLINE_MS).
 */
const isTransient = (err: unknown): boolean => hasGrpcCode(err, [GrpcCode.DEADLINE_EXCEEDED, GrpcCode.UNAVAILABLE]);

/** An error's message with its causes'. */
const messages = (err: unknown): string => {
  const parts: string[] = [];
  for (let e: unknown = err; e instanceof Error; e = e.cause) parts.push(e.message);
  return parts.join(': ');
};

/**
 * Polls `probe` until it gives a value, for at most `timeoutMs`. A probe that throws fails the wait at once, but for
 * a transient Temporal error (`isTransient`): that is "not yet", and the last one is named if the wait times out.
 */
export async function waitFor<T>(what: string, probe: () => Promise<T | undefined | null | false>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let transient: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value) return value;
    } catch (err) {
      if (!isTransient(err)) throw err;
      transient = err;
    }
    if (Date.now() > deadline) {
      const last = transient === undefined ? '' : ` (the last transient error: ${messages(transient)})`;
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last}`, transient === undefined ? {} : { cause: transient });
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** A workflow execution's call, as history has it. */
export interface CallInHistory {
  activity: string;
  local: boolean;
  /** Decoded: a regular call's once completed, a local call's from its marker. */
  result: unknown;
}

/** A workflow execution's calls in order: regular ones by their scheduled events, local ones by their markers; results through the client's payload codec. */
export async function callsOf(client: Client, workflowId: string, runId?: string): Promise<CallInHistory[]> {
  const events = (await client.workflow.getHandle(workflowId, runId).fetchHistory()).events ?? [];
  const decode = (payload: Payload | null | undefined): Promise<unknown> => decodeOptionalSinglePayload(client.options.loadedDataConverter, payload);
  const calls: CallInHistory[] = [];
  const regular = new Map<string, CallInHistory>();
  for (const event of events) {
    const scheduled = event.activityTaskScheduledEventAttributes?.activityType?.name;
    if (scheduled) {
      const call = { activity: scheduled, local: false, result: undefined };
      regular.set(String(event.eventId), call);
      calls.push(call);
    }
    const done = event.activityTaskCompletedEventAttributes;
    const call = done ? regular.get(String(done.scheduledEventId)) : undefined;
    if (call) call.result = await decode(done?.result?.payloads?.[0]);
    const marker = event.markerRecordedEventAttributes;
    if (marker?.markerName !== 'core_local_activity') continue;
    const meta = (await decode(marker.details?.data?.payloads?.[0])) as { activity_type?: unknown } | undefined;
    if (meta) calls.push({ activity: String(meta.activity_type), local: true, result: await decode(marker.details?.result?.payloads?.[0]) });
  }
  return calls;
}

/** How long each completed regular call of a workflow took, as its worker measured it (src/engine/local-calls.ts `timedResult`), by activity name in order. */
export async function measuredCallMs(client: Client, workflowId: string, activity: string): Promise<number[]> {
  return (await callsOf(client, workflowId)).flatMap((c) => {
    const measured = !c.local && c.activity === activity ? (c.result as { ms?: unknown } | undefined)?.ms : undefined;
    return typeof measured === 'number' ? [measured] : [];
  });
}

/** The activities a workflow execution called, in order (`local:` before a local call's name with `tagLocal`). */
export async function activitiesOf(client: Client, workflowId: string, runId?: string, { tagLocal = false } = {}): Promise<string[]> {
  return (await callsOf(client, workflowId, runId)).map((c) => (tagLocal && c.local ? `local:${c.activity}` : c.activity));
}
