/** Session messages that answer a tool call held for approval (issue 28 §3): routing, reports, the approval_edit call. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { approvalEditMessages, demoApprovalEdit, type ApprovalEditContext } from '../../src/calls/approval-edit';
import { DemoProvider } from '../../src/llm/demo-provider';
import { approvalQuestion, type PendingApproval } from '../../src/planning/approval';
import { awaitApproval, decideApproval, initialState, type ExecutionState } from '../../src/planning/execution-state';
import { replyJsonSchema } from '../../src/calls/registry';
import { parentReport, runReport } from '../../src/engine/report';
import { approvalAnswer, needsJudgement, routeMessage, type SessionRun } from '../../src/sessions/session-model';
import { applyReport, markReplied, newSessionRun, reportTurn } from '../../src/sessions/session-state';

const T0 = new Date('2025-01-01T00:00:00.000Z');
const pending: PendingApproval = { stepId: 's2', tool: 'notes_write', args: { key: 'a', value: '1' }, reason: 'notes_*' };
const run = (runId: string, status: SessionRun['status'], extra: Partial<SessionRun> = {}): SessionRun => ({ ...newSessionRun(runId, `goal of ${runId}`, T0), status, ...extra });
const held = (runId: string, askedAt = '2025-01-01T00:00:05Z') => run(runId, 'waiting_approval', { askedAt, question: approvalQuestion(pending), approval: pending });

test('approvalAnswer: confirmations approve, no/reject reject with the rest as feedback, anything else is an edit', () => {
  for (const text of ['yes', 'OK', 'ok.', 'approve', 'Approved!', 'sure', 'go ahead', '好的', 'lgtm']) assert.deepEqual(approvalAnswer(text), { decision: 'approve' }, text);
  assert.deepEqual(approvalAnswer('no'), { decision: 'reject' });
  assert.deepEqual(approvalAnswer('n'), { decision: 'reject' });
  assert.deepEqual(approvalAnswer('reject'), { decision: 'reject' });
  assert.deepEqual(approvalAnswer('no, use the other file'), { decision: 'reject', feedback: 'use the other file' });
  assert.deepEqual(approvalAnswer('Reject: too risky'), { decision: 'reject', feedback: 'too risky' });
  assert.deepEqual(approvalAnswer("don't — it is the wrong key"), { decision: 'reject', feedback: 'it is the wrong key' });
  assert.deepEqual(approvalAnswer('不要，换一个文件'), { decision: 'reject', feedback: '换一个文件' });
  // Words that merely begin like a rejection are edits.
  assert.deepEqual(approvalAnswer('notes key b please'), { decision: 'edit', text: 'notes key b please' });
  assert.deepEqual(approvalAnswer('use the key b instead'), { decision: 'edit', text: 'use the key b instead' });
});

test('routing: a message to a run waiting for approval is an approval answer; yes/no need no judgement, an edit does', () => {
  const runs = [held('r1'), run('r2', 'running')];
  assert.equal(needsJudgement(runs, 'yes'), false);
  assert.equal(needsJudgement(runs, 'no, use the other file'), false);
  assert.equal(needsJudgement(runs, 'use the key b instead'), true, 'an edit in words could be a new request: judged');
  assert.deepEqual(routeMessage(runs, 'yes'), { kind: 'approval', runId: 'r1', text: 'yes', answer: { decision: 'approve' } });
  assert.deepEqual(routeMessage(runs, 'no, use the other file'), { kind: 'approval', runId: 'r1', text: 'no, use the other file', answer: { decision: 'reject', feedback: 'use the other file' } });
  assert.deepEqual(routeMessage(runs, 'use the key b instead', { route: 'reply', runId: 'r1' }), {
    kind: 'approval',
    runId: 'r1',
    text: 'use the key b instead',
    answer: { decision: 'edit', text: 'use the key b instead' },
  });
  assert.deepEqual(routeMessage(runs, 'what is 2+2', { route: 'new_request' }), { kind: 'new_run', goal: 'what is 2+2' });
  // Addressed, and beside a question asked later.
  const both = [held('r1', '2025-01-01T00:00:01Z'), run('r3', 'waiting_user', { askedAt: '2025-01-01T00:00:09Z', question: 'Which city?' })];
  assert.deepEqual(routeMessage(both, '@r1 approve'), { kind: 'approval', runId: 'r1', text: 'approve', answer: { decision: 'approve' } });
  assert.deepEqual(routeMessage(both, 'Paris'), { kind: 'reply', runId: 'r3', text: 'Paris' });
});

test('reports: a wait for approval lists the call and asks in the conversation; any later report clears it', () => {
  const runs = [run('r1', 'running')];
  const report = { runId: 'r1', status: 'waiting_approval' as const, question: approvalQuestion(pending), finalAnswer: null, lastError: null, approval: pending };
  const asked = applyReport(runs, report, T0);
  assert.deepEqual([asked.runs[0]?.status, asked.runs[0]?.approval, asked.runs[0]?.askedAt], ['waiting_approval', pending, T0.toISOString()]);
  assert.match(asked.turn?.text ?? '', /May I call notes_write\(\{"key":"a","value":"1"\}\)\?.*notes_\*/);
  assert.equal(reportTurn(report, T0.toISOString())?.runId, 'r1');
  const resumed = applyReport(asked.runs, { runId: 'r1', status: 'running', question: null, finalAnswer: null, lastError: null }, T0);
  assert.deepEqual([resumed.runs[0]?.status, resumed.runs[0]?.approval, resumed.runs[0]?.question, resumed.turn], ['running', null, null, null]);
  const replied = markReplied(asked.runs, 'r1')[0];
  assert.deepEqual([replied?.status, replied?.approval, replied?.question], ['running', null, null]);
});

test('a run reports its approval waits and the resumption after one only when its session answers them (reportApprovals)', () => {
  const base: ExecutionState = { ...initialState({ runId: 'r1', userId: 'u', goal: 'g', sessionId: 'sess', model: 'm' }, T0), status: 'running' };
  const waiting = awaitApproval(base, pending, T0);
  assert.equal(runReport(waiting), null, 'not without approvals');
  assert.equal(parentReport(waiting, 'running', 'sess'), null);
  const reported = parentReport(waiting, 'running', 'sess', true);
  assert.equal(reported?.kind, 'notify_parent');
  if (reported?.kind !== 'notify_parent') return;
  assert.deepEqual([reported.report.status, reported.report.approval, reported.report.question], ['waiting_approval', pending, approvalQuestion(pending)]);
  const going = decideApproval(waiting, 's2', undefined, T0);
  assert.equal(parentReport(going, 'waiting_approval', 'sess'), null);
  const resumed = parentReport(going, 'waiting_approval', 'sess', true);
  assert.equal(resumed?.kind === 'notify_parent' ? resumed.report.status : null, 'running');
  assert.equal(parentReport(waiting, 'running', null, true), null, 'nobody to report to');
});

test('approval_edit: the prompt shows the call, its parameters and the words; the demo model applies named arguments', async () => {
  const ctx: ApprovalEditContext = { call: 'approval_edit', tool: 'notes_write', args: { key: 'a', value: '1' }, parameters: { type: 'object' }, text: 'use the key b instead' };
  const [system, user] = approvalEditMessages(ctx);
  assert.match(system?.content ?? '', /new arguments/);
  assert.match(user?.content ?? '', /^Goal: use the key b instead[\s\S]*notes_write[\s\S]*\{"type":"object"\}[\s\S]*\{"key":"a","value":"1"\}/);
  assert.deepEqual(demoApprovalEdit(ctx), { args: { key: 'b', value: '1' } });
  assert.deepEqual(demoApprovalEdit({ ...ctx, text: 'value = "two words" and key: c' }), { args: { key: 'c', value: 'two words' } });
  assert.deepEqual(demoApprovalEdit({ ...ctx, tool: 'calculator', args: { expression: '1+1' }, text: 'use 2+3 instead' }), { args: { expression: '2+3' } });
  assert.deepEqual(demoApprovalEdit({ ...ctx, text: 'hmm' }), { args: ctx.args }, 'nothing named: as it was');
  const reply = await new DemoProvider().complete({ name: 'approval_edit', schema: replyJsonSchema('approval_edit'), messages: approvalEditMessages(ctx), context: ctx });
  assert.deepEqual(JSON.parse(reply), { args: { key: 'b', value: '1' } });
});
