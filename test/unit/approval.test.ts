/** Which tool calls wait for a person's approval, and the decision's checks (src/planning/approval.ts), pure. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { approvalNeeded, approvalProblem, matchesTool, parsePatterns, rejectionText, runApproval } from '../../src/planning/approval';

test('patterns: a name, * for all, globs for an MCP server or sub-agents', () => {
  assert.ok(matchesTool('calculator', 'calculator'));
  assert.ok(!matchesTool('calculator', 'calculator2'));
  assert.ok(matchesTool('*', 'github.create_issue'));
  assert.ok(matchesTool('github.*', 'github.create_issue'));
  assert.ok(!matchesTool('github.*', 'githubx.create_issue'));
  assert.ok(matchesTool('agent.*', 'agent.researcher'));
  assert.ok(matchesTool('notes_*', 'notes_write'));
  assert.equal(approvalNeeded('notes_write', ['calculator', 'notes_*']), 'notes_*');
  assert.equal(approvalNeeded('current_time', ['calculator', 'notes_*']), null);
  assert.equal(approvalNeeded('calculator', undefined), null);
});

test('a run can add tools to the operator’s policy, never remove one; the setting is a comma or space list', () => {
  assert.deepEqual(parsePatterns(' notes_write, github.* ,,calculator '), ['notes_write', 'github.*', 'calculator']);
  assert.deepEqual(parsePatterns(undefined), []);
  assert.deepEqual(runApproval(['notes_write'], ['calculator', 'notes_write']), ['schedule_run', 'notes_write', 'calculator']);
  assert.deepEqual(runApproval(['notes_write'], undefined), ['schedule_run', 'notes_write'], 'schedule_run is always held');
});

test('a decision is taken only for the step that waits; a rejection tells the model not to repeat the call', () => {
  const pending = { stepId: 's2', tool: 'calculator', args: { expression: '1/0' }, reason: 'TOOL_APPROVAL calculator' };
  assert.equal(approvalProblem({ status: 'waiting_approval', pendingApproval: pending }, { stepId: 's2' }), null);
  assert.match(approvalProblem({ status: 'waiting_approval', pendingApproval: pending }, { stepId: 's1' }) ?? '', /step s1 is not waiting for approval \(step s2 is\)/);
  assert.match(approvalProblem({ status: 'running', pendingApproval: null }, { stepId: 's2' }) ?? '', /run is running, not waiting for an approval/);
  assert.match(rejectionText(pending, ' too risky '), /rejected the call calculator\(\{"expression":"1\/0"\}\): too risky\. Do not make this call again/);
});
