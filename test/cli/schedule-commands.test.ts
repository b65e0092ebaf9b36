/** The chat's schedule commands (src/cli/schedule-commands.ts): parsing and printing, pure. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseScheduleCommand, scheduleLines, timingText } from '../../src/cli/schedule-commands';

test('/schedules lists, /schedules cancel <id> deletes; anything else is the usage; other lines are not commands', () => {
  assert.deepEqual(parseScheduleCommand('/schedules'), { kind: 'list' });
  assert.deepEqual(parseScheduleCommand('  /Schedules list '), { kind: 'list' });
  assert.deepEqual(parseScheduleCommand('/schedules cancel sched-ada-0123456789'), { kind: 'cancel', scheduleId: 'sched-ada-0123456789' });
  assert.equal(parseScheduleCommand('/schedules cancel')?.kind, 'usage');
  assert.equal(parseScheduleCommand('/schedules cancel a b')?.kind, 'usage');
  assert.equal(parseScheduleCommand('/schedules pause x')?.kind, 'usage');
  assert.equal(parseScheduleCommand('/schedulesx'), null);
  assert.equal(parseScheduleCommand('what are my schedules?'), null);
});

test('the listing: timing as asked, the next runs, the latest run; none says how to make one', () => {
  assert.equal(timingText({ spec: { at: '2026-03-29T09:00:00' }, timeZone: 'Europe/Paris' }), 'once at 2026-03-29T09:00:00 (Europe/Paris)');
  assert.equal(timingText({ spec: { every: '1h' }, timeZone: 'UTC' }), 'every 1h');
  assert.match(scheduleLines([]), /^No schedules\./);
  const text = scheduleLines([
    {
      scheduleId: 'sched-ada-1',
      userId: 'ada',
      goal: 'check the build',
      engine: 'plan',
      sessionId: null,
      spec: { cron: '0 * * * *' },
      timeZone: 'UTC',
      paused: true,
      nextRuns: [],
      recentRuns: [{ runId: 'run-ada-1-2026-03-29T07:00:00Z', at: '2026-03-29T07:00:00.000Z', status: 'completed' }],
    },
  ]);
  assert.equal(
    text,
    [
      '1 schedule:',
      '1. sched-ada-1 [paused] — check the build',
      '   cron "0 * * * *"; next: (paused)',
      '   last run: run-ada-1-2026-03-29T07:00:00Z (due 2026-03-29T07:00:00.000Z) completed',
      '(/schedules cancel <schedule id> deletes one)',
    ].join('\n'),
  );
});
