/**
 * A model that answers instantly, so the benchmark measures orchestration and
 * nothing else: the plan is N calls of the no-op tool `noop` and one respond step;
 * every replan continues; the final answer is fixed.
 *
 * The provider is stateless: it reads N from the goal (`benchGoal(n)`) and its
 * progress from the ExecutionState it is shown, so any number of runs can share it.
 * A plan holds at most 50 steps (ExecutionPlanReplySchema), so longer runs are
 * planned in chunks of 49 tool steps plus a respond step, each next chunk handed
 * out by `replace_remaining` when the current one is used up.
 *
 * Any other goal (a session's ordinary message, as in bench/session.ts) gets a
 * one-step plan, [respond], answered at once.
 */
import { z } from 'zod';
import type { ExecutionState } from '../src/planning/execution-state';
import type { ReplanDecisionReply } from '../src/calls/replan-decision';
import type { StepSpec } from '../src/planning/step-spec';
import { isMemoryPassContext } from '../src/calls/memory-passes';
import { isSummaryContext } from '../src/calls/memory-summary';
import { isTaskStateSummaryContext } from '../src/calls/task-state-summary';
import type { ModelProvider, ModelRequest } from '../src/llm/provider';
import { isApprovalEditContext } from '../src/calls/approval-edit';
import { isMessageRouteContext } from '../src/calls/message-route';
import { isTreeContext, type TreeContext } from '../src/calls/tree';
import { defineTool } from '../src/tools/tool';

export const NOOP_TOOL = defineTool({
  name: 'noop',
  quick: true,
  description: 'Does nothing and returns {}; used by the orchestration benchmark.',
  input: z.object({}),
  handler: async () => ({}),
});

/** A tool returning 100 kB: how history grows when tools return a lot (the by-reference case). */
export const BIG_TOOL = defineTool({
  name: 'big',
  quick: true,
  description: 'Returns 100 kB of text; used by the orchestration benchmark.',
  input: z.object({}),
  handler: async () => ({ text: 'x'.repeat(100_000) }),
});

export const FIXED_ANSWER = 'All noop steps ran.';
/** Tool steps per plan chunk: one slot of the 50 is kept for the respond step. */
const CHUNK = 49;

/** `padBytes` of filler after the goal's first line make it a large payload ((h): past the claim-check threshold). */
export const benchGoal = (steps: number, tool: 'noop' | 'big' = 'noop', padBytes = 0): string =>
  `benchmark: run ${steps} ${tool} steps${padBytes > 0 ? `\n${'lorem ipsum '.repeat(Math.ceil(padBytes / 12))}` : ''}`;

/** N of a benchGoal; null for any other goal. */
function stepsOf(goal: string): number | null {
  const n = Number(/^benchmark: run (\d+) (?:noop|big) steps(?:\n|$)/.exec(goal)?.[1]);
  return Number.isInteger(n) && n >= 1 ? n : null;
}
const toolOf = (goal: string): string => (/^benchmark: run \d+ big steps(?:\n|$)/.test(goal) ? BIG_TOOL.name : NOOP_TOOL.name);

/** A tree run's goal: a root with `fanout` groups of `fanout` leaves (depth 3). */
export const benchTreeGoal = (fanout: number): string => `benchmark: tree of fan-out ${fanout}`;
const fanoutOf = (goal: string): number | null => {
  const n = Number(/^benchmark: tree of fan-out (\d+)$/.exec(goal)?.[1]);
  return Number.isInteger(n) && n >= 1 ? n : null;
};

/**
 * Tree runs: for a benchTreeGoal, a root with `fanout` groups of `fanout` leaves; otherwise a root
 * with one leaf per noop step of a benchGoal. Each leaf calls `noop` once, then finishes.
 */
function treeReply(ctx: TreeContext): unknown {
  switch (ctx.call) {
    case 'task_tree': {
      const fanout = fanoutOf(ctx.state.goal);
      const leaves = (n: number) => Array.from({ length: n }, (_, i) => ({ name: `noop ${i + 1}`, goal: 'call noop' }));
      if (fanout !== null)
        return { name: 'bench', goal: ctx.state.goal, subtasks: Array.from({ length: fanout }, (_, g) => ({ name: `group ${g + 1}`, goal: 'run the leaves', subtasks: leaves(fanout) })) };
      return { name: 'bench', goal: ctx.state.goal, subtasks: leaves(Math.min(stepsOf(ctx.state.goal) ?? 1, ctx.limits.maxFanout)) };
    }
    case 'react_action': {
      const done = ctx.state.steps.some((s) => s.task === ctx.task?.index && s.type === 'tool');
      return done ? { thought: 'done', action: 'finish', result: 'noop ran' } : { thought: 'go', action: 'tool', tool: NOOP_TOOL.name, args: {} };
    }
    case 'final_answer':
      return { answer: FIXED_ANSWER };
    case 'spin_check':
      return { spinning: false, reason: '' };
    case 'reflection':
      return { assessment: 'none', lesson: 'none' };
    case 'task_summary':
      return { summary: 'noop ran' };
    case 'blueprint_params':
      return { params: {} };
  }
}

function chunk(from: number, total: number, tool: string): StepSpec[] {
  const count = Math.min(CHUNK, total - from);
  const tools = Array.from({ length: count }, (_, i): StepSpec => ({
    type: 'tool',
    description: `${tool} ${from + i + 1} of ${total}`,
    tool,
    args: {},
  }));
  return [...tools, { type: 'respond', description: 'Answer the user' }];
}

function toolSteps(state: ExecutionState) {
  const tools = state.steps.filter((s) => s.type === 'tool');
  return {
    done: tools.filter((s) => s.status === 'completed' || s.status === 'failed').length,
    pending: tools.filter((s) => s.status === 'pending').length,
  };
}

export class ZeroLatencyProvider implements ModelProvider {
  readonly label = 'bench-zero-latency';

  async complete(request: ModelRequest): Promise<string> {
    if (isSummaryContext(request.context)) return JSON.stringify({ summary: 'summary' });
    if (isTaskStateSummaryContext(request.context)) {
      return JSON.stringify({ CurrentGoal: 'bench', ActiveFlow: '', OpenLoops: [], ImportantFacts: [], LastDecision: '' });
    }
    if (isTreeContext(request.context)) return JSON.stringify(treeReply(request.context));
    // Long-term memory's passes run off the answer path; they learn nothing from a benchmark.
    if (isMemoryPassContext(request.context)) return JSON.stringify({ summary: 'bench', facts: [], episode: null });
    // A message sent while a run waits is its reply.
    if (isMessageRouteContext(request.context)) return JSON.stringify({ route: 'reply', ...(request.context.waiting[0] ? { runId: request.context.waiting[0].runId } : {}) });
    // An edit of a held call keeps the call as it was.
    if (isApprovalEditContext(request.context)) return JSON.stringify({ args: request.context.args });
    const { state } = request.context;
    const total = stepsOf(state.goal) ?? 0;
    switch (request.name) {
      case 'execution_plan':
        return JSON.stringify({ steps: chunk(0, total, toolOf(state.goal)) });
      case 'replan_decision': {
        const { done, pending } = toolSteps(state);
        const decision: ReplanDecisionReply = pending === 0 && done < total ? { decision: 'replace_remaining', steps: chunk(done, total, toolOf(state.goal)) } : { decision: 'continue' };
        return JSON.stringify(decision);
      }
      case 'live_state_check':
        return JSON.stringify({ tools: [] });
      case 'reasoning':
        return JSON.stringify({ thought: 'nothing to reason about' });
      case 'final_answer':
        return JSON.stringify({ answer: FIXED_ANSWER });
      case 'memory_summary':
      case 'task_state_summary':
      case 'memory_extraction':
      case 'memory_promotion':
      case 'task_tree':
      case 'react_action':
      case 'spin_check':
      case 'reflection':
      case 'task_summary':
      case 'blueprint_params':
      case 'message_route':
      case 'approval_edit':
        throw new Error(`${request.name} is answered above`);
    }
  }
}
