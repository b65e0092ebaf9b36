/**
 * Schedules (issue 33) as a user drives them: over REST with API keys, each a real Temporal Schedule
 * on the real server, whose occurrences are ordinary runs on a real worker (the stub model server
 * behind the real `openai` client).
 */
import assert from 'node:assert/strict';
import { after, afterEach, before, test } from 'node:test';
import type { ExecutionState } from '../../src/planning/execution-state';
import { Schedules, type ScheduleView } from '../../src/temporal/schedules';
import { requestJson } from '../helpers/http';
import { startKeyedApi, type KeyedApi } from '../helpers/keyed-api';
import { answer, cont, respondStep, toolStep } from '../helpers/scenarios';
import { StubModelServer } from '../helpers/stub-model-server';
import { waitFor } from '../helpers/temporal-env';

const stub = new StubModelServer();
let api: KeyedApi;
const ALICE = 'alice-sched';
const BOB = 'bob-sched';
let aliceKey = '';
let bobKey = '';

/** Every run a schedule starts answers from its goal (occurrences repeat: no queue to run dry). */
stub.fallback = (req) => {
  if (!req.goal.startsWith('scheduled:')) return undefined;
  if (req.name === 'execution_plan') return { steps: [respondStep] };
  if (req.name === 'replan_decision') return cont;
  if (req.name === 'final_answer') return answer(`done: ${req.goal}`);
  return undefined;
};

before(async () => {
  api = await startKeyedApi(stub);
  aliceKey = await api.keyFor(ALICE);
  bobKey = await api.keyFor(BOB);
});
after(async () => {
  await api?.stop();
});

const as = <T = Record<string, unknown>>(key: string, method: string, route: string, body?: unknown) => requestJson<T>(api.url, method, route, body, { authorization: `Bearer ${key}` });
/** Schedules a test made, deleted after it even when it fails (so the next test's per-user count holds). */
const toDelete = new Map<string, string>();
afterEach(async () => {
  for (const [id, key] of toDelete) await as(key, 'DELETE', `/v1/schedules/${id}`);
  toDelete.clear();
});
const create = async (body: Record<string, unknown>, key = aliceKey) => {
  const res = await as<{ scheduleId: string; nextRuns: string[]; error?: { message: string } }>(key, 'POST', '/v1/schedules', body);
  if (res.status === 201) toDelete.set(res.body.scheduleId, key);
  return res;
};
const view = async (id: string) => (await as<ScheduleView>(aliceKey, 'GET', `/v1/schedules/${id}`)).body;
const inSeconds = (s: number) => new Date(Date.now() + s * 1000).toISOString();

test('at: a schedule 4 s ahead fires once; its run is an ordinary run of the user, listed with its status', async () => {
  // Usually still ahead once made; a create slower than that runs it at once (the next test).
  const at = inSeconds(4);
  const made = await create({ goal: 'scheduled: remind me to stretch', at });
  assert.equal(made.status, 201, JSON.stringify(made.body));
  // Due at the next whole second, never earlier; after a create slower than the lead, nothing is ahead.
  const due = new Date(Math.ceil(Date.parse(at) / 1000) * 1000).toISOString();
  assert.ok(made.body.nextRuns.length === 0 || made.body.nextRuns[0] === due, JSON.stringify({ due, nextRuns: made.body.nextRuns }));
  const id = made.body.scheduleId;
  const done = await waitFor('the occurrence to complete', async () => {
    const v = await view(id);
    return v.recentRuns[0]?.status === 'completed' ? v : null;
  });
  assert.equal(done.recentRuns.length, 1);
  // Due then, or (created too slowly to catch it) at once after.
  assert.ok(Date.parse(done.recentRuns[0]?.at ?? '') >= Date.parse(due), JSON.stringify({ due, ran: done.recentRuns[0] }));
  assert.deepEqual(done.nextRuns, [], 'once: nothing more is due');
  assert.deepEqual(done.spec, { at });
  const runId = done.recentRuns[0]?.runId ?? '';
  const run = await as<ExecutionState>(aliceKey, 'GET', `/v1/runs/${encodeURIComponent(runId)}`);
  assert.equal(run.status, 200);
  assert.equal(run.body.userId, ALICE);
  assert.equal(run.body.finalAnswer, 'done: scheduled: remind me to stretch');
  const mine = await as<{ schedules: ScheduleView[] }>(aliceKey, 'GET', '/v1/schedules');
  assert.ok(mine.body.schedules.some((s) => s.scheduleId === id));
  assert.equal((await as(aliceKey, 'DELETE', `/v1/schedules/${id}`)).status, 204);
});

test('an at whose time passed while the schedule was being created runs at once: never lost', async () => {
  // As a create slower than its lead: checked 10 s ago (when the time was ahead), made now, 2 s after it.
  const schedules = new Schedules(api.env.client, api.runs);
  const at = new Date(Date.now() - 2_000).toISOString();
  const made = await schedules.create({ userId: ALICE, goal: 'scheduled: created late', at }, new Date(Date.now() - 10_000));
  toDelete.set(made.scheduleId, aliceKey);
  assert.deepEqual(made.nextRuns, []);
  const done = await waitFor('the late occurrence to complete', async () => {
    const v = await view(made.scheduleId);
    return v.recentRuns[0]?.status === 'completed' ? v : null;
  });
  assert.equal(done.recentRuns.length, 1);
  assert.deepEqual(done.nextRuns, []);
  const run = await as<ExecutionState>(aliceKey, 'GET', `/v1/runs/${encodeURIComponent(done.recentRuns[0]?.runId ?? '')}`);
  assert.equal(run.body.finalAnswer, 'done: scheduled: created late');
});

test('every 2 s fires again and again; pause stops it and unpause starts it again; trigger runs it now; delete ends it', async () => {
  const made = await create({ goal: 'scheduled: check the build', every: '2s', timeZone: 'Europe/Paris' });
  assert.equal(made.status, 201, JSON.stringify(made.body));
  const id = made.body.scheduleId;
  await waitFor('two occurrences', async () => (await view(id)).recentRuns.length >= 2);
  assert.equal((await as(aliceKey, 'POST', `/v1/schedules/${id}/pause`)).status, 202);
  const paused = await view(id);
  assert.equal(paused.paused, true);
  const count = paused.recentRuns.length;
  await new Promise((r) => setTimeout(r, 4_500));
  assert.equal((await view(id)).recentRuns.length, count, 'no occurrence while paused');
  assert.equal((await as(aliceKey, 'POST', `/v1/schedules/${id}/trigger`)).status, 202);
  await waitFor('the triggered run', async () => (await view(id)).recentRuns.length === count + 1);
  assert.equal((await as(aliceKey, 'POST', `/v1/schedules/${id}/unpause`)).status, 202);
  assert.equal((await view(id)).paused, false);
  assert.equal((await as(aliceKey, 'DELETE', `/v1/schedules/${id}`)).status, 204);
  assert.equal((await as(aliceKey, 'GET', `/v1/schedules/${id}`)).status, 404);
});

test('invalid timings are 400 with the reason; another tenant’s schedule is 404 on every route; a user has at most SCHEDULES_PER_USER', async () => {
  const bad = async (body: Record<string, unknown>, reason: RegExp) => {
    const res = await create({ goal: 'scheduled: x', ...body });
    assert.equal(res.status, 400, JSON.stringify(body));
    assert.match(res.body.error?.message ?? '', reason);
  };
  await bad({}, /exactly one of "at", "cron" or "every"/);
  await bad({ at: inSeconds(60), cron: '0 9 * * *' }, /exactly one/);
  await bad({ every: '1s' }, /shorter than the minimum of 2 s/);
  await bad({ every: '1h', timeZone: 'Nowhere/Land' }, /not an IANA time zone/);
  await bad({ at: '2020-01-01T00:00:00Z' }, /in the past/);
  await bad({ cron: '61 9 * * *' }, /Minute is not in range/);
  await bad({ every: '1h', overlap: 'sometimes' }, /overlap/);

  const made = await create({ goal: 'scheduled: water the plants', cron: '0 9 * * MON', timeZone: 'Europe/Paris' });
  assert.equal(made.status, 201, JSON.stringify(made.body));
  const id = made.body.scheduleId;
  const next = (await view(id)).nextRuns.map((t) => new Date(t));
  assert.ok(next.length > 0 && next.every((d) => d.getUTCDay() === 1 && (d.getUTCHours() === 7 || d.getUTCHours() === 8)), 'Mondays at 09:00 Paris time');
  for (const [method, route] of [
    ['GET', `/v1/schedules/${id}`],
    ['POST', `/v1/schedules/${id}/pause`],
    ['POST', `/v1/schedules/${id}/unpause`],
    ['POST', `/v1/schedules/${id}/trigger`],
    ['DELETE', `/v1/schedules/${id}`],
  ] as const) {
    const res = await as(bobKey, method, route);
    assert.equal(res.status, 404, `${method} ${route}`);
  }
  const bobs = await as<{ schedules: ScheduleView[] }>(bobKey, 'GET', '/v1/schedules');
  assert.equal(bobs.body.schedules.length, 0);
  assert.equal((await as(bobKey, 'GET', `/v1/schedules?userId=${ALICE}`)).status, 403);
  assert.equal((await view(id)).paused, false, 'Bob’s pause did not reach it');

  // The keyed API allows 3 schedules a user.
  const more: string[] = [];
  for (let i = 0; i < 2; i++) more.push((await create({ goal: 'scheduled: more', cron: '0 9 * * *' })).body.scheduleId);
  await waitFor('the schedules listed', async () => (await as<{ schedules: ScheduleView[] }>(aliceKey, 'GET', '/v1/schedules')).body.schedules.length === 3);
  await bad({ cron: '0 10 * * *' }, /has 3 schedules, the most allowed/);
  for (const s of [id, ...more]) assert.equal((await as(aliceKey, 'DELETE', `/v1/schedules/${s}`)).status, 204);
});

test('the schedule_run tool: held for the person’s approval in every run; approved, the schedule is the user’s and fires', async () => {
  const goal = 'remind me in 2 seconds to stretch';
  stub.script(goal, {
    execution_plan: [{ steps: [toolStep('schedule_run', { goal: 'scheduled: stretch now', in: '2 seconds' }), respondStep] }],
    replan_decision: [cont],
    final_answer: [answer('I will remind you.')],
  });
  const started = await as<{ runId: string }>(aliceKey, 'POST', '/v1/runs', { goal });
  assert.equal(started.status, 201);
  const { runId } = started.body;
  const parked = await waitFor('the call to wait for approval', async () => {
    const s = (await as<ExecutionState>(aliceKey, 'GET', `/v1/runs/${runId}`)).body;
    return s.status === 'waiting_approval' ? s : null;
  });
  assert.equal(parked.pendingApproval?.tool, 'schedule_run');
  assert.equal((await as(aliceKey, 'POST', `/v1/runs/${runId}/approval`, { stepId: parked.pendingApproval?.stepId, decision: 'approve' })).status, 202);
  const done = await waitFor('the run to answer', async () => {
    const s = (await as<ExecutionState>(aliceKey, 'GET', `/v1/runs/${runId}`)).body;
    return s.status === 'completed' ? s : null;
  });
  const made = JSON.parse(done.observations.find((o) => o.kind === 'tool')?.content ?? '{}') as { scheduleId?: string; created?: boolean };
  assert.equal(made.created, true, JSON.stringify(done.observations));
  const id = made.scheduleId ?? '';
  toDelete.set(id, aliceKey);
  const fired = await waitFor('the reminder to fire and complete', async () => {
    const v = await view(id);
    return v.recentRuns[0]?.status === 'completed' ? v : null;
  });
  assert.equal(fired.userId, ALICE);
  assert.equal(fired.goal, 'scheduled: stretch now');
  assert.equal((await as(bobKey, 'GET', `/v1/schedules/${id}`)).status, 404);
  assert.equal((await as(aliceKey, 'DELETE', `/v1/schedules/${id}`)).status, 204);
});
