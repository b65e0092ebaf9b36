/**
 * userMemoryWorkflow — one per user, started by the first job sent to it (signal-with-start):
 * long-term memory's model passes, off the answer path (seed 002). A run's end sends `extract`,
 * a conversation's end `promote`. Jobs are debounced (a burst of invocations is one pass per
 * conversation) and durable (signals live in history: a crash or a model outage delays them,
 * never loses them). Ends when idle; continues as new when its history grows.
 */
import { ActivityFailure, condition, continueAsNew, patched, proxyActivities, setCurrentDetails, setHandler, sleep, workflowInfo } from '@temporalio/workflow';
import type { MemoryActivities } from '../activities/memory-activities';
import { memoryJobSignal, memoryProgressQuery, type MemoryJob, type MemoryProgress, type UserMemoryInput } from './memory-definitions';

/** A pass is a model call and some writes: retried through outages like the planner's calls, then given up (noted). */
const passes = proxyActivities<MemoryActivities>({
  startToCloseTimeout: '5 minutes',
  heartbeatTimeout: '10 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds', maximumAttempts: 5, nonRetryableErrorTypes: ['InvalidModelReply', 'ModelRequestRefused'] },
});
/** Keys of finished jobs remembered, so a job sent twice (a retried sender) runs once. */
const RECENT_KEYS = 500;
/** Where runs started before `settings.handOverAfterEvents` existed hand over. */
const LEGACY_HAND_OVER_AFTER_EVENTS = 5_000;
/**
 * Patch id of a debounce that is one timer per quiet stretch: a job that arrives while it runs only moves
 * the moment it ends. Before, every job cancelled the debounce's timer and started another (two history
 * events and two server timer tasks per job — per run end of a busy user); those histories replay as they ran.
 */
const DEBOUNCE_ONCE = 'memory-debounce-once';

export async function userMemoryWorkflow(input: UserMemoryInput): Promise<void> {
  const { userId, settings } = input;
  const pending: MemoryJob[] = [...(input.carried?.pending ?? [])];
  /** When the latest job arrived (workflow time): the debounce ends `debounceMs` after it. */
  let lastJobAt = Date.now();
  const recent: string[] = [...(input.carried?.recent ?? [])];
  const progress: MemoryProgress = input.carried?.progress ?? { pending: 0, extracted: 0, promoted: 0, failed: 0, imports: { done: 0, total: 0 }, lastPass: null, lastError: null };
  const show = () => {
    progress.pending = pending.length;
    setCurrentDetails(
      `${userId}: ${progress.extracted} extraction(s), ${progress.promoted} promotion(s), ${progress.failed} failed, ${pending.length} pending` +
        (progress.imports.total > 0 ? `\nimported conversations extracted: ${progress.imports.done} of ${progress.imports.total}` : '') +
        (progress.lastPass ? `\nlast: ${progress.lastPass}` : '') +
        (progress.lastError ? `\nlast error: ${progress.lastError}` : ''),
    );
  };
  setHandler(memoryJobSignal, (job) => {
    if (recent.includes(job.key) || pending.some((p) => p.key === job.key)) return;
    pending.push(job);
    lastJobAt = Date.now();
    if (job.kind === 'import') progress.imports.total += job.sessionIds.length;
    show();
  });
  setHandler(memoryProgressQuery, () => ({ ...progress, pending: pending.length }));
  const done = (jobs: MemoryJob[]) => {
    recent.push(...jobs.map((j) => j.key));
    recent.splice(0, Math.max(0, recent.length - RECENT_KEYS));
  };
  const failed = (jobs: MemoryJob[], err: ActivityFailure) => {
    progress.failed += jobs.length;
    progress.lastError = (err.cause?.message ?? err.message).slice(0, 500);
  };

  const debounceOnce = patched(DEBOUNCE_ONCE);
  for (;;) {
    if (pending.length === 0 && !(await condition(() => pending.length > 0, settings.idleMs))) break;
    // Debounce: wait for the burst to end (no new job for debounceMs), at most maxDelayMs.
    const first = Date.now();
    if (debounceOnce) {
      for (;;) {
        const until = Math.min(lastJobAt + settings.debounceMs, first + settings.maxDelayMs);
        if (Date.now() >= until) break;
        await sleep(until - Date.now());
      }
    } else {
      for (;;) {
        const seen = pending.length;
        const left = settings.maxDelayMs - (Date.now() - first);
        if (left <= 0 || !(await condition(() => pending.length > seen, Math.min(settings.debounceMs, left)))) break;
      }
    }
    const batch = pending.splice(0, pending.length);
    show();
    // One extraction per conversation (a run without a session is its own), then the promotions.
    const groups = new Map<string, Extract<MemoryJob, { kind: 'extract' }>[]>();
    for (const job of batch) {
      if (job.kind !== 'extract') continue;
      const key = job.sessionId ?? job.runId;
      groups.set(key, [...(groups.get(key) ?? []), job]);
    }
    for (const jobs of groups.values()) {
      try {
        const result = await passes.extractMemory({ userId, sessionId: jobs[0]?.sessionId ?? null, runs: jobs.map((j) => ({ runId: j.runId, goal: j.goal })) });
        progress.extracted += jobs.length;
        progress.lastPass = result.wrote;
      } catch (err) {
        if (!(err instanceof ActivityFailure)) throw err;
        failed(jobs, err);
      }
      done(jobs);
      show();
    }
    // Imported conversations, one pass (or a few, for a long one) each: slow work, after the live conversations'.
    for (const job of batch) {
      if (job.kind !== 'import') continue;
      for (const sessionId of job.sessionIds) {
        try {
          const result = await passes.extractImported({ userId, sessionId });
          progress.lastPass = result.wrote;
        } catch (err) {
          if (!(err instanceof ActivityFailure)) throw err;
          failed([job], err);
        }
        progress.imports.done++;
        show();
      }
      done([job]);
    }
    for (const job of batch) {
      if (job.kind !== 'promote') continue;
      try {
        const result = await passes.promoteConversation({ userId, sessionId: job.sessionId, threadId: job.threadId, reason: job.reason });
        progress.promoted++;
        progress.lastPass = result.wrote;
      } catch (err) {
        if (!(err instanceof ActivityFailure)) throw err;
        failed([job], err);
      }
      done([job]);
      show();
    }
    if (workflowInfo().continueAsNewSuggested || workflowInfo().historyLength > (settings.handOverAfterEvents ?? LEGACY_HAND_OVER_AFTER_EVENTS)) {
      return continueAsNew<typeof userMemoryWorkflow>({ userId, settings, carried: { pending, recent, progress } });
    }
  }
}
