/**
 * Schedules (issue 33): each a Temporal Schedule whose action starts an ordinary run — the same
 * workflow, input and options as `POST /v1/runs` (`Runs.startOptions`), once (`at`) or again and
 * again (`cron`, `every`). They live in Temporal, so they survive restarts of everything; the
 * server follows their overlap and catch-up policies. The REST API is a thin layer over this.
 */
import { ScheduleNotFoundError as TemporalScheduleNotFound, type Client, type ScheduleDescription, type ScheduleSummary } from '@temporalio/client';
import { scheduleSpecOf, durationMs, scheduledRunIdBase, type ScheduleTiming } from '../planning/schedule-spec';
import { PLAN_WORKFLOW_TYPE, userIdAttribute } from '../workflows/definitions';
import { closedStatus, readableId, type Runs, type StartRunRequest } from './runs';
import { userClause } from './visibility';
import type { RunStatus } from '../planning/execution-state';

export class ScheduleNotFoundError extends Error {
  constructor(readonly scheduleId: string) {
    super(`schedule ${scheduleId} not found`);
    this.name = 'ScheduleNotFoundError';
  }
}

/** A request the schedule cannot be made from (its spec, its limits): a 400 with the reason. */
export class ScheduleRefusedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ScheduleRefusedError';
  }
}

export type Overlap = 'skip' | 'buffer_one' | 'allow';
const OVERLAP = { skip: 'SKIP', buffer_one: 'BUFFER_ONE', allow: 'ALLOW_ALL' } as const;

export interface CreateScheduleRequest extends ScheduleTiming, Pick<StartRunRequest, 'userId' | 'goal' | 'engine' | 'sessionId'> {
  /** Its id, when the caller needs one that a retry finds again (the `schedule_run` tool). @default a new one */
  scheduleId?: string;
  /** What happens when an occurrence is due while the previous one still runs. @default "skip" */
  overlap?: Overlap;
  /** How late an occurrence missed during an outage may still run (a duration, e.g. "10m"). @default Temporal's (1 year) */
  catchupWindow?: string;
}

export interface ScheduleView {
  scheduleId: string;
  userId: string;
  goal: string;
  /** As it was asked for: `{at}`, `{cron}` or `{every}`. */
  spec: { at?: string; cron?: string; every?: string };
  timeZone: string;
  engine: 'plan' | 'tree' | 'react';
  sessionId: string | null;
  paused: boolean;
  /** The next due times (ISO 8601), soonest first; none once it is done with. */
  nextRuns: string[];
  /** Its latest runs, newest first. */
  recentRuns: { runId: string; at: string; status: RunStatus }[];
}

/** What a schedule keeps of its request (its memo), for views. */
interface ScheduleMemo {
  userId: string;
  goal: string;
  spec: ScheduleView['spec'];
  timeZone: string;
  engine: ScheduleView['engine'];
  sessionId: string | null;
}

export interface ScheduleLimits {
  /** Schedules one user may have. */
  perUser: number;
}

export class Schedules {
  constructor(
    private readonly client: Client,
    private readonly runs: Pick<Runs, 'startOptions'>,
    private readonly limits: ScheduleLimits = { perUser: 50 },
  ) {}

  async create(request: CreateScheduleRequest, now = new Date()): Promise<{ scheduleId: string; nextRuns: string[] }> {
    const built = scheduleSpecOf(request, now);
    if (!built.ok) throw new ScheduleRefusedError(built.reason);
    let catchupWindow: number | undefined;
    if (request.catchupWindow !== undefined) {
      catchupWindow = durationMs(request.catchupWindow) ?? undefined;
      if (catchupWindow === undefined || catchupWindow < 10_000) throw new ScheduleRefusedError(`catchupWindow "${request.catchupWindow}" is not a duration of at least 10 s`);
    }
    const owned = await this.count(request.userId);
    if (owned >= this.limits.perUser) throw new ScheduleRefusedError(`user ${request.userId} has ${owned} schedules, the most allowed (delete one first)`);
    const scheduleId = request.scheduleId ?? readableId('sched', request.userId);
    const { spec, once, due } = built;
    const memo: ScheduleMemo = {
      userId: request.userId,
      goal: request.goal,
      spec: request.at !== undefined ? { at: request.at } : request.cron !== undefined ? { cron: request.cron } : { every: request.every ?? '' },
      timeZone: request.timeZone ?? 'UTC',
      engine: request.engine ?? 'plan',
      sessionId: request.sessionId ?? null,
    };
    const { scheduleId: _id, ...run } = request;
    const options = this.runs.startOptions(run);
    try {
      const handle = await this.client.schedule.create({
        scheduleId,
        spec,
        action: {
          type: 'startWorkflow',
          workflowType: PLAN_WORKFLOW_TYPE,
          // Each occurrence's run id: this, then the time it was due (added by the server).
          workflowId: scheduledRunIdBase(scheduleId),
          ...options,
          // The Web UI shows which schedule started a run (so does its TemporalScheduledById search attribute).
          memo: { ...options.memo, scheduleId },
        },
        policies: { overlap: OVERLAP[request.overlap ?? 'skip'], ...(catchupWindow !== undefined ? { catchupWindow } : {}) },
        // Once: the one occurrence, then nothing (the spec matches a single instant anyway).
        ...(once ? { state: { remainingActions: 1 } } : {}),
        memo: { ...memo },
        typedSearchAttributes: [userIdAttribute(request.userId)],
      });
      const made = await handle.describe();
      if (once && due !== undefined && due.getTime() <= Date.now() && missedAtStart(made)) {
        // Its time passed before Temporal's scheduler first ran (a slow create): that scheduler only
        // fires times after its start, so the one occurrence would never come. It runs now instead.
        await handle.trigger();
        return { scheduleId, nextRuns: [] };
      }
      return { scheduleId, nextRuns: made.info.nextActionTimes.map((d) => d.toISOString()) };
    } catch (err) {
      // The server checks what we cannot (a cron field out of range; the client names it a TypeError): its reason is the person's.
      if (err instanceof TypeError) throw new ScheduleRefusedError(`cron "${request.cron ?? ''}": ${err.message}`);
      throw err;
    }
  }

  async get(scheduleId: string): Promise<ScheduleView> {
    return this.view(scheduleId, await this.describe(scheduleId));
  }

  async list(filter: { userId?: string }): Promise<ScheduleView[]> {
    const views: ScheduleView[] = [];
    for (const summary of await this.summaries(filter.userId)) {
      try {
        views.push(await this.view(summary.scheduleId, await this.describe(summary.scheduleId)));
      } catch (err) {
        // Deleted since the (eventually consistent) listing named it: not a schedule any more.
        if (!(err instanceof ScheduleNotFoundError)) throw err;
      }
    }
    return views;
  }

  async pause(scheduleId: string): Promise<void> {
    await this.describe(scheduleId);
    await this.client.schedule.getHandle(scheduleId).pause('paused over the API');
  }

  async unpause(scheduleId: string): Promise<void> {
    await this.describe(scheduleId);
    await this.client.schedule.getHandle(scheduleId).unpause('unpaused over the API');
  }

  /** Runs it now, whatever its spec says (overlap: as the schedule's policy says). */
  async trigger(scheduleId: string): Promise<void> {
    await this.describe(scheduleId);
    await this.client.schedule.getHandle(scheduleId).trigger();
  }

  async delete(scheduleId: string): Promise<void> {
    await this.describe(scheduleId);
    await this.client.schedule.getHandle(scheduleId).delete();
  }

  /** The schedule's user, or null when there is no such schedule (tenancy: another user's is a 404). */
  async ownerOf(scheduleId: string): Promise<string | null> {
    try {
      return memoOf(await this.describe(scheduleId))?.userId ?? null;
    } catch (err) {
      if (err instanceof ScheduleNotFoundError) return null;
      throw err;
    }
  }

  private async describe(scheduleId: string): Promise<ScheduleDescription> {
    try {
      const description = await this.client.schedule.getHandle(scheduleId).describe();
      // Only Threadline's schedules: anything else with that id is not one.
      if (!memoOf(description)) throw new ScheduleNotFoundError(scheduleId);
      return description;
    } catch (err) {
      if (err instanceof TemporalScheduleNotFound) throw new ScheduleNotFoundError(scheduleId);
      throw err;
    }
  }

  private async summaries(userId: string | undefined): Promise<ScheduleSummary[]> {
    const found: ScheduleSummary[] = [];
    const query = userId ? userClause(userId) : undefined;
    for await (const s of this.client.schedule.list(query ? { query } : {})) found.push(s);
    return found;
  }

  /**
   * How many schedules the user has. Each schedule is a workflow of Temporal's scheduler (hidden from
   * ordinary listings) that carries the schedule's search attributes, so one COUNT answers — not a
   * listing of every schedule, which made creating the n-th schedule of a user cost O(n) (1,000 of one
   * user: minutes, and timeouts). None counted (none yet, or a server whose schedules are not
   * workflows): the listing says.
   */
  private async count(userId: string): Promise<number> {
    try {
      const { count } = await this.client.workflow.count(`TemporalNamespaceDivision = 'TemporalScheduler' AND ExecutionStatus = 'Running' AND ${userClause(userId)}`);
      if (count > 0) return count;
    } catch {
      // Not queryable on this server: list them.
    }
    return (await this.summaries(userId)).length;
  }

  private async view(scheduleId: string, d: ScheduleDescription): Promise<ScheduleView> {
    const memo = memoOf(d);
    if (!memo) throw new ScheduleNotFoundError(scheduleId);
    return {
      scheduleId,
      ...memo,
      paused: d.state.paused,
      // Only times still ahead: a once-schedule whose occurrence was missed past its catch-up window keeps naming it.
      nextRuns: d.info.nextActionTimes.filter((t) => t.getTime() > Date.now()).map((t) => t.toISOString()),
      recentRuns: await this.recentRuns(d),
    };
  }

  /** Its latest runs with their statuses (from visibility; one that has just started shows `planning`). */
  private async recentRuns(d: ScheduleDescription): Promise<ScheduleView['recentRuns']> {
    const actions = [...d.info.recentActions].reverse();
    const runs: ScheduleView['recentRuns'] = [];
    for (const a of actions) {
      const runId = a.action.type === 'startWorkflow' ? a.action.workflow.workflowId : null;
      if (!runId) continue;
      let status: RunStatus = 'planning';
      try {
        status = closedStatus(await this.client.workflow.getHandle(runId).describe());
      } catch {
        // Not visible yet: just started.
      }
      runs.push({ runId, at: a.scheduledAt.toISOString(), status });
    }
    return runs;
  }
}

/** A once-schedule with nothing ahead and nothing done: its one time came before its scheduler started. */
function missedAtStart(d: Pick<ScheduleDescription, 'info'>): boolean {
  return d.info.nextActionTimes.length === 0 && d.info.recentActions.length === 0 && d.info.runningActions.length === 0;
}

function memoOf(d: Pick<ScheduleDescription, 'memo'>): ScheduleMemo | null {
  const memo = d.memo as Partial<ScheduleMemo> | undefined;
  return memo && typeof memo.userId === 'string' && typeof memo.goal === 'string' ? (memo as ScheduleMemo) : null;
}
