/** The relay of a child run's waits through its parent (src/engine/relay.ts, src/engine/report.ts): plan reviews. Pure. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { QuestionRelay, type RelayHost } from '../../src/engine/relay';
import { parentReport, runReport } from '../../src/engine/report';
import { initialState, type ExecutionState } from '../../src/planning/execution-state';

const at = new Date('2026-01-01T00:00:00.000Z');

function hostOf(start: ExecutionState): RelayHost & { versions: ExecutionState[] } {
  let state = start;
  const versions: ExecutionState[] = [];
  return {
    versions,
    state: () => state,
    publish: (next) => {
      state = next;
      versions.push(next);
    },
    ask: () => 's9',
  };
}

test("a child's plan review is reported only to a run above (reviews), with the plan it waits on", () => {
  const child: ExecutionState = { ...initialState({ runId: 'root.t1-1', userId: 'u', goal: 'g', model: 'm' }, at), status: 'waiting_review', planId: 'root.t1-1#2' };
  assert.equal(runReport(child), null, 'a session is not told: it routes replies, not decisions');
  assert.deepEqual(runReport(child, false, true), {
    runId: 'root.t1-1',
    status: 'waiting_review',
    question: 'run root.t1-1 waits for a review of plan root.t1-1#2',
    finalAnswer: null,
    lastError: null,
    planId: 'root.t1-1#2',
  });
  // A run showing its own child's review reports that plan (the review goes down twice).
  assert.equal(runReport({ ...child, reviewIn: { runId: 'deeper', planId: 'deeper#1' } }, false, true)?.planId, 'deeper#1');
  // Back to running after the review: reported as a resumption, only with reviews.
  const resumed = { ...child, status: 'running' as const };
  assert.equal(parentReport(resumed, 'waiting_review', 'root'), null);
  assert.deepEqual(parentReport(resumed, 'waiting_review', 'root', false, true), { kind: 'notify_parent', parentId: 'root', report: runReport(resumed) });
});

test('the parent shows the review (waiting_review, reviewIn) until the child runs again or the wait is dropped', () => {
  const root = { ...initialState({ runId: 'root', userId: 'u', goal: 'g', model: 'm' }, at), status: 'running' as const, planId: 'root#1' };
  const relay = new QuestionRelay();
  const host = hostOf(root);
  const waiting = { runId: 'root.t1-1', status: 'waiting_review' as const, question: 'q', finalAnswer: null, lastError: null, planId: 'root.t1-1#2' };
  relay.report(host, { ...waiting, runId: 'other' }, 'root.t1-1', at);
  assert.equal(host.versions.length, 0, 'reports of other runs are ignored');
  relay.report(host, waiting, 'root.t1-1', at);
  assert.equal(host.state().status, 'waiting_review');
  assert.deepEqual(host.state().reviewIn, { runId: 'root.t1-1', planId: 'root.t1-1#2' });
  assert.equal(host.state().planId, 'root#1', "the run's own plan is not replaced");
  // Revised there: a new plan of the child is shown instead.
  relay.report(host, { ...waiting, planId: 'root.t1-1#3' }, 'root.t1-1', at);
  assert.equal(host.state().reviewIn?.planId, 'root.t1-1#3');
  relay.report(host, { ...waiting, status: 'running', question: null }, 'root.t1-1', at);
  assert.equal(host.state().status, 'running');
  assert.equal(host.state().reviewIn, null);
  // Dropped (the child ended, its task was skipped): the run goes on.
  relay.report(host, waiting, 'root.t1-1', at);
  relay.drop(host, at);
  assert.equal(host.state().status, 'running');
  assert.equal(host.state().reviewIn, null);
  assert.deepEqual(
    host.versions.map((v) => v.version),
    host.versions.map((_, i) => root.version + i + 1),
    'every change is one version',
  );
});

test("a child's held tool call shows on the parent (waiting_approval, pendingApproval naming the child) until it runs again", () => {
  const root = { ...initialState({ runId: 'root', userId: 'u', goal: 'g', model: 'm' }, at), status: 'running' as const };
  const relay = new QuestionRelay();
  const host = hostOf(root);
  const approval = { stepId: 's2', tool: 'notes_write', args: { key: 'k' }, reason: 'notes_write' };
  const held = { runId: 'root.s1', status: 'waiting_approval' as const, question: 'May I?', finalAnswer: null, lastError: null, approval };
  relay.report(host, held, 'root.s1', at);
  assert.equal(host.state().status, 'waiting_approval');
  assert.deepEqual(host.state().pendingApproval, { ...approval, runId: 'root.s1' });
  // Reported further up, it keeps naming the run where the call waits.
  assert.deepEqual(runReport(host.state(), true)?.approval, { ...approval, runId: 'root.s1' });
  relay.report(host, { ...held, status: 'running', question: null }, 'root.s1', at);
  assert.equal(host.state().status, 'running');
  assert.equal(host.state().pendingApproval, null);
  // A child's wait reported upward only when asked (a run above, or a session that answers approvals).
  const child = { ...initialState({ runId: 'root.s1', userId: 'u', goal: 'g', model: 'm' }, at), status: 'waiting_approval' as const, pendingApproval: approval };
  assert.equal(parentReport(child, 'running', 'root'), null);
  assert.equal(parentReport(child, 'running', 'root', true)?.kind, 'notify_parent');
});
