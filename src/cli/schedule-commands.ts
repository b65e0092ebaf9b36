/**
 * The chat client's schedule commands (issue 33 §4), answered by the client over the REST API
 * rather than sent to the session: `/schedules` lists the person's schedules with their next runs,
 * `/schedules cancel <id>` deletes one. Pure: parsing and printing; chat.ts makes the calls.
 */
import type { z } from 'zod';
import type { ScheduleSchema } from '../api/schedule-schemas';

export type ScheduleCommand = { kind: 'list' } | { kind: 'cancel'; scheduleId: string } | { kind: 'usage'; text: string };

export const SCHEDULE_HELP = ['/schedules — your schedules, with their next runs', '/schedules cancel <schedule id> — delete one (runs it started go on)'].join('\n');

/** The command a line is, or null when it is not one of these (it goes to the session). */
export function parseScheduleCommand(line: string): ScheduleCommand | null {
  const match = /^\/schedules?(?:\s+([\s\S]*))?$/i.exec(line.trim());
  if (!match) return null;
  const [verb, id, ...more] = (match[1] ?? '').trim().split(/\s+/).filter(Boolean);
  if (verb === undefined || /^list$/i.test(verb)) return { kind: 'list' };
  if (/^(cancel|delete|rm)$/i.test(verb) && id && more.length === 0) return { kind: 'cancel', scheduleId: id };
  return { kind: 'usage', text: SCHEDULE_HELP };
}

export type ScheduleListing = z.infer<typeof ScheduleSchema>;

/** When it runs, as asked: `at …`, `cron "…"` or `every …`, with its zone when that matters. */
export function timingText(s: Pick<ScheduleListing, 'spec' | 'timeZone'>): string {
  const zone = s.timeZone && s.timeZone !== 'UTC' ? ` (${s.timeZone})` : '';
  if (s.spec.at !== undefined) return `once at ${s.spec.at}${zone}`;
  if (s.spec.cron !== undefined) return `cron "${s.spec.cron}"${zone}`;
  return `every ${s.spec.every ?? '?'}`;
}

/** The listing `/schedules` prints: one schedule a paragraph, newest run and next due times. */
export function scheduleLines(schedules: readonly ScheduleListing[]): string {
  if (schedules.length === 0) return 'No schedules. Ask for one ("remind me in 10 minutes to stretch"), or POST /v1/schedules.';
  const lines = [`${schedules.length} schedule${schedules.length === 1 ? '' : 's'}:`];
  schedules.forEach((s, i) => {
    const goal = s.goal.replace(/\s+/g, ' ');
    lines.push(`${i + 1}. ${s.scheduleId}${s.paused ? ' [paused]' : ''} — ${goal.length > 120 ? `${goal.slice(0, 119)}…` : goal}`);
    lines.push(`   ${timingText(s)}; next: ${s.nextRuns.length ? s.nextRuns.slice(0, 3).join(', ') : s.paused ? '(paused)' : 'none (done)'}`);
    const last = s.recentRuns[0];
    if (last) lines.push(`   last run: ${last.runId} (due ${last.at}) ${last.status}`);
  });
  lines.push('(/schedules cancel <schedule id> deletes one)');
  return lines.join('\n');
}
