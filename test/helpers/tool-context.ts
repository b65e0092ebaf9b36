/** The context a plan step gives a tool, for running tools directly in tests. */
import { MemoryKeyValueStore } from '../../src/store/kv';
import type { ToolContext } from '../../src/tools/tool';

/** Step s1 of run-1 for user ada, with a fresh in-memory store; `over` replaces any field. */
export function toolContext(over: Partial<ToolContext> = {}): ToolContext {
  return {
    userId: 'ada',
    runId: 'run-1',
    stepId: 's1',
    idempotencyKey: 'run-1/s1/1',
    store: new MemoryKeyValueStore(),
    heartbeat: () => undefined,
    signal: new AbortController().signal,
    ...over,
  };
}
