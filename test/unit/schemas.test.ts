/** The wire schemas of the model protocol (DESIGN.md §4): what a model reply may and may not look like. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ExecutionPlanReplySchema } from '../../src/calls/execution-plan';
import { FinalAnswerReplySchema } from '../../src/calls/final-answer';
import { CALLS, type ModelCallName, replyJsonSchema } from '../../src/calls/registry';
import { ReasoningReplySchema } from '../../src/calls/reasoning';
import { ReplanDecisionReplySchema } from '../../src/calls/replan-decision';
import { StepSpecSchema } from '../../src/planning/step-spec';

/** The paths of the issues zod reports, e.g. ["steps.0.tool"], so a test names the field it expects blamed. */
function issuePaths(result: { success: boolean; error?: { issues: { path: PropertyKey[] }[] } }): string[] {
  assert.equal(result.success, false, 'expected the value to be rejected');
  return (result.error?.issues ?? []).map((i) => i.path.map(String).join('.'));
}

test('a step of every type is accepted with the fields its type needs', () => {
  const valid = [
    { type: 'tool', description: 'Add', tool: 'calculator', args: { expression: '1+1' } },
    { type: 'tool', description: 'Time now', tool: 'current_time' },
    { type: 'reason', description: 'Think' },
    { type: 'ask_user', description: 'Ask', question: 'Which city?' },
    { type: 'respond', description: 'Answer the user' },
    { type: 'subplan', description: 'Delegate', goal: 'Find the weather' },
  ];
  for (const step of valid) {
    const parsed = StepSpecSchema.safeParse(step);
    assert.ok(parsed.success, `rejected ${JSON.stringify(step)}`);
    assert.deepEqual(parsed.data, step);
  }
});

test('a tool step without a tool is rejected, blaming "tool"', () => {
  const result = StepSpecSchema.safeParse({ type: 'tool', description: 'Add', args: { expression: '1+1' } });
  assert.deepEqual(issuePaths(result), ['tool']);
  assert.match(result.error?.issues[0]?.message ?? '', /tool step needs "tool"/);
});

test('an ask_user step without a question is rejected, blaming "question"', () => {
  assert.deepEqual(issuePaths(StepSpecSchema.safeParse({ type: 'ask_user', description: 'Ask' })), ['question']);
});

test('a subplan step without a goal is rejected, blaming "goal"', () => {
  assert.deepEqual(issuePaths(StepSpecSchema.safeParse({ type: 'subplan', description: 'Delegate' })), ['goal']);
});

test('an unknown step type, an empty or missing description are rejected', () => {
  assert.deepEqual(issuePaths(StepSpecSchema.safeParse({ type: 'shell', description: 'rm -rf /' })), ['type']);
  assert.deepEqual(issuePaths(StepSpecSchema.safeParse({ type: 'reason', description: '' })), ['description']);
  assert.deepEqual(issuePaths(StepSpecSchema.safeParse({ type: 'reason' })), ['description']);
});

test('args must be a JSON object: arrays, strings and null are rejected', () => {
  for (const args of [[1, 2], 'expression=1+1', null, 42]) {
    const result = StepSpecSchema.safeParse({ type: 'tool', description: 'Add', tool: 'calculator', args });
    assert.deepEqual(issuePaths(result), ['args'], `args ${JSON.stringify(args)} was accepted`);
  }
});

test('unknown extra fields are tolerated on receipt and dropped from the parsed value', () => {
  // Models sent a schema with strict:false may add fields; the reply is still usable.
  const parsed = ExecutionPlanReplySchema.safeParse({
    steps: [{ type: 'respond', description: 'Answer', confidence: 0.9 }],
    reasoning: 'because',
  });
  assert.ok(parsed.success);
  assert.deepEqual(parsed.data, { steps: [{ type: 'respond', description: 'Answer' }] });
});

test('execution_plan: needs at least one and at most 50 steps, and validates each step', () => {
  assert.ok(ExecutionPlanReplySchema.safeParse({ steps: [{ type: 'respond', description: 'Answer' }] }).success);
  assert.deepEqual(issuePaths(ExecutionPlanReplySchema.safeParse({ steps: [] })), ['steps']);
  assert.deepEqual(issuePaths(ExecutionPlanReplySchema.safeParse({})), ['steps']);
  const many = Array.from({ length: 51 }, () => ({ type: 'reason', description: 'Think' }));
  assert.deepEqual(issuePaths(ExecutionPlanReplySchema.safeParse({ steps: many })), ['steps']);
  const badSecond = {
    steps: [
      { type: 'reason', description: 'Think' },
      { type: 'tool', description: 'Add' },
    ],
  };
  assert.deepEqual(issuePaths(ExecutionPlanReplySchema.safeParse(badSecond)), ['steps.1.tool']);
});

test('replan_decision: each decision is accepted with the field it needs', () => {
  const valid = [
    { decision: 'continue' },
    { decision: 'replace_remaining', steps: [{ type: 'respond', description: 'Answer' }] },
    { decision: 'ask_user', question: 'Which city?' },
    { decision: 'finish', answer: 'It is 84.' },
  ];
  for (const reply of valid) {
    const parsed = ReplanDecisionReplySchema.safeParse(reply);
    assert.ok(parsed.success, `rejected ${JSON.stringify(reply)}`);
    assert.deepEqual(parsed.data, reply);
  }
});

test('replan_decision: replace_remaining without steps (or with none) is rejected, blaming "steps"', () => {
  assert.deepEqual(issuePaths(ReplanDecisionReplySchema.safeParse({ decision: 'replace_remaining' })), ['steps']);
  assert.deepEqual(issuePaths(ReplanDecisionReplySchema.safeParse({ decision: 'replace_remaining', steps: [] })), ['steps']);
});

test('replan_decision: ask_user without a question is rejected; finish may come without its answer (written later)', () => {
  assert.deepEqual(issuePaths(ReplanDecisionReplySchema.safeParse({ decision: 'ask_user' })), ['question']);
  assert.ok(ReplanDecisionReplySchema.safeParse({ decision: 'finish' }).success);
  assert.ok(ReplanDecisionReplySchema.safeParse({ decision: 'finish', answer: '' }).success);
});

test('replan_decision: an unknown decision and invalid replacement steps are rejected', () => {
  assert.deepEqual(issuePaths(ReplanDecisionReplySchema.safeParse({ decision: 'retry' })), ['decision']);
  const badStep = { decision: 'replace_remaining', steps: [{ type: 'subplan', description: 'Delegate' }] };
  assert.deepEqual(issuePaths(ReplanDecisionReplySchema.safeParse(badStep)), ['steps.0.goal']);
});

test('reasoning and final_answer need a non-empty string', () => {
  assert.ok(ReasoningReplySchema.safeParse({ thought: 'The sum is 84.' }).success);
  assert.deepEqual(issuePaths(ReasoningReplySchema.safeParse({ thought: '' })), ['thought']);
  assert.deepEqual(issuePaths(ReasoningReplySchema.safeParse({ answer: 'x' })), ['thought']);
  assert.ok(FinalAnswerReplySchema.safeParse({ answer: '84' }).success);
  assert.deepEqual(issuePaths(FinalAnswerReplySchema.safeParse({ answer: 84 })), ['answer']);
});

test('replyJsonSchema gives an object schema per call name with the protocol top-level properties and no $schema', () => {
  const expected: Record<ModelCallName, { properties: string[]; required: string[] }> = {
    execution_plan: { properties: ['steps'], required: ['steps'] },
    replan_decision: { properties: ['answer', 'decision', 'question', 'steps'], required: ['decision'] },
    reasoning: { properties: ['thought'], required: ['thought'] },
    final_answer: { properties: ['answer'], required: ['answer'] },
    approval_edit: { properties: ['args'], required: ['args'] },
    memory_summary: { properties: ['summary'], required: ['summary'] },
    task_summary: { properties: ['summary'], required: ['summary'] },
    task_state_summary: {
      properties: ['ActiveFlow', 'CurrentGoal', 'ImportantFacts', 'LastDecision', 'OpenLoops'],
      required: ['CurrentGoal', 'ActiveFlow', 'OpenLoops', 'ImportantFacts', 'LastDecision'],
    },
    live_state_check: { properties: ['tools'], required: ['tools'] },
    task_tree: { properties: ['goal', 'name', 'subtasks'], required: ['name', 'goal', 'subtasks'] },
    react_action: { properties: ['action', 'args', 'blueprint', 'goal', 'question', 'result', 'thought', 'tool'], required: ['thought', 'action'] },
    spin_check: { properties: ['reason', 'spinning'], required: ['spinning', 'reason'] },
    reflection: { properties: ['assessment', 'lesson'], required: ['assessment', 'lesson'] },
    blueprint_params: { properties: ['params'], required: ['params'] },
    memory_extraction: { properties: ['episode', 'facts', 'summary'], required: ['summary', 'facts', 'episode'] },
    message_route: { properties: ['route', 'runId'], required: ['route'] },
    memory_promotion: { properties: ['episode', 'facts'], required: ['facts', 'episode'] },
  };
  assert.deepEqual(Object.keys(CALLS).sort(), Object.keys(expected).sort());
  for (const [name, want] of Object.entries(expected) as [ModelCallName, (typeof expected)[ModelCallName]][]) {
    const schema = replyJsonSchema(name);
    assert.equal(schema.type, 'object', name);
    assert.equal('$schema' in schema, false, `${name} carries $schema`);
    assert.deepEqual(Object.keys(schema.properties as object).sort(), want.properties, name);
    assert.deepEqual(schema.required, want.required, name);
  }
});

test('replyJsonSchema describes a step as the model must write it (type enum, args a free-form object)', () => {
  const steps = (replyJsonSchema('execution_plan').properties as Record<string, { items: Record<string, unknown> }>).steps;
  const item = steps?.items as { properties: Record<string, { enum?: string[]; type?: string }>; required: string[] };
  assert.deepEqual(item.properties.type?.enum, ['tool', 'reason', 'ask_user', 'respond', 'subplan']);
  assert.equal(item.properties.args?.type, 'object');
  assert.deepEqual(item.required, ['type', 'description']);
});
