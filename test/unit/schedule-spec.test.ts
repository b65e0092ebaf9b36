/** A schedule's timing checked and turned into a Temporal spec (src/planning/schedule-spec.ts), pure. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { durationMs, scheduledRunIdBase, scheduledRunOf, scheduleSpecOf } from '../../src/planning/schedule-spec';

const NOW = new Date('2026-03-28T12:00:00Z');
const reason = (r: ReturnType<typeof scheduleSpecOf>) => (r.ok ? 'ok' : r.reason);

test('exactly one of at, cron and every', () => {
  assert.match(reason(scheduleSpecOf({}, NOW)), /exactly one of "at", "cron" or "every" \(got none\)/);
  assert.match(reason(scheduleSpecOf({ at: '2026-04-01T09:00:00Z', every: '1h' }, NOW)), /got "at", "every"/);
});

test('durations: short forms and ISO 8601; an interval under 2 s is refused, 2 s is allowed', () => {
  assert.equal(durationMs('90s'), 90_000);
  assert.equal(durationMs('15m'), 900_000);
  assert.equal(durationMs('2h'), 7_200_000);
  assert.equal(durationMs('1d'), 86_400_000);
  assert.equal(durationMs('500ms'), 500);
  assert.equal(durationMs('PT2S'), 2_000);
  assert.equal(durationMs('soon'), null);
  assert.match(reason(scheduleSpecOf({ every: '1999ms' }, NOW)), /shorter than the minimum of 2 s/);
  assert.match(reason(scheduleSpecOf({ every: 'soon' }, NOW)), /is not a duration/);
  const ok = scheduleSpecOf({ every: '2s' }, NOW);
  assert.ok(ok.ok);
  assert.deepEqual(ok.spec.intervals, [{ every: 2_000 }]);
  assert.equal(ok.once, false);
});

test('at: read in its time zone when it has no offset, across a DST change; the past and nonsense are refused', () => {
  // Paris moves to summer time on 2026-03-29 at 02:00: 09:00 that day is 07:00 UTC, the day before 08:00 UTC.
  const before = scheduleSpecOf({ at: '2026-03-28T14:00:00', timeZone: 'Europe/Paris' }, NOW);
  assert.ok(before.ok);
  assert.deepEqual(before.spec.calendars, [{ year: 2026, month: 'MARCH', dayOfMonth: 28, hour: 13, minute: 0, second: 0 }]);
  const after = scheduleSpecOf({ at: '2026-03-29T09:00:00', timeZone: 'Europe/Paris' }, NOW);
  assert.ok(after.ok);
  assert.deepEqual(after.spec.calendars, [{ year: 2026, month: 'MARCH', dayOfMonth: 29, hour: 7, minute: 0, second: 0 }]);
  assert.equal(after.once, true);
  assert.equal(after.spec.timezone, 'UTC');
  // An offset wins over the zone.
  const offset = scheduleSpecOf({ at: '2026-04-01T09:00:00-05:00', timeZone: 'Europe/Paris' }, NOW);
  assert.ok(offset.ok);
  assert.equal(offset.spec.calendars?.[0]?.hour, 14);
  // Within a second: the next whole second, never before the time asked for (23:59:59.5 on New Year's Eve is the next year).
  const within = scheduleSpecOf({ at: '2026-12-31T23:59:59.500Z' }, NOW);
  assert.ok(within.ok);
  assert.deepEqual(within.spec.calendars, [{ year: 2027, month: 'JANUARY', dayOfMonth: 1, hour: 0, minute: 0, second: 0 }]);
  assert.equal(within.due?.toISOString(), '2027-01-01T00:00:00.000Z');
  assert.match(reason(scheduleSpecOf({ at: '2026-04-01T09:00:00Z', endAt: '2026-03-30T00:00:00Z' }, NOW)), /is after endAt .* it would never run/);
  assert.match(reason(scheduleSpecOf({ at: '2026-03-28T11:59:59Z' }, NOW)), /is in the past/);
  assert.match(reason(scheduleSpecOf({ at: 'next friday' }, NOW)), /not an ISO 8601 date-time/);
});

test('cron: five fields, in the time zone given; time zones and ends are checked', () => {
  const cron = scheduleSpecOf({ cron: '0  9 * * MON', timeZone: 'America/New_York', endAt: '2026-12-31T00:00:00Z' }, NOW);
  assert.ok(cron.ok);
  assert.deepEqual(cron.spec.cronExpressions, ['0 9 * * MON']);
  assert.equal(cron.spec.timezone, 'America/New_York');
  assert.equal(cron.spec.endAt?.toISOString(), '2026-12-31T00:00:00.000Z');
  assert.match(reason(scheduleSpecOf({ cron: '0 9 * *' }, NOW)), /needs 5 fields/);
  assert.match(reason(scheduleSpecOf({ cron: 'CRON_TZ=UTC 0 9 * *' }, NOW)), /needs 5 fields/);
  assert.match(reason(scheduleSpecOf({ every: '1h', timeZone: 'Mars/Olympus' }, NOW)), /not an IANA time zone/);
  assert.match(reason(scheduleSpecOf({ every: '1h', endAt: '2020-01-01T00:00:00Z' }, NOW)), /endAt .* is in the past/);
});

test('an occurrence’s run id names its schedule and due time; other run ids name none', () => {
  assert.equal(scheduledRunIdBase('sched-alice-0123456789'), 'run-alice-0123456789');
  assert.deepEqual(scheduledRunOf('run-alice-0123456789-2026-03-29T07:00:00Z'), { scheduleId: 'sched-alice-0123456789', dueAt: '2026-03-29T07:00:00.000Z' });
  assert.deepEqual(scheduledRunOf('run-0123456789abcdef-2026-03-29T07:00:00Z'), { scheduleId: 'sched-0123456789abcdef', dueAt: '2026-03-29T07:00:00.000Z' });
  assert.equal(scheduledRunOf('run-alice-0123456789'), null);
  assert.equal(scheduledRunOf('run-alice-0123456789-2026-03-29T07:00:00Z.s1'), null, 'a sub-plan of an occurrence');
  assert.equal(scheduledRunOf('session-alice-0123456789'), null);
});
