/**
 * Opens the configured memory store and the memory service over it — the same
 * way in the worker and the API, so both see one memory with the same observers.
 */
import type { Config } from '../config';
import type { ModelProvider } from '../llm/provider';
import { summarize } from '../llm/summarize';
import { redactSecrets } from '../memory/observers';
import { taskStateRules } from '../sessions/task-state-observer';
import { MemoryService } from './memory-service';
import { createMemoryStore } from './memory/select-store';

export interface OpenMemory {
  memory: MemoryService;
  close(): Promise<void>;
}

/**
 * @param provider the model that writes compaction summaries; without one, compaction only
 *   drops DISPOSABLE chunks (the API process, which never compacts, passes none).
 */
export async function openMemory(config: Config, provider?: ModelProvider): Promise<OpenMemory> {
  const store = createMemoryStore(config);
  await store.setup();
  const memory = new MemoryService({
    store,
    // Secrets never enter memory, whoever writes it.
    observers: [redactSecrets, taskStateRules],
    limits: { soft: config.MEMORY_SOFT_LIMIT, hard: config.MEMORY_HARD_LIMIT },
    ...(provider ? { summarizer: (texts: string[], maxTokens: number) => summarize(provider, texts, { maxTokens, attempts: config.MODEL_REPAIR_ATTEMPTS }) } : {}),
  });
  return {
    memory,
    close: async () => {
      await memory.flushReads(); // reads still queued reach the store before it closes
      await store.end();
    },
  };
}
