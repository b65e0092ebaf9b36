/**
 * Sub-agents in the pure engines: a tool step naming `agent.<name>` is looked up by an activity,
 * then started as a child run carrying the agent; its answer is the step's observation.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { AgentInvocation } from '../../src/agents/names';
import { PlanEngine, type PlanCommand } from '../../src/engine/plan-engine';
import type { ExecutionState } from '../../src/planning/execution-state';
import type { StepSpec } from '../../src/planning/step-spec';

const T0 = new Date('2026-01-01T00:00:00Z');
const CALL: StepSpec = { type: 'tool', description: 'Ask the researcher', tool: 'agent.researcher', args: { task: 'find x' } };
const RESPOND: StepSpec = { type: 'respond', description: 'Answer' };
const INVOCATION: AgentInvocation = { agent: { name: 'researcher', instructions: 'Be brief.', tools: ['calculator'] }, engine: 'tree', task: 'find x' };
const kinds = (cs: PlanCommand[]) => cs.map((c) => (c.kind === 'call' ? `call:${c.activity}` : c.kind === 'status' ? `status:${c.status}` : c.kind));
const planned = (steps: StepSpec[]) => ({ kind: 'result' as const, activity: 'planRun' as const, value: { steps, model: 'm', threadId: 'thread_run-a' } });
const resolved = (value: { ok: true; invocation: AgentInvocation } | { ok: false; error: string }) => ({ kind: 'result' as const, activity: 'resolveAgent' as const, value });

function engine(depth = 0, agent?: AgentInvocation['agent']): PlanEngine {
  return new PlanEngine({ runId: 'run-a', userId: 'alice', goal: 'g', reportTo: null, depth, limits: { maxSteps: 10, maxDepth: 1 }, ...(agent ? { agent } : {}) }, T0);
}

test('an agent step resolves the agent, starts it as a child run with the task as goal, and takes its answer as the observation', () => {
  const e = engine();
  e.start(T0);
  const first = e.handle(planned([CALL, RESPOND]), T0);
  assert.deepEqual(kinds(first), ['status:running', 'call:resolveAgent']);
  const call = first.at(-1);
  assert.ok(call?.kind === 'call' && call.activity === 'resolveAgent');
  assert.equal(call.input.stepId, 's1');
  const start = e.handle(resolved({ ok: true, invocation: INVOCATION }), T0);
  assert.deepEqual(kinds(start), ['start_child']);
  const child = start[0];
  assert.ok(child?.kind === 'start_child');
  assert.equal(child.workflowId, 'run-a.s1');
  assert.deepEqual(child.input, {
    userId: 'alice',
    goal: 'find x',
    sessionId: null,
    parentRunId: 'run-a',
    depth: 1,
    limits: { maxSteps: 10, maxDepth: 1 },
    agent: INVOCATION.agent,
    relayQuestions: true,
    engine: 'tree',
  });
  assert.equal(e.state.steps[0]?.childRunId, 'run-a.s1');
  const answer = { runId: 'run-a.s1', status: 'completed', finalAnswer: 'x is 4' } as ExecutionState;
  assert.deepEqual(kinds(e.handle({ kind: 'child_ended', value: answer }, T0)), ['call:replan']);
  assert.deepEqual(
    e.state.observations.map((o) => [o.stepId, o.kind, o.content]),
    [['s1', 'tool', 'x is 4']],
  );
  assert.equal(e.state.steps[0]?.status, 'completed');
});

test('a failed agent run, an unresolvable agent and the nesting limit are error observations, then a replan', () => {
  const e = engine();
  e.start(T0);
  e.handle(planned([CALL, CALL, RESPOND]), T0);
  assert.deepEqual(kinds(e.handle(resolved({ ok: false, error: 'unknown agent "researcher"' }), T0)), ['call:replan']);
  assert.deepEqual(
    e.state.observations.map((o) => [o.kind, o.content]),
    [['error', 'unknown agent "researcher"']],
  );
  e.handle({ kind: 'result', activity: 'replan', value: { decision: 'continue' } }, T0);
  e.handle(resolved({ ok: true, invocation: INVOCATION }), T0);
  const failed = { runId: 'run-a.s2', status: 'failed', finalAnswer: null, lastError: 'boom' } as ExecutionState;
  e.handle({ kind: 'child_ended', value: failed }, T0);
  assert.equal(e.state.observations.at(-1)?.content, 'agent researcher (run run-a.s2) ended failed: boom');
  assert.equal(e.state.steps[1]?.status, 'failed');

  const deep = engine(1, { name: 'organiser', instructions: 'i' });
  deep.start(T0);
  deep.handle(planned([CALL, RESPOND]), T0);
  assert.deepEqual(kinds(deep.handle(resolved({ ok: true, invocation: INVOCATION }), T0)), ['call:replan']);
  assert.equal(deep.state.observations[0]?.content, 'agent researcher not started: nesting limit of 1 reached');
  assert.equal(deep.state.agent?.name, 'organiser', "an agent's run carries its agent in its state");
});

test("a sub-plan of an agent's run is still a run of that agent", () => {
  const agent = { name: 'organiser', instructions: 'i', tools: ['calculator'] };
  const e = engine(0, agent);
  e.start(T0);
  const [, start] = e.handle(planned([{ type: 'subplan', description: 'part', goal: 'a part' }, RESPOND]), T0);
  assert.ok(start?.kind === 'start_child');
  assert.deepEqual(start.input.agent, agent);
});
