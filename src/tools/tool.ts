/**
 * What a tool is: data (name, description, zod input schema) plus a handler.
 * The planner prompt is built from these definitions; the workflow never names a tool.
 */
import type { z } from 'zod';
import type { KeyValueStore } from '../store/kv';
import type { MemoryService } from '../store/memory-service';

/**
 * What a tool may do with memory threads: read a thread, find a message, read its audit, and change
 * or compress chunks through the reducer; never make, delete or roll back a thread.
 */
export type ToolMemory = Pick<MemoryService, 'view' | 'findMessage' | 'audit' | 'apply' | 'compress'>;

export interface ToolContext {
  userId: string;
  runId: string;
  /** The session the run belongs to, when it has one. */
  sessionId?: string;
  stepId: string;
  /** Stable across retries of the same step: use it to make side effects idempotent. */
  idempotencyKey: string;
  store: KeyValueStore;
  /** Memory threads, for tools that read conversation memory (e.g. `retrieve_message`); absent where a worker has none. */
  memory?: ToolMemory;
  /** The memory threads that are the caller's own (its run's, its parent run's, its session's): all `retrieve_message` looks in. */
  threads?: readonly string[];
  /** The run's working-memory thread, for tools that add to what the run's later prompts show (e.g. `load_skill`). */
  runThread?: string;
  /** Reports liveness; long tools call it at least every few seconds. */
  heartbeat: () => void;
  /** Aborted when the run is cancelled or the step timed out. */
  signal: AbortSignal;
}

export interface ToolDefinition<S extends z.ZodType = z.ZodType> {
  name: string;
  description: string;
  input: S;
  /**
   * The parameters as JSON Schema, for tools defined by one (MCP tools): shown to the planner as
   * they are instead of `input`'s conversion; `input` then validates with it (jsonSchemaInput).
   */
  parameters?: Record<string, unknown>;
  /**
   * The tool reports state that changes outside the conversation (balances, configuration, …).
   * Before planning a request that concerns it, the run calls it (with `snapshotArgs`) and puts a
   * fresh snapshot in the observations, so the plan never rests on stale conclusions. @default false
   */
  live?: boolean;
  /**
   * The tool answers in milliseconds and never waits on anything slow (no network, no sleeping):
   * a step calling it may run as a local activity (src/engine/local-calls.ts). A step calling any
   * other tool runs as a regular activity, which heartbeats and can be cancelled. @default false
   */
  quick?: boolean;
  /** Arguments for the preflight snapshot call of a live tool. @default {} */
  snapshotArgs?: Record<string, unknown>;
  handler: (args: z.infer<S>, ctx: ToolContext) => Promise<unknown>;
}

/** Helper that keeps the handler's argument type tied to its schema. */
export function defineTool<S extends z.ZodType>(tool: ToolDefinition<S>): ToolDefinition {
  return tool as unknown as ToolDefinition;
}
