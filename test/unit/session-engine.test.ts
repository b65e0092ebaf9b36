/** The session engine: its state and decisions, without Temporal (the workflow only carries them out). */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { RunReport, SessionInput } from '../../src/engine/contract';
import {
  CallFailed,
  CAPABILITIES_CHANGED,
  CURRENT_SESSION,
  handingOver,
  handOverDue,
  SessionEngine,
  type SessionCommand,
  type SessionEngineCommand,
  type SessionStep,
} from '../../src/engine/session-engine';
import { HELP_TEXT, type Route } from '../../src/sessions/session-model';
import type { PendingApproval } from '../../src/planning/approval';

const NOW = new Date('2026-01-02T03:04:05.000Z');
const input = (extra: Partial<SessionInput> = {}): SessionInput => ({ sessionId: 's1', userId: 'u1', threadId: 't1', limits: { maxSteps: 8, maxDepth: 2 }, ...extra });
const report = (runId: string, extra: Partial<RunReport>): RunReport => ({ runId, status: 'running', question: null, finalAnswer: null, lastError: null, ...extra });

/** A session with one run that waits for the person's reply. */
function waitingSession(extra: Partial<SessionInput> = {}): { session: SessionEngine; runId: string } {
  const session = new SessionEngine(input(extra));
  session.took();
  const runId = session.listRun('book a table', 'plan', NOW);
  session.report(report(runId, { status: 'waiting_user', question: 'For how many people?' }), NOW);
  return { session, runId };
}

test('a message names the run it starts by the session and its count; the run is listed as planning', () => {
  const session = new SessionEngine(input());
  session.took();
  const route: Route = { kind: 'new_run', goal: 'plan a trip' };
  assert.deepEqual(session.userTurn(route, 'plan a trip', NOW), { role: 'user', text: 'plan a trip', at: NOW.toISOString(), runId: 's1.r1' });
  assert.equal(session.listRun('plan a trip', 'tree', NOW), 's1.r1');
  assert.deepEqual(
    session.runs.map((r) => [r.runId, r.status, r.engine]),
    [['s1.r1', 'planning', 'tree']],
  );
  // A command's turn names no run.
  assert.equal(session.userTurn({ kind: 'command', command: '/help', text: '/help' }, '/help', NOW).runId, undefined);
});

test('a run starts with the session, its thread, the engine asked for and how fast the last run called', () => {
  const session = new SessionEngine(input({ approval: ['notes_write'], treeLimits: { maxDepth: 3, maxFanout: 4, maxIterations: 5 } }));
  assert.deepEqual(session.runInput('g', 'plan'), {
    userId: 'u1',
    goal: 'g',
    sessionId: 's1',
    sessionThreadId: 't1',
    limits: { maxSteps: 8, maxDepth: 2 },
    approval: ['notes_write'],
    reportApprovals: true,
  });
  session.received(report('x', { lastCallMs: 40 }));
  const tree = session.runInput('g', 'react');
  assert.equal(tree.engine, 'tree');
  assert.equal(tree.entry, 'react');
  assert.equal(tree.lastCallMs, 40);
  assert.equal(session.runSummary('x'.repeat(300)).length, 200);
});

test('a retry runs on the engine of the run it retries; a new run on the one asked, else the session’s', () => {
  const session = new SessionEngine(input({ engine: 'tree' }));
  session.took();
  const failed = session.listRun('g', 'react', NOW);
  assert.equal(session.engineFor({ kind: 'retry', runId: failed, goal: 'g' }, 'plan'), 'react');
  assert.equal(session.engineFor({ kind: 'new_run', goal: 'g' }, 'plan'), 'plan');
  assert.equal(session.engineFor({ kind: 'new_run', goal: 'g' }, undefined), 'tree');
  session.forget(failed);
  assert.equal(session.runs.length, 0);
});

test('a run whose start failed shows failed with why', () => {
  const session = new SessionEngine(input());
  const runId = session.listRun('g', 'plan', NOW);
  session.notStarted(runId, 'id taken');
  assert.deepEqual([session.runs[0]?.status, session.runs[0]?.lastError], ['failed', 'could not start: id taken']);
});

test('a reply goes to its run as a relay_reply; delivered it runs, else the person is told', () => {
  const { session, runId } = waitingSession();
  const route = session.route('four', undefined);
  assert.equal(route.kind, 'reply');
  if (route.kind !== 'reply') return;
  assert.deepEqual(session.reply(route), { kind: 'relay_reply', runId, text: 'four' });
  assert.deepEqual(session.replied(runId, true), { kind: 'reply', runId });
  assert.equal(session.runs[0]?.status, 'running');

  const lost = waitingSession();
  const outcome = lost.session.replied(lost.runId, false);
  assert.match(outcome.reply ?? '', /no longer waiting/);
  assert.equal(lost.session.runs[0]?.status, 'cancelled');
});

test('while runs wait, an open-ended message is judged against them, newest question first', () => {
  const { session, runId } = waitingSession();
  assert.deepEqual(session.judgement('what about the weather'), { text: 'what about the weather', waiting: [{ runId, goal: 'book a table', question: 'For how many people?' }] });
  assert.equal(session.judgement('/state'), null);
  assert.equal(new SessionEngine(input()).judgement('hello'), null);
});

test('a change of capabilities makes waiting runs stale: cancelled, and the conversation says why', () => {
  const { session, runId } = waitingSession();
  // The first sighting changes nothing.
  assert.deepEqual(session.capabilitiesNow('a'), []);
  assert.deepEqual(session.capabilitiesNow('a'), []);
  const stale = session.capabilitiesNow('b');
  assert.deepEqual(
    stale.map((r) => r.runId),
    [runId],
  );
  const turns = session.cancelledStale(stale, NOW);
  assert.deepEqual(turns, [{ role: 'assistant', text: `${CAPABILITIES_CHANGED} (was: "book a table")`, at: NOW.toISOString(), runId }]);
  assert.deepEqual([session.runs[0]?.status, session.runs[0]?.lastError], ['cancelled', 'capabilities changed']);
  // Carried to the next run of the session.
  assert.equal(session.carry([]).capabilities, 'b');
});

test('a held call: unknown to the session it is answered at once; delivered, the run goes on', () => {
  const session = new SessionEngine(input());
  session.took();
  const runId = session.listRun('write a note', 'plan', NOW);
  const unknown = session.approvalRequest({ kind: 'approval', runId, text: 'yes', answer: { decision: 'approve' } });
  assert.ok(!('pending' in unknown));
  assert.match(unknown.reply ?? '', /POST \/v1\/runs\/s1.r1\/approval/);

  const approval: PendingApproval = { stepId: 'st1', tool: 'notes_write', args: { key: 'k' }, reason: 'notes_write' };
  session.report(report(runId, { status: 'waiting_approval', question: 'Run notes_write?', approval }), NOW);
  const request = session.approvalRequest({ kind: 'approval', runId, text: 'yes', answer: { decision: 'approve' } });
  assert.deepEqual(request, { runId, pending: approval, text: 'yes', answer: { decision: 'approve' }, updateId: 's1:1:approval' });
  // Not delivered and still waiting: the conversation is told, the run still waits.
  assert.equal(session.approvalAnswered(runId, { delivered: false, waiting: true, reply: 'does not fit' }), null);
  assert.equal(session.runs[0]?.status, 'waiting_approval');
  assert.deepEqual(session.approvalAnswered(runId, { delivered: true, reply: 'Approved' }), { kind: 'reply', runId, reply: 'Approved' });
  assert.equal(session.runs[0]?.status, 'running');
});

test('a report adds its turn, keyed by its ending; a recorded one only counts in the window', () => {
  const session = new SessionEngine(input());
  const a = session.listRun('g', 'plan', NOW);
  assert.deepEqual(session.report(report(a, { status: 'completed', finalAnswer: '42' }), NOW), {
    turn: { role: 'assistant', text: '42', at: NOW.toISOString(), runId: a },
    key: `ending:${a}:completed`,
  });
  session.took();
  const b = session.listRun('h', 'plan', NOW);
  assert.deepEqual(session.report(report(b, { status: 'completed', finalAnswer: 'x'.repeat(40), recorded: true }), NOW), { recorded: true });
  assert.deepEqual(session.carry([]).carried?.window, [10]);
  // A report of a run the session does not know changes nothing.
  assert.equal(session.report(report('other', { status: 'completed' }), NOW), null);
});

test('compression is due past the window; without a window back the session keeps the newest turns', () => {
  const session = new SessionEngine(input({ settings: { window: 2, keepAfterCompression: 1 } }));
  session.remembered(['a', 'b']);
  assert.equal(session.needsCompression, false);
  session.remembered(['c']);
  assert.equal(session.needsCompression, true);
  assert.deepEqual(session.compression(), { sessionId: 's1', threadId: 't1', keep: 1 });
  session.compressed(undefined);
  assert.deepEqual(session.carry([]).carried?.window, [1]);
  session.compressed([3, 4]);
  assert.deepEqual(session.carry([]).carried?.window, [3, 4]);
});

test('/clear and an end name the open runs to cancel; an end stops the session', () => {
  const { session, runId } = waitingSession();
  session.took();
  const done = session.listRun('other', 'plan', NOW);
  session.report(report(done, { status: 'completed', finalAnswer: 'ok' }), NOW);
  assert.deepEqual(session.clear(), { cancelled: [runId], reply: 'Cleared the conversation: recent turns, task state and 1 unfinished run(s).' });
  assert.deepEqual(session.toEnd(), [runId]);
  session.endedWith('/end', [runId]);
  assert.equal(session.ended, '/end');
  assert.equal(session.hasOpenRuns, false);
  assert.match(SessionEngine.endReply(1), /cancelled 1 unfinished run/);
  session.cleared();
  assert.equal(session.runs.length, 0);
});

test('commands the session does not know are named in the answer', () => {
  assert.equal(SessionEngine.unknownCommand({ kind: 'command', command: 'unknown', text: '/frob it' }), `Unknown command "/frob".\n${HELP_TEXT}`);
  // Sessions recorded before /end existed did not know it.
  assert.equal(SessionEngine.unknownCommand({ kind: 'command', command: '/end', text: '/END now' }), `Unknown command "/end".\n${HELP_TEXT}`);
});

test('queries see the state as of the last publish, each with a new version', () => {
  const session = new SessionEngine(input({ carried: { runs: [], turns: 3, version: 7 } }));
  const before = session.published;
  session.took();
  session.listRun('g', 'plan', NOW);
  assert.equal(session.published, before);
  session.publish();
  assert.deepEqual([session.published.version, session.published.turns, session.published.runs.length], [8, 4, 1]);
});

test('the hand-over carries the state and the queued reports; old sessions carried their turns', () => {
  const old = new SessionEngine(input({ carried: { runs: [], turns: 1, version: 1, chatHistory: [{ role: 'user', text: 'abcdefgh', at: '' }] }, capabilities: 'c' }));
  const queued = report('r', { status: 'completed' });
  const next = old.carry([queued]);
  assert.deepEqual(next.carried, { window: [2], runs: [], turns: 1, version: 1 });
  assert.deepEqual(next.pendingReports, [queued]);
  assert.equal(next.capabilities, 'c');
});

test('the hand-over falls due with a long history; past the grace new messages wait', () => {
  const policy = new SessionEngine(input({ settings: { continueAsNewAfterEvents: 100, handOverGraceEvents: 10 } })).handOver;
  assert.equal(handOverDue(policy, { continueAsNewSuggested: false, historyLength: 100 }), false);
  assert.equal(handOverDue(policy, { continueAsNewSuggested: false, historyLength: 101 }), true);
  assert.equal(handOverDue(policy, { continueAsNewSuggested: true, historyLength: 1 }), true);
  assert.equal(handingOver(policy, null, 500), false);
  assert.equal(handingOver(policy, 101, 110), false);
  assert.equal(handingOver(policy, 101, 111), true);
});

// ---- the flows: the commands a session gives, carried out by a scripted workflow

/** Drives a flow as the workflow does: each command answered by `answer` (a thrown CallFailed is a failed command); returns the commands and the result. */
function drive<T>(flow: SessionStep<T>, answer: (command: SessionCommand) => unknown): { commands: SessionCommand[]; result: T } {
  const commands: SessionCommand[] = [];
  let next = flow.next();
  while (!next.done) {
    commands.push(next.value);
    let value: unknown;
    try {
      value = answer(next.value);
    } catch (err) {
      next = flow.throw(err);
      continue;
    }
    next = flow.next(value);
  }
  return { commands, result: next.value };
}

const describe = (c: SessionCommand) => (c.kind === 'call' ? c.activity : c.kind);
const memoryAnswers =
  (capabilities = 'caps', extra: (c: SessionCommand) => unknown = () => undefined) =>
  (c: SessionCommand): unknown =>
    extra(c) ?? (c.kind === 'call' && (c.activity === 'recordTurns' || c.activity === 'openSession') ? { messageIds: [], capabilities } : undefined);

test('flows: a new request is recorded and started in one call, and names its run', () => {
  const session = new SessionEngine(input(), CURRENT_SESSION, () => NOW);
  drive(session.open(), memoryAnswers());
  const { commands, result } = drive(session.onMessage('plan a trip'), memoryAnswers());
  assert.deepEqual(result, { kind: 'new_run', runId: 's1.r1' });
  assert.deepEqual(commands.map(describe), ['recordTurns']);
  const record = commands[0];
  assert.ok(record?.kind === 'call' && record.activity === 'recordTurns');
  assert.equal(record.input.start?.runId, 's1.r1');
  assert.deepEqual(record.input.turns, [{ role: 'user', text: 'plan a trip', at: NOW.toISOString(), runId: 's1.r1' }]);
});

test('flows: sessions recorded before runs were started by activity record the turn, then start a child', () => {
  const session = new SessionEngine(input(), { ...CURRENT_SESSION, startsByActivity: false, v2: false }, () => NOW);
  const { commands, result } = drive(session.onMessage('plan a trip'), memoryAnswers());
  assert.deepEqual(result, { kind: 'new_run', runId: 's1.r1' });
  assert.deepEqual(commands.map(describe), ['recordTurns', 'start_run']);
});

test('flows: a run start that fails marks the run failed and fails the message', () => {
  const session = new SessionEngine(input(), CURRENT_SESSION, () => NOW);
  assert.throws(
    () =>
      drive(session.onMessage('plan a trip'), () => {
        throw new CallFailed('id taken', false);
      }),
    /id taken/,
  );
  assert.deepEqual([session.runs[0]?.status, session.runs[0]?.lastError], ['failed', 'could not start: id taken']);
});

test('flows: a reply is relayed to its run; when the run no longer waits the person is told', () => {
  const { session, runId } = waitingSession();
  const lost = drive(
    session.onMessage(`@${runId} four`),
    memoryAnswers('caps', (c) => (c.kind === 'relay_reply' ? false : undefined)),
  );
  assert.deepEqual(lost.commands.map(describe), ['recordTurns', 'relay_reply']);
  assert.match(lost.result.reply ?? '', /not delivered/);
  assert.equal(session.runs.find((r) => r.runId === runId)?.status, 'cancelled');
});

test('flows: a change of capabilities cancels the waiting run before the message is routed, and says so', () => {
  const { session, runId } = waitingSession();
  drive(session.open(), memoryAnswers('old'));
  const { commands, result } = drive(session.onMessage(`@${runId} four`), memoryAnswers('new'));
  assert.deepEqual(commands.map(describe), ['recordTurns', 'cancel_runs', 'recordTurns', 'start_run']);
  assert.deepEqual(commands[1], { kind: 'cancel_runs', runIds: [runId] });
  // Routed again after the check, the reply starts afresh as a new run (as a child workflow, as it always did).
  assert.equal(result.kind, 'new_run');
});

test('flows: a failed memory write or judgement is shrugged off; the message still gets its answer', () => {
  const { session } = waitingSession();
  const failing = (c: SessionCommand) => {
    if (c.kind === 'call') throw new CallFailed('store down', true);
    return true;
  };
  const { commands, result } = drive(session.onMessage('what about the weather'), failing);
  assert.deepEqual(commands.map(describe), ['judgeMessage', 'recordTurns', 'relay_reply']);
  assert.equal(result.kind, 'reply');
});

test('flows: /end cancels the open runs, ends the session and hands its promotion on', () => {
  const { session, runId } = waitingSession();
  const { commands, result } = drive(session.onMessage('/end'), () => undefined);
  assert.deepEqual(commands, [
    { kind: 'cancel_runs', runIds: [runId] },
    { kind: 'call', activity: 'endSession', input: { sessionId: 's1', threadId: 't1', reason: '/end' } },
  ]);
  assert.match(result.reply ?? '', /Ended the conversation and cancelled 1/);
  assert.equal(session.ended, '/end');
});

test('flows: a report shows at once, adds its turn keyed by its ending, and compresses when due', () => {
  const session = new SessionEngine(input({ settings: { window: 0 } }), CURRENT_SESSION, () => NOW);
  const runId = session.listRun('g', 'plan', NOW);
  const { commands } = drive(
    session.onReport(report(runId, { status: 'completed', finalAnswer: '42' })),
    memoryAnswers('caps', (c) => (c.kind === 'call' && c.activity === 'compressHistory' ? { window: [] } : undefined)),
  );
  assert.equal(session.published.runs[0]?.status, 'completed');
  assert.deepEqual(commands.map(describe), ['recordTurns', 'compressHistory']);
  const record = commands[0];
  assert.ok(record?.kind === 'call' && record.activity === 'recordTurns');
  assert.equal(record.input.key, `ending:${runId}:completed`);
});

// ---- the session as an engine over the core: events in, the commands the shared loop carries out

const called = (activity: string) => (c: SessionEngineCommand | undefined) => c?.kind === 'call' && c.activity === activity;

test('engine: it opens, waits, and answers a message by its id once its run is recorded and started', () => {
  const session = new SessionEngine(input(), CURRENT_SESSION, () => NOW);
  const [open] = session.start();
  assert.ok(open?.kind === 'call' && open.activity === 'openSession' && open.policy === 'memory');
  assert.deepEqual(session.handle({ kind: 'result', activity: 'openSession', value: { capabilities: 'caps' } }), [{ kind: 'await_person' }]);
  const [record] = session.handle({ kind: 'message', id: 7, text: 'plan a trip' });
  assert.ok(called('recordTurns')(record));
  const answered = session.handle({ kind: 'result', activity: 'recordTurns', value: { messageIds: [], capabilities: 'caps' } });
  assert.deepEqual(answered, [{ kind: 'answer', to: 7, outcome: { kind: 'new_run', runId: 's1.r1' } }, { kind: 'await_person' }]);
  assert.equal(session.state.runs[0]?.runId, 's1.r1');
});

test('engine: a run start refused answers its message with why; the session waits on', () => {
  const session = new SessionEngine(input(), CURRENT_SESSION, () => NOW);
  session.handle({ kind: 'message', id: 1, text: 'plan a trip' });
  assert.deepEqual(session.handle({ kind: 'failed', error: 'x', reason: 'id taken', activity: false }), [{ kind: 'answer', to: 1, failure: 'id taken' }, { kind: 'await_person' }]);
  assert.equal(session.state.runs[0]?.status, 'failed');
});

test('engine: a reply waits to learn whether its run took it; a report its start found is queued behind the inbox', () => {
  const { session, runId } = waitingSession();
  session.handle({ kind: 'message', id: 2, text: `@${runId} four` });
  const [relay] = session.handle({ kind: 'result', activity: 'recordTurns', value: { messageIds: [], capabilities: 'caps' } });
  assert.deepEqual(relay, { kind: 'relay_reply', runId, text: 'four', confirm: true });
  const [answer] = session.handle({ kind: 'delivered', ok: false });
  assert.ok(answer?.kind === 'answer' && 'outcome' in answer);
  assert.match(String((answer.outcome as { reply?: string }).reply), /not delivered/);

  const fresh = new SessionEngine(input(), CURRENT_SESSION, () => NOW);
  fresh.handle({ kind: 'message', id: 3, text: 'plan a trip' });
  const ended = report('s1.r1', { status: 'completed', finalAnswer: '42' });
  const commands = fresh.handle({ kind: 'result', activity: 'recordTurns', value: { messageIds: [], capabilities: 'caps', ended } });
  assert.deepEqual(
    commands.map((c) => c.kind),
    ['enqueue', 'answer', 'await_person'],
  );
  assert.deepEqual(commands[0], { kind: 'enqueue', event: { kind: 'report', report: ended } });
});

test('engine: the idle timeout cancels what is open and ends; a hand-over ends at once', () => {
  const { session, runId } = waitingSession();
  assert.deepEqual(session.handle({ kind: 'idle' }), [{ kind: 'cancel_runs', runIds: [runId] }]);
  const [promote] = session.handle({ kind: 'done' });
  assert.ok(called('endSession')(promote));
  assert.deepEqual(session.handle({ kind: 'result', activity: 'endSession', value: undefined }), [{ kind: 'end' }]);
  assert.equal(session.ended, 'idle');
  assert.deepEqual(new SessionEngine(input()).handle({ kind: 'hand_over' }), [{ kind: 'end' }]);
});

test('engine: a failure no flow takes, or a cancellation while it waits, ends the session with it', () => {
  const session = new SessionEngine(input(), CURRENT_SESSION, () => NOW);
  session.start();
  assert.deepEqual(session.handle({ kind: 'failed', error: 'store down', reason: 'store down', activity: false }), [{ kind: 'raise' }]);
  assert.deepEqual(session.handle({ kind: 'cancelled' }), [{ kind: 'raise' }]);
  // An activity that gave up on a memory write is shrugged off: the message is still answered.
  const { session: waiting } = waitingSession();
  waiting.handle({ kind: 'message', id: 4, text: '@s1.r1 four' });
  const [relay] = waiting.handle({ kind: 'failed', error: 'store down', reason: 'store down', activity: true });
  assert.equal(relay?.kind, 'relay_reply');
});
