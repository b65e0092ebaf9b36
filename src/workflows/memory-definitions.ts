/**
 * The per-user long-term memory workflow (seed 002's passes off the answer path): its jobs, signal,
 * query and id — defined once, imported by the workflow, the activities that send it jobs, and tests.
 */
import { defineQuery, defineSignal } from '@temporalio/workflow';
import { userKey } from '../text/user-key';

/**
 * Work for long-term memory: `extract` after an invocation ended (its run), `promote` when a
 * conversation ended, `import` after conversations were imported. `key` makes a job idempotent (a retried sender's second signal is dropped).
 */
export type MemoryJob =
  | { kind: 'extract'; key: string; runId: string; sessionId: string | null; goal: string; at: string }
  | { kind: 'promote'; key: string; sessionId: string; threadId: string; reason: string; at: string }
  /** Conversations imported through the API: each is read and extracted in the background. */
  | { kind: 'import'; key: string; sessionIds: string[]; at: string };

export interface MemoryWorkflowSettings {
  /** Jobs wait until none has arrived for this long (a burst of invocations becomes one pass). */
  debounceMs: number;
  /** …but never longer than this after the first of them. */
  maxDelayMs: number;
  /** With nothing to do for this long the workflow ends; the next job starts it again. */
  idleMs: number;
  /**
   * Continue as new once the history is this long. Absent in runs started before it was a setting:
   * they keep the 5,000 events they were started with (a history replays as it ran).
   */
  handOverAfterEvents?: number;
}

export interface UserMemoryInput {
  userId: string;
  settings: MemoryWorkflowSettings;
  /** Carried over continue-as-new. */
  carried?: { pending: MemoryJob[]; recent: string[]; progress: MemoryProgress };
}

/** What the workflow has done: the Web UI shows it as the workflow's details, the API through the query. */
export interface MemoryProgress {
  pending: number;
  extracted: number;
  promoted: number;
  failed: number;
  /** Imported conversations extracted so far, of all those imported (the import's visible progress). */
  imports: { done: number; total: number };
  /** What the last pass wrote, e.g. "2 fact(s), 1 summary, 1 episode". */
  lastPass: string | null;
  lastError: string | null;
}

export const memoryJobSignal = defineSignal<[MemoryJob]>('memoryJob');
export const memoryProgressQuery = defineQuery<MemoryProgress>('memoryProgress');

export const USER_MEMORY_WORKFLOW_TYPE = 'userMemoryWorkflow';
/** One memory workflow per user (ids differing only in case are one user): its jobs are processed one pass at a time, in order. */
export const userMemoryWorkflowId = (userId: string) => `memory-${userKey(userId)}`;
