/**
 * Scheduled runs and memory (issue 33 §3), on the real server with a real Temporal Schedule: an
 * occurrence starts with the user's long-term memory like any run, is told which schedule started
 * it, sees what the previous occurrence answered, and its episode records that it was scheduled.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { scheduledRunOf } from '../../src/planning/schedule-spec';
import { openLongTerm } from '../../src/store/longterm/open-longterm';
import { openMemory } from '../../src/store/open-memory';
import { Runs } from '../../src/temporal/runs';
import { Schedules } from '../../src/temporal/schedules';
import { answer, cont, respondStep } from '../helpers/scenarios';
import { StubModelServer } from '../helpers/stub-model-server';
import { startTestEnv, stubProvider, testConfig, waitFor, type TestEnv } from '../helpers/temporal-env';

const stub = new StubModelServer();
let env: TestEnv;
let threads: Awaited<ReturnType<typeof openMemory>>;
let longterm: Awaited<ReturnType<typeof openLongTerm>>;
const USER = 'sm-ada';
const GOAL = 'sched-mem: how many push-ups today?';

/** Each occurrence answers with its number; extraction writes an episode. */
let answered = 0;
stub.fallback = (req) => {
  if (!req.goal.startsWith('sched-mem:')) return undefined;
  if (req.name === 'execution_plan') return { steps: [respondStep] };
  if (req.name === 'replan_decision') return cont;
  if (req.name === 'final_answer') return answer(`Occurrence ${++answered}: do ${10 * answered} push-ups.`);
  if (req.name === 'memory_extraction') return { summary: 'The agent set the day’s push-ups.', facts: [], episode: { goal: 'set push-ups', steps: ['counted'], outcome: 'set', lessons: [] } };
  return undefined;
};

before(async () => {
  await stub.start();
  const config = testConfig({ MEMORY_MANAGER: 'react_mem', MEMORY_EXTRACTION: 'on', MEMORY_EXTRACTION_DEBOUNCE_MS: '200', MEMORY_EXTRACTION_MAX_DELAY_MS: '1000' });
  env = await startTestEnv({ provider: stubProvider(stub.url), config });
  threads = await openMemory(config);
  longterm = await openLongTerm(config);
});
after(async () => {
  await env?.stop();
  await threads?.close();
  await longterm?.close();
  await stub.stop();
});

test('a recurring run recalls long-term memory, knows its schedule and what the previous occurrence answered; its episode says it was scheduled', async () => {
  await longterm.longterm.recordFact(
    USER,
    { subject: 'user', predicate: 'trains', object: 'push-ups', text: 'The user trains push-ups every day' },
    { messageIds: [] },
    { origin: 'person', reason: 'test setup' },
  );
  const schedules = new Schedules(env.client, new Runs(env.client, env.config));
  const { scheduleId } = await schedules.create({ userId: USER, goal: GOAL, every: '2s' });
  try {
    const two = await waitFor('two completed occurrences', async () => {
      const v = await schedules.get(scheduleId);
      const done = v.recentRuns.filter((r) => r.status === 'completed');
      return done.length >= 2 ? done.reverse() : null;
    });
    await schedules.pause(scheduleId);
    const [first, second] = two;
    assert.ok(first && second);
    assert.deepEqual(scheduledRunOf(first.runId), { scheduleId, dueAt: first.at });

    // Memory at the start like any run: the recalled fact, and where the run came from — as each occurrence's
    // plan prompt shows its thread (the thread itself may be compacted into long-term memory once the run ends).
    const plans = stub.requestsFor(GOAL, 'execution_plan').map((r) => r.messages.map((m) => m.content).join('\n'));
    const promptOf = (at: string) => plans.find((p) => p.includes(`started by the user's schedule ${scheduleId}, due at ${at}`)) ?? '';
    const firstPrompt = promptOf(first.at);
    const secondPrompt = promptOf(second.at);
    assert.match(firstPrompt, /The user trains push-ups every day/);
    assert.match(secondPrompt, /The user trains push-ups every day/);
    const firstAnswer = (await new Runs(env.client, env.config).get(first.runId)).finalAnswer ?? '';
    assert.match(firstAnswer, /^Occurrence \d+: do \d+ push-ups\.$/);
    // …and a later occurrence is shown what the previous one answered.
    assert.ok(secondPrompt.includes(`Previous occurrence (due ${first.at}, run ${first.runId}) answered: ${firstAnswer}`), secondPrompt);

    // Its episode records the schedule.
    const episodes = await waitFor('the scheduled runs’ episodes', async () => {
      const all = await longterm.longterm.listEpisodes(USER, {});
      return all.length >= 2 ? all : null;
    });
    assert.ok(
      episodes.every((e) => e.scheduled?.scheduleId === scheduleId),
      JSON.stringify(episodes.map((e) => e.scheduled)),
    );
    assert.ok(episodes.some((e) => e.provenance.runId === first.runId && e.scheduled?.dueAt === first.at));
    const extraction = stub.requests.find((r) => r.name === 'memory_extraction' && r.goal.startsWith('sched-mem:'));
    assert.match(extraction?.goal ?? '', new RegExp(`a scheduled run: ${scheduleId}`));
  } finally {
    await schedules.delete(scheduleId);
  }
});
