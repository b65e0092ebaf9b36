/**
 * A run that a schedule started (issue 33 §3) is told so when its memory thread is made: which
 * schedule, when the occurrence was due, and what the schedule's previous occurrence answered — so a
 * recurring run ("every Monday, summarise my notes") can build on the last one. Read here, in the
 * activity that makes the run's thread, never in workflow code: the schedule's recent actions (one
 * describe) and the previous runs' memory threads (their output chunk), at most PREVIOUS_LOOKUPS of them.
 */
import { Context } from '@temporalio/activity';
import { ScheduleNotFoundError, type Client } from '@temporalio/client';
import type { ChunkInput } from '../memory/model';
import { runThreadId } from '../memory/run-chunks';
import type { ExecutionState } from '../planning/execution-state';
import { scheduledRunIdBase, scheduledRunOf } from '../planning/schedule-spec';
import { ThreadNotFoundError, type MemoryService } from '../store/memory-service';
import { clip } from '../text/clip';
import { sameUser } from '../text/user-key';

/** Earlier occurrences looked at for an answer (one that has not ended, or has no thread, is passed over). */
const PREVIOUS_LOOKUPS = 3;
/** The most of a previous answer a prompt is shown. */
const PREVIOUS_ANSWER_CHARS = 1_500;

/** What is needed of a schedule: whose it is, its occurrences' run id, its latest occurrences (oldest first). */
export interface ScheduleActions {
  userId: string | null;
  workflowId: string | null;
  recent: { runId: string; dueAt: string }[];
}

/** A schedule's actions, through the worker's client; null when there is no such schedule. */
export async function describeScheduleActions(client: Client, scheduleId: string): Promise<ScheduleActions | null> {
  try {
    const d = await client.schedule.getHandle(scheduleId).describe();
    const memo = d.memo as { userId?: unknown } | undefined;
    return {
      userId: typeof memo?.userId === 'string' ? memo.userId : null,
      workflowId: d.action.type === 'startWorkflow' ? d.action.workflowId : null,
      recent: d.info.recentActions.flatMap((a) => (a.action.type === 'startWorkflow' ? [{ runId: a.action.workflow.workflowId, dueAt: a.scheduledAt.toISOString() }] : [])),
    };
  } catch (err) {
    if (err instanceof ScheduleNotFoundError) return null;
    throw err;
  }
}

/** The worker's client, when this is an activity that has one. */
function workerClient(): Client | null {
  try {
    return Context.current().client;
  } catch {
    return null;
  }
}

/** How a run ended, from its thread's last output chunk: its answer, or the ending's status; null while it runs (or has no thread). */
async function endingOf(memory: MemoryService, runId: string, state: ExecutionState): Promise<{ answer: string } | { status: string } | null> {
  try {
    const { chunks } = await memory.view(runThreadId(runId), { origin: 'agent', reason: 'the previous occurrence of its schedule', trigger: 'run started', runId: state.runId });
    const ending = chunks.filter((c) => c.type === 'output').at(-1);
    if (!ending) return null;
    if (ending.content.kind === 'text') return { answer: ending.content.text };
    const data = ending.content.kind === 'json' ? (ending.content.data as { status?: unknown; reason?: unknown }) : {};
    return { status: `${typeof data.status === 'string' ? data.status : 'ended'}${typeof data.reason === 'string' ? ` (${clip(data.reason, 200)})` : ''}` };
  } catch (err) {
    if (err instanceof ThreadNotFoundError) return null;
    throw err;
  }
}

/**
 * The chunk a scheduled run's thread starts with (after its goal): started by schedule X, due at T, and
 * "Previous occurrence (due …) answered: …" when an earlier one has ended. Null for a run no schedule
 * of this user started. `lookup` is the schedule's description (the worker's client by default).
 */
export async function scheduledRunChunk(
  memory: MemoryService,
  state: ExecutionState,
  lookup: (scheduleId: string) => Promise<ScheduleActions | null> = async (id) => {
    const client = workerClient();
    return client ? describeScheduleActions(client, id) : null;
  },
): Promise<ChunkInput | null> {
  const origin = state.parentRunId ? null : scheduledRunOf(state.runId);
  if (!origin) return null;
  const schedule = await lookup(origin.scheduleId);
  // Only the user's own schedule, whose occurrences this run is one of.
  if (!schedule || schedule.userId === null || !sameUser(schedule.userId, state.userId) || schedule.workflowId !== scheduledRunIdBase(origin.scheduleId)) return null;
  const lines = [`This run was started by the user's schedule ${origin.scheduleId}, due at ${origin.dueAt} — not by a message the user just sent.`];
  const earlier = schedule.recent.filter((r) => r.runId !== state.runId && r.dueAt < origin.dueAt).reverse();
  let found = false;
  for (const previous of earlier.slice(0, PREVIOUS_LOOKUPS)) {
    const ending = await endingOf(memory, previous.runId, state);
    if (!ending) continue;
    lines.push(
      'answer' in ending
        ? `Previous occurrence (due ${previous.dueAt}, run ${previous.runId}) answered: ${clip(ending.answer, PREVIOUS_ANSWER_CHARS)}`
        : `Previous occurrence (due ${previous.dueAt}, run ${previous.runId}) gave no answer: ${ending.status}.`,
    );
    found = true;
    break;
  }
  if (!found && earlier.length === 0) lines.push('It is the first occurrence of this schedule.');
  return {
    type: 'environment',
    content: { kind: 'text', text: lines.join('\n') },
    priority: 70,
    retention: 'COMPRESSIBLE',
    agentModifiable: true,
    provenance: { runId: state.runId },
  };
}
