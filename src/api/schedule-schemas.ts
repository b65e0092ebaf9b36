/**
 * Request and response schemas of the schedules API (`/v1/schedules`, issue 33). The timing is
 * checked further by `scheduleSpecOf` (exactly one of at / cron / every, a known zone, ≥ 2 s).
 */
import { z } from 'zod';
import { RUN_STATUSES } from '../planning/execution-state';
import { MAX_TEXT_CHARS, SessionIdSchema, UserIdSchema } from './schemas';

export const CreateScheduleBody = z.object({
  userId: UserIdSchema,
  goal: z.string().trim().min(1, 'goal must not be blank').max(MAX_TEXT_CHARS),
  /** The engine of the runs it starts, as in `POST /v1/runs`. @default "plan" */
  engine: z.enum(['plan', 'tree', 'react']).optional(),
  /** Its runs belong to this session: their answers land in the conversation. */
  sessionId: SessionIdSchema.nullish(),
  at: z.string().min(1).max(100).optional().meta({ description: 'Once, at this ISO 8601 date-time (read in timeZone when it has no offset)' }),
  cron: z.string().min(1).max(200).optional().meta({ description: 'A 5-field cron expression, in timeZone' }),
  every: z.string().min(1).max(50).optional().meta({ description: 'An interval: "90s", "15m", "2h", "1d" or ISO 8601 ("PT2S"); at least 2 s' }),
  timeZone: z.string().min(1).max(100).optional().meta({ description: 'IANA time zone of at and cron. @default "UTC"' }),
  endAt: z.string().min(1).max(100).optional().meta({ description: 'No occurrence after this ISO 8601 date-time' }),
  overlap: z.enum(['skip', 'buffer_one', 'allow']).optional().meta({ description: 'An occurrence due while the previous run still runs. @default "skip"' }),
  catchupWindow: z.string().min(1).max(50).optional().meta({ description: 'How late an occurrence missed in an outage may still run (≥ 10 s). @default 1 year' }),
});
export type CreateScheduleBody = z.infer<typeof CreateScheduleBody>;

export const ListSchedulesQuery = z.object({ userId: UserIdSchema.optional() });
export const ScheduleParams = z.object({ scheduleId: z.string().min(1).max(255) });

export const ScheduleCreatedSchema = z.object({ scheduleId: z.string(), nextRuns: z.array(z.string()) });

export const ScheduleSchema = z
  .object({
    scheduleId: z.string(),
    userId: z.string(),
    goal: z.string(),
    spec: z.object({ at: z.string().optional(), cron: z.string().optional(), every: z.string().optional() }),
    timeZone: z.string(),
    engine: z.enum(['plan', 'tree', 'react']),
    sessionId: z.string().nullable(),
    paused: z.boolean(),
    nextRuns: z.array(z.string()),
    recentRuns: z.array(z.object({ runId: z.string(), at: z.string(), status: z.enum([...RUN_STATUSES, 'unknown']) })),
  })
  .meta({ id: 'Schedule' });
export const ScheduleListSchema = z.object({ schedules: z.array(ScheduleSchema) });
export const ScheduleAcceptedSchema = z.object({ scheduleId: z.string(), action: z.enum(['pause', 'unpause', 'trigger']) });
