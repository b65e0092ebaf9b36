/**
 * What a person asks a schedule for (`at`, `cron` or `every`, a time zone, an end), checked and turned
 * into a Temporal Schedule's spec. Pure: every refusal is a sentence for a 400.
 */
import { DateTime, Duration, IANAZone } from 'luxon';

/** The shortest interval a recurring schedule may have (issue 33: under 2 s is refused). */
export const MIN_INTERVAL_MS = 2_000;

export interface ScheduleTiming {
  /** Once, at this time: an ISO 8601 date-time; without an offset it is read in `timeZone`. */
  at?: string;
  /** A cron expression (5 fields: minute hour day-of-month month day-of-week), in `timeZone`. */
  cron?: string;
  /** Every so long: `90s`, `15m`, `2h`, `1d`, `500ms`, or ISO 8601 (`PT2S`); at least 2 s. */
  every?: string;
  /** IANA time zone of `at` (without an offset) and `cron`. @default "UTC" */
  timeZone?: string;
  /** No occurrence after this ISO 8601 date-time. */
  endAt?: string;
}

/** A Temporal schedule spec, in the SDK's shape (calendar fields as it takes them). */
export interface TemporalScheduleSpec {
  calendars?: { year: number; month: MonthName; dayOfMonth: number; hour: number; minute: number; second: number }[];
  cronExpressions?: string[];
  intervals?: { every: number }[];
  timezone: string;
  endAt?: Date;
}

const MONTHS = ['JANUARY', 'FEBRUARY', 'MARCH', 'APRIL', 'MAY', 'JUNE', 'JULY', 'AUGUST', 'SEPTEMBER', 'OCTOBER', 'NOVEMBER', 'DECEMBER'] as const;
type MonthName = (typeof MONTHS)[number];

const UNIT_MS: Record<string, number> = { ms: 1, s: 1_000, sec: 1_000, m: 60_000, min: 60_000, h: 3_600_000, d: 86_400_000 };

/** Milliseconds of `90s`, `15m`, `2h`, `1d`, `500ms` or an ISO 8601 duration; null when it is none of those. */
export function durationMs(text: string): number | null {
  const short = /^(\d+(?:\.\d+)?)\s*(ms|sec|min|s|m|h|d)$/i.exec(text.trim());
  if (short) return Math.round(Number(short[1]) * (UNIT_MS[(short[2] ?? '').toLowerCase()] ?? NaN));
  const iso = Duration.fromISO(text.trim());
  return iso.isValid ? iso.toMillis() : null;
}

export type ScheduleSpecResult = { ok: true; spec: TemporalScheduleSpec; once: boolean; /** A once-schedule's one time. */ due?: Date } | { ok: false; reason: string };

/** Checks `timing` at `now` and builds its spec: exactly one of at / cron / every, a known time zone, an end in the future. */
export function scheduleSpecOf(timing: ScheduleTiming, now: Date): ScheduleSpecResult {
  const given = (['at', 'cron', 'every'] as const).filter((k) => timing[k] !== undefined);
  if (given.length !== 1) return { ok: false, reason: `give exactly one of "at", "cron" or "every" (got ${given.length ? given.map((k) => `"${k}"`).join(', ') : 'none'})` };
  const timezone = timing.timeZone ?? 'UTC';
  if (!IANAZone.isValidZone(timezone)) return { ok: false, reason: `"${timezone}" is not an IANA time zone (e.g. "Europe/Paris")` };
  let endAt: Date | undefined;
  if (timing.endAt !== undefined) {
    const end = DateTime.fromISO(timing.endAt, { zone: timezone });
    if (!end.isValid) return { ok: false, reason: `endAt "${timing.endAt}" is not an ISO 8601 date-time` };
    if (end.toMillis() <= now.getTime()) return { ok: false, reason: `endAt ${end.toISO() ?? timing.endAt} is in the past` };
    endAt = end.toJSDate();
  }
  const base = { timezone, ...(endAt ? { endAt } : {}) };
  if (timing.at !== undefined) {
    const at = DateTime.fromISO(timing.at, { zone: timezone });
    if (!at.isValid) return { ok: false, reason: `at "${timing.at}" is not an ISO 8601 date-time` };
    if (at.toMillis() <= now.getTime()) return { ok: false, reason: `at ${at.toISO() ?? timing.at} is in the past` };
    // Calendar fields in UTC: one instant, whatever the zone's rules (DST) do around it. They have
    // whole seconds, so a time within a second waits for the next one: never early, never in the past.
    const utc = at.toUTC();
    const u = utc.millisecond === 0 ? utc : utc.startOf('second').plus({ seconds: 1 });
    if (endAt && u.toMillis() > endAt.getTime()) return { ok: false, reason: `at ${u.toISO() ?? timing.at} is after endAt ${endAt.toISOString()}: it would never run` };
    const month = MONTHS[u.month - 1] ?? 'JANUARY';
    return {
      ok: true,
      once: true,
      due: u.toJSDate(),
      spec: { calendars: [{ year: u.year, month, dayOfMonth: u.day, hour: u.hour, minute: u.minute, second: u.second }], timezone: 'UTC', ...(endAt ? { endAt } : {}) },
    };
  }
  if (timing.cron !== undefined) {
    const fields = timing.cron.trim().split(/\s+/);
    if (fields.length !== 5 || /CRON_TZ|TZ=/i.test(timing.cron))
      return { ok: false, reason: `cron "${timing.cron}" needs 5 fields (minute hour day-of-month month day-of-week); give the zone as timeZone` };
    return { ok: true, once: false, spec: { cronExpressions: [fields.join(' ')], ...base } };
  }
  const every = durationMs(timing.every ?? '');
  if (every === null) return { ok: false, reason: `every "${timing.every ?? ''}" is not a duration (e.g. "90s", "15m", "2h", "1d", "PT2S")` };
  if (every < MIN_INTERVAL_MS) return { ok: false, reason: `every ${timing.every ?? ''} is shorter than the minimum of ${MIN_INTERVAL_MS / 1000} s` };
  return { ok: true, once: false, spec: { intervals: [{ every }], ...base } };
}

/** The workflow id a schedule's occurrences share; the server appends the time each was due (`…-2026-03-29T07:00:00Z`). */
export const scheduledRunIdBase = (scheduleId: string) => `run-${scheduleId.replace(/^sched-/, '')}`;

/**
 * The schedule an occurrence's run id says started it, and when it was due; null for any other run
 * (a run of `POST /v1/runs`, a session's, a sub-plan's `….s1`). Only a hint, read from the id alone:
 * what depends on it (a previous occurrence's answer) asks the schedule itself.
 */
export function scheduledRunOf(runId: string): { scheduleId: string; dueAt: string } | null {
  const m = /^run-(.+)-(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z)$/.exec(runId);
  if (!m?.[1] || !m[2]) return null;
  const due = new Date(m[2]);
  return Number.isNaN(due.getTime()) ? null : { scheduleId: `sched-${m[1]}`, dueAt: due.toISOString() };
}
