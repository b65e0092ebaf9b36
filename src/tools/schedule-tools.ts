/**
 * Schedules as tools (issue 33 §2): "remind me tomorrow at 9" becomes a schedule of the run's user
 * (in the run's session, so its answer lands in the conversation). `schedule_run` is held for the
 * person's approval in every run (src/planning/approval.ts ALWAYS_HELD): nothing is scheduled
 * unasked. The schedules themselves are Temporal Schedules (src/temporal/schedules.ts), reached
 * through the narrow service the worker hands in.
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { durationMs } from '../planning/schedule-spec';
import { defineTool, type ToolDefinition } from './tool';

/** What the tools need of the schedules (the worker gives `Schedules`). */
export interface ScheduleService {
  create(request: {
    userId: string;
    goal: string;
    sessionId?: string;
    at?: string;
    cron?: string;
    every?: string;
    timeZone?: string;
    scheduleId?: string;
  }): Promise<{ scheduleId: string; nextRuns: string[] }>;
  list(filter: { userId?: string }): Promise<{ scheduleId: string; goal: string; spec: Record<string, string | undefined>; timeZone: string; paused: boolean; nextRuns: string[] }[]>;
  ownerOf(scheduleId: string): Promise<string | null>;
  delete(scheduleId: string): Promise<void>;
}

/** Milliseconds of `schedule_run`'s `in` ("10 minutes", "2h"); throws when it is no duration. */
function inMs(text: string): number {
  const ms = durationMs(
    text
      .replace(/\s*minutes?$/i, 'm')
      .replace(/\s*hours?$/i, 'h')
      .replace(/\s*seconds?$/i, 's')
      .replace(/\s*days?$/i, 'd'),
  );
  if (ms === null) throw new Error(`"${text}" is not a duration (e.g. "10 minutes", "2h")`);
  return ms;
}

export function scheduleTools(service: ScheduleService): ToolDefinition[] {
  const scheduleRun = defineTool({
    name: 'schedule_run',
    description:
      'Schedules a run of a goal for later, for this user: once (`in` a duration such as "10 minutes", or `at` an ISO date-time), or again and again (`cron`, 5 fields, or `every` a duration of at least 2 s). The person approves it first.',
    input: z
      .object({
        goal: z.string().min(1).max(2000),
        in: z.string().max(50).optional(),
        at: z.string().max(100).optional(),
        cron: z.string().max(200).optional(),
        every: z.string().max(50).optional(),
        timeZone: z.string().max(100).optional(),
      })
      .refine((a) => [a.in, a.at, a.cron, a.every].filter((x) => x !== undefined).length === 1, { message: 'give exactly one of in, at, cron or every' }),
    async handler(args, ctx) {
      const delay = args.in === undefined ? null : inMs(args.in);
      // One schedule per step, however often the step is retried.
      const scheduleId = `sched-${createHash('sha256').update(ctx.idempotencyKey).digest('hex').slice(0, 16)}`;
      const existing = await service.ownerOf(scheduleId);
      if (existing !== null) return { scheduleId, created: false };
      // "In" counts from here, after the lookup: a short one is not already past when it is checked.
      const at = delay !== null ? new Date(Date.now() + delay).toISOString() : args.at;
      const made = await service.create({
        userId: ctx.userId,
        goal: args.goal,
        scheduleId,
        ...(ctx.sessionId ? { sessionId: ctx.sessionId } : {}),
        ...(at !== undefined ? { at } : {}),
        ...(args.cron !== undefined ? { cron: args.cron } : {}),
        ...(args.every !== undefined ? { every: args.every } : {}),
        ...(args.timeZone !== undefined ? { timeZone: args.timeZone } : {}),
      });
      return { ...made, created: true };
    },
  });
  const listSchedules = defineTool({
    name: 'list_schedules',
    quick: false,
    description: "Lists this user's schedules: their goals, timing and next runs.",
    input: z.object({}),
    async handler(_args, ctx) {
      return {
        schedules: (await service.list({ userId: ctx.userId })).map((s) => ({
          scheduleId: s.scheduleId,
          goal: s.goal,
          spec: s.spec,
          timeZone: s.timeZone,
          paused: s.paused,
          nextRuns: s.nextRuns.slice(0, 3),
        })),
      };
    },
  });
  const cancelSchedule = defineTool({
    name: 'cancel_schedule',
    description: "Deletes one of this user's schedules (runs it started go on).",
    input: z.object({ scheduleId: z.string().min(1).max(255) }),
    async handler({ scheduleId }, ctx) {
      if ((await service.ownerOf(scheduleId)) !== ctx.userId) throw new Error(`no schedule ${scheduleId}`);
      await service.delete(scheduleId);
      return { ok: true };
    },
  });
  return [scheduleRun, listSchedules, cancelSchedule];
}
