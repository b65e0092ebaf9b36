/** Seed 000's TaskState rules, enforced in code on every task_state_summary reply. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { brokenRule, describeDropped, enforceTaskStateRules } from '../../src/sessions/task-state-rules';
import { taskStateRules } from '../../src/sessions/task-state-observer';

test('live state stated as a value is refused; a goal that merely names it is not', () => {
  for (const entry of ['My balance is 500 USDT', 'BTC price: 64000', 'open positions are 2 BTC long', 'equity now 1.2k', '账户余额为 300']) {
    assert.equal(brokenRule(entry), 'live_state', entry);
  }
  for (const entry of ['check my balance', 'The account number is 12345', 'my name is Ada', 'prefers metric units']) {
    assert.equal(brokenRule(entry), null, entry);
  }
});

test('step-level pending items and conclusions about configuration are refused', () => {
  for (const entry of ['wait for the API key', 'Waiting for the user to confirm', 'call get_exchange_configs', 'run the next step', 'retry step s3']) {
    assert.equal(brokenRule(entry), 'step_pending', entry);
  }
  for (const entry of ['The exchange is configured', 'no model is set up', 'API key missing', 'the calculator tool is unavailable', '交易所未配置']) {
    assert.equal(brokenRule(entry), 'config_conclusion', entry);
  }
  for (const entry of ['book a table for four in Rome', 'the user prefers the Binance exchange', 'decided to split the bill evenly']) {
    assert.equal(brokenRule(entry), null, entry);
  }
});

test('a reply keeps what may stay, drops entries and empties text fields that break a rule, and says what went', () => {
  const { taskState, dropped } = enforceTaskStateRules({
    CurrentGoal: 'plan a trip to Rome',
    ActiveFlow: 'waiting for the user to pick a hotel',
    OpenLoops: ['which hotel to book', 'call get_exchange_configs'],
    ImportantFacts: ['my colour is green', 'balance is 500 USDT', 'the exchange is not configured'],
    LastDecision: 'chose trains over flights because of the price of tickets',
  });
  assert.deepEqual(taskState, {
    CurrentGoal: 'plan a trip to Rome',
    ActiveFlow: '',
    OpenLoops: ['which hotel to book'],
    ImportantFacts: ['my colour is green'],
    LastDecision: 'chose trains over flights because of the price of tickets',
  });
  assert.deepEqual(dropped.map(describeDropped), [
    'ActiveFlow: "waiting for the user to pick a hotel" (a step-level pending item of a plan)',
    'OpenLoops: "call get_exchange_configs" (a step-level pending item of a plan)',
    'ImportantFacts: "balance is 500 USDT" (live state that changes outside the chat)',
    'ImportantFacts: "the exchange is not configured" (a conclusion about tools or configuration, to be checked with tools)',
  ]);
  const clean = { CurrentGoal: '', ActiveFlow: '', OpenLoops: [], ImportantFacts: ['my dog is Rex'], LastDecision: '' };
  assert.deepEqual(enforceTaskStateRules(clean), { taskState: clean, dropped: [] });
});

test("the TaskState rules as a memory observer: a person's edit of a TaskState is cleaned too, with a note; other content passes untouched", () => {
  const taskState = {
    CurrentGoal: 'save for a bike',
    ActiveFlow: '',
    OpenLoops: ['wait for the user to confirm'],
    ImportantFacts: ['The user is saving for a bike', 'balance is 420 EUR'],
    LastDecision: '',
    UpdatedAt: '2026-01-01T00:00:00Z',
  };
  const content = { kind: 'json' as const, data: { kind: 'task_state', taskState } };
  const meta = { origin: 'user' as const, reason: 'edit', trigger: 'PATCH by a person' };
  const verdict = taskStateRules.observe({ op: 'update', chunkId: 'c1', patch: { content } }, meta, { threadId: 't' });
  assert.equal(verdict.action, 'transform');
  assert.ok(verdict.action === 'transform' && verdict.operation.op === 'update');
  const kept = (verdict.operation.patch.content as { data: { taskState: typeof taskState } }).data.taskState;
  assert.deepEqual(kept.ImportantFacts, ['The user is saving for a bike']);
  assert.deepEqual(kept.OpenLoops, []);
  assert.equal(kept.UpdatedAt, '2026-01-01T00:00:00Z', 'fields the rules do not cover are kept');
  assert.match(verdict.note, /dropped by the TaskState rules: .*balance is 420 EUR.*live state/);
  // A clean TaskState, and anything that is not a TaskState, are allowed as they are.
  const clean = { kind: 'json' as const, data: { kind: 'task_state', taskState: { ...taskState, OpenLoops: [], ImportantFacts: ['The user is saving for a bike'] } } };
  assert.deepEqual(taskStateRules.observe({ op: 'add', chunks: [{ type: 'workflow', content: clean }] }, meta, { threadId: 't' }), { action: 'allow' });
  assert.deepEqual(taskStateRules.observe({ op: 'add', chunks: [{ type: 'user', content: { kind: 'text', text: 'my balance is 420 EUR' } }] }, meta, { threadId: 't' }), { action: 'allow' });
});
