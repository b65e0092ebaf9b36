/**
 * The activities of a tree run (seed 003): propose a task tree, one ReAct iteration of a leaf,
 * the final answer. Built by a factory like the planner's, sharing its model provider, tools,
 * step journal and memory threads.
 */
import { ApplicationFailure } from '@temporalio/common';
import { log } from '@temporalio/activity';
import { findTask, levelOf, pathTo, treeProblems, type TaskNode, type TaskSpec } from '../planning/task-tree';
import { episodeLine, factLine } from '../longterm/context-chunks';
import { allows, refusedAction } from '../planning/capabilities';
import type { ChatMessage } from '../text/chat-message';
import { findStep, headForHistory, type ExecutionState } from '../planning/execution-state';
import { approvalNeeded } from '../planning/approval';
import type { TreeCallName } from '../calls/names';
import type { ReactActionReply } from '../calls/react-action';
import type { ReflectionReply } from '../calls/reflection';
import type { SpinCheckReply } from '../calls/spin-check';
import type { TaskTreeReply } from '../calls/task-tree';
import { completeStructured } from '../llm/structured';
import { JOURNALS } from '../store/kv';
import { buildTreeMessages } from '../calls/registry';
import type { TreeContext } from '../calls/tree';
import type { ChunkInput } from '../memory/model';
import { eventChunks, stepChunks } from '../memory/run-chunks';
import { describeBlueprint, expandBlueprint, paramsProblem, type Blueprint } from '../blueprints/blueprint';
import type { CodeVersion } from '../planning/code-version';
import { agentNameOf } from '../agents/names';
import { resolveAgentCall, toolsForRun } from '../tools/agent-tools';
import { assertCurrent, codeVersionOf } from './code-version';
import { handOverUnlessQuick, idempotencyKey, withHeartbeats } from './heartbeat';
import { asFailure, ensureRunThread, journaledWork, promptReader, recallReader, rememberInRun, runToolStep, sessionConversation, type PlanActivityDeps } from './plan-activities';
import type { ProposeTreeInput, ReactStepResult, TreeCallMemory, TreeCalls, TreeLimits } from '../engine/contract';

export interface TreeActivityDeps extends PlanActivityDeps {
  treeLimits: TreeLimits;
  /** Plan templates a ReAct iteration may invoke (`blueprint` action). @default none */
  blueprints?: Blueprint[];
}

const JOURNAL = JOURNALS.steps;
/** What one iteration's recall may add to its prompt, in characters (seed 003's memory size limit). */
export const TASK_RECALL_CHARS = 1_500;

/** The first lines that fit in `max` characters together. */
function withinChars(lines: readonly string[], max: number): string[] {
  const kept: string[] = [];
  let used = 0;
  for (const line of lines) {
    if (used + line.length + 1 > max) break;
    kept.push(line);
    used += line.length + 1;
  }
  return kept;
}

/** A ReAct iteration's thought and chosen action, as a `thinking` chunk of the run's thread. */
function thoughtChunk(state: ExecutionState, stepId: string, taskIndex: string, reply: ReactActionReply): ChunkInput {
  const action = reply.action === 'tool' ? `tool ${reply.tool ?? '?'}` : reply.action;
  return { type: 'thinking', content: { kind: 'text', text: `[task ${taskIndex}] ${reply.thought} → ${action}` }, provenance: { runId: state.runId, stepId } };
}

export function createTreeActivities(deps: TreeActivityDeps) {
  const attempts = deps.repairAttempts ?? 3;
  const limits = deps.treeLimits;
  const blueprints = deps.blueprints ?? [];
  /** Stops a run planned on other code (model, prompts, tools) before its next step. */
  const current = (state: ExecutionState) => assertCurrent(state, codeVersionOf(deps.provider, deps.tools), deps.versioned);

  async function context(call: TreeContext['call'], state: ExecutionState, taskIndex?: string): Promise<TreeContext> {
    const memory = deps.memory && state.threadId ? await deps.memory.context(state.threadId, deps.contextBudget, promptReader(state, call)) : undefined;
    const path = taskIndex && state.tree ? pathTo(state.tree, taskIndex) : [];
    const task = path.at(-1);
    const recall = task && call === 'react_action' ? await recallFor(state, task, memory?.messages ?? []) : [];
    // A run of a session sees that conversation: its recent turns and TaskState (seed 000), as the planner does.
    const session = state.parentRunId ? undefined : await sessionConversation(deps, state, promptReader(state, call));
    return {
      call,
      tree: true,
      state,
      tools: toolsForRun(deps.tools.describe(), deps.agents ?? [], state.agent),
      limits,
      ...(task ? { task, path } : {}),
      ...(memory ? { memory: { messages: memory.messages, tokens: memory.tokens } } : {}),
      ...(recall.length ? { recall } : {}),
      ...(session ? { session } : {}),
      ...(blueprints.length ? { blueprints: blueprints.map(describeBlueprint) } : {}),
    };
  }

  /**
   * Seed 003's observe phase under react_mem: long-term memory searched for the current task at each
   * iteration (not once per run, for the goal), in the run's session; facts and similar earlier tasks the
   * thread's messages show already are left out, and the rest is cut to TASK_RECALL_CHARS.
   */
  async function recallFor(state: ExecutionState, task: TaskNode, shown: readonly ChatMessage[]): Promise<string[]> {
    if (!deps.longterm || !allows(state.allow, 'recall')) return [];
    const found = await deps.longterm.contextFor(
      state.userId,
      `${task.name}: ${task.goal}`,
      { maxFacts: 5, maxEpisodes: 2, ...(state.sessionId ? { sessionId: state.sessionId } : {}) },
      recallReader(state, `recall for task ${task.index}`),
    );
    const seen = shown.map((m) => m.content).join('\n');
    const lines = [...found.facts.filter((f) => !seen.includes(f.id)).map(factLine), ...found.episodes.filter((e) => !seen.includes(e.id)).map(episodeLine)];
    return withinChars(lines, TASK_RECALL_CHARS);
  }

  /**
   * The run's state as the call works with it: its memory thread opened when asked, and what happened since
   * the last call written there first (once: a retry finds the operation done).
   */
  async function prepared(state: ExecutionState, { openThread, unrecorded }: TreeCallMemory): Promise<ExecutionState> {
    const threadId = state.threadId ?? (openThread ? await ensureRunThread(deps, { ...state, runId: openThread }) : null);
    const ready = threadId && threadId !== state.threadId ? { ...state, threadId } : state;
    if (unrecorded) await rememberInRun(deps, ready, eventChunks(ready, unrecorded.from, unrecorded.plan), 'events since the last call', `${idempotencyKey()}:since`);
    return ready;
  }

  async function ask<N extends TreeCallName | 'final_answer'>(ctx: TreeContext & { call: N }, signal: AbortSignal, check?: Parameters<typeof completeStructured<N>>[4]) {
    try {
      const model = ctx.state.agent?.model;
      return await completeStructured(deps.provider, { name: ctx.call, messages: buildTreeMessages(ctx), context: ctx, ...(model ? { model } : {}) }, attempts, signal, check);
    } catch (err) {
      throw asFailure(err);
    }
  }

  return {
    /**
     * `task_tree`: the plan of a tree run, a revision of it after a person's feedback, or the
     * subtasks a task plans for itself. A tree past the limits is sent back for repair.
     */
    async proposeTree({ state: given, feedback, plan, ...memory }: ProposeTreeInput): Promise<{ tree: TaskTreeReply; model: string; codeVersion?: CodeVersion; threadId?: string }> {
      // A task planning its subtasks is a step of the run; a (revised) plan of the whole run is made afresh.
      if (plan) current(given);
      // Taken before the prompt lists the tools (see planRun).
      const codeVersion = codeVersionOf(deps.provider, deps.tools);
      return withHeartbeats(async (signal) => {
        const state = await prepared(given, memory);
        const threadId = state.threadId ?? (await ensureRunThread(deps, state));
        const withThread = threadId ? { ...state, threadId } : state;
        const base = await context('task_tree', withThread, plan?.taskIndex);
        // A task's revised subtree is shown with that task's part of the tree; a revised plan with the whole.
        const shown = state.tree && plan ? findTask(state.tree, plan.taskIndex) : undefined;
        const previous = feedback && state.tree ? { feedback: { text: feedback, previous: shown ?? state.tree } } : {};
        const ctx: TreeContext & { call: 'task_tree' } = { ...base, call: 'task_tree', ...previous, ...(plan ? { planGoal: plan.goal } : {}) };
        // A task at level L plans a subtree whose root is itself: it may use the levels left below it.
        const levels = plan ? limits.maxDepth - levelOf(plan.taskIndex) + 1 : limits.maxDepth;
        const check = (reply: TaskSpec) => {
          const problems = treeProblems(reply, { maxDepth: levels, maxFanout: limits.maxFanout });
          return problems.length ? `the tree breaks the limits: ${problems.join('; ')}` : null;
        };
        const tree = await ask(ctx, signal, check);
        return { tree, model: deps.provider.label, codeVersion, ...(threadId ? { threadId } : {}) };
      });
    },

    /**
     * One ReAct iteration of a leaf: the `react_action` call and, for a tool action, the tool.
     * Both are journaled under the activity's idempotency key, so a retry after a crash neither
     * asks the model again nor repeats a finished tool call.
     */
    async reactStep({ state: given, taskIndex, stepId, hold, ...memory }: Parameters<TreeCalls['reactStep']>[0]): Promise<ReactStepResult> {
      current(given);
      return withHeartbeats(async (signal) => {
        const state = await prepared(given, memory);
        const key = idempotencyKey();
        // What the run's state lacks: the code version (a run started from a blueprint), the thread this call opened.
        const version = {
          ...(state.codeVersion ? {} : { codeVersion: codeVersionOf(deps.provider, deps.tools) }),
          ...(state.threadId && state.threadId !== given.threadId ? { threadId: state.threadId } : {}),
        };
        if (!state.tree || !findTask(state.tree, taskIndex)) throw ApplicationFailure.nonRetryable(`no task ${taskIndex} in run ${state.runId}`, 'UnknownStep');
        // A local call that chose a slow tool handed over under its key: the journaled reply is found, the model not asked again.
        let reply = await deps.store.get<ReactActionReply>(JOURNAL, `${key}:action`);
        if (!reply) {
          reply = await ask({ ...(await context('react_action', state, taskIndex)), call: 'react_action' }, signal);
          await deps.store.put(JOURNAL, `${key}:action`, reply);
        }
        // A call its policy holds is not made: the engine waits for a person's approval first.
        const held = reply.action === 'tool' ? approvalNeeded(reply.tool ?? '', hold) : null;
        // A sub-agent is no tool call here: its child run is the engine's to start.
        if (reply.action === 'tool' && held === null && agentNameOf(reply.tool ?? '') === null) handOverUnlessQuick(deps.tools, [reply.tool ?? '']);
        // The task's working memory (seed 004): a tool call is a step record (its thought, the
        // action, the result, its status and time); any other action is the thought and the choice.
        if (reply.action !== 'tool') {
          await rememberInRun(deps, state, [thoughtChunk(state, stepId, taskIndex, reply)], `task ${taskIndex} thought`, `${key}:thought`);
          return { reply, observation: null, ...version };
        }
        const call = { stepId, tool: reply.tool ?? '', args: reply.args ?? {} };
        // Tools turned off for the run (a capability switch): the call is refused, not made.
        if (!allows(state.allow, 'tools')) return { reply, observation: { kind: 'error' as const, content: refusedAction('tools') }, ...version };
        if (held !== null) return { reply, observation: null, held, ...version };
        // A sub-agent runs as a child run the engine starts; a call that cannot be made is the action's error.
        const resolved = agentNameOf(call.tool) !== null ? resolveAgentCall(deps.agents ?? [], state.agent, call.tool, call.args) : null;
        if (resolved?.ok) return { reply, observation: null, agent: resolved.invocation, ...version };
        const done = resolved ? { kind: 'error' as const, content: resolved.error } : await journaledWork(deps.store, key, () => runToolStep(deps, state, call, key, signal));
        const step = {
          id: stepId,
          index: state.steps.length + 1,
          type: 'tool' as const,
          description: `[task ${taskIndex}] ${reply.thought}`,
          status: 'completed' as const,
          tool: call.tool,
          args: call.args,
        };
        await rememberInRun(deps, state, stepChunks(state, step, done), `task ${taskIndex} ${call.tool}`, key);
        return { reply, observation: headForHistory({ kind: done.kind, content: done.content }), ...version };
      });
    },

    /**
     * A ReAct iteration invoked a blueprint (seed §9): its parameters are extracted from the task
     * (`blueprint_params`, validated against the blueprint's schema and sent back for repair like
     * any invalid reply), and its tree becomes the task's subtree. An unknown name, or a tree too
     * deep for the task's level, is an error the next iteration sees.
     */
    async expandBlueprint({ state: given, taskIndex, name, ...memory }: { state: ExecutionState; taskIndex: string; name: string } & TreeCallMemory): Promise<{ tree: TaskSpec } | { error: string }> {
      current(given);
      return withHeartbeats(async (signal) => {
        const state = await prepared(given, memory);
        const blueprint = blueprints.find((b) => b.name === name);
        if (!blueprint) return { error: `no blueprint "${name}"; the blueprints are: ${blueprints.map((b) => b.name).join(', ') || 'none'}` };
        const ctx: TreeContext & { call: 'blueprint_params' } = { ...(await context('blueprint_params', state, taskIndex)), call: 'blueprint_params', blueprint: describeBlueprint(blueprint) };
        const { params } = await ask(ctx, signal, (reply) => {
          const problem = paramsProblem(blueprint, reply.params);
          return problem ? `the params do not fit the blueprint's schema: ${problem}` : null;
        });
        const tree = expandBlueprint(blueprint, params);
        const problems = treeProblems(tree, { maxDepth: limits.maxDepth - levelOf(taskIndex) + 1, maxFanout: limits.maxFanout });
        return problems.length ? { error: `blueprint ${name} does not fit under task ${taskIndex}: ${problems.join('; ')}` } : { tree };
      });
    },

    /** A held call a person approved: made now, with the arguments they approved, and recorded as the iteration's step. */
    async runHeldCall({ state: given, taskIndex, stepId, tool, args, ...memory }: Parameters<TreeCalls['runHeldCall']>[0]): Promise<Pick<ReactStepResult, 'observation' | 'agent'>> {
      current(given);
      return withHeartbeats(async (signal) => {
        const state = await prepared(given, memory);
        const key = idempotencyKey();
        const resolved = agentNameOf(tool) !== null ? resolveAgentCall(deps.agents ?? [], state.agent, tool, args) : null;
        if (resolved?.ok) return { observation: null, agent: resolved.invocation };
        const done = resolved ? { kind: 'error' as const, content: resolved.error } : await journaledWork(deps.store, key, () => runToolStep(deps, state, { stepId, tool, args }, key, signal));
        const step = findStep(state, stepId);
        if (step) await rememberInRun(deps, state, stepChunks(state, { ...step, args }, done), `task ${taskIndex} ${tool}`, key);
        return { observation: headForHistory({ kind: done.kind, content: done.content }) };
      });
    },

    /** `spin_check`: the task's latest calls look alike; is it going round in circles? */
    async checkSpin({ state: given, taskIndex, ...memory }: { state: ExecutionState; taskIndex: string } & TreeCallMemory): Promise<SpinCheckReply> {
      current(given);
      return withHeartbeats(async (signal) => {
        const state = await prepared(given, memory);
        return ask({ ...(await context('spin_check', state, taskIndex)), call: 'spin_check' }, signal);
      });
    },

    /** `reflection`: the task's last action failed; what went wrong, and the lesson for the next attempt. */
    async reflect({ state: given, taskIndex, level, ...memory }: Parameters<TreeCalls['reflect']>[0]): Promise<ReflectionReply> {
      current(given);
      return withHeartbeats(async (signal) => {
        const state = await prepared(given, memory);
        const reply = await ask({ ...(await context('reflection', state, taskIndex)), call: 'reflection', ...(level ? { reflection: level } : {}) }, signal);
        // The lesson stays in the task's working memory, past compaction of older steps.
        const lesson: ChunkInput = { type: 'thinking', content: { kind: 'text', text: `task ${taskIndex} lesson: ${reply.lesson}` }, priority: 70, provenance: { runId: state.runId } };
        await rememberInRun(deps, state, [lesson], `task ${taskIndex} reflection`, idempotencyKey());
        return reply;
      });
    },

    /**
     * `task_summary`: what a task stopped at its iteration limit reached. Best effort, asked once: a model
     * that gives none (an invalid reply, a refusal, an outage) costs the run nothing — the task aborts without it.
     */
    async summarizeTask({ state: given, taskIndex, ...memory }: Parameters<TreeCalls['summarizeTask']>[0]): Promise<{ summary: string | null }> {
      current(given);
      return withHeartbeats(async (signal) => {
        const state = await prepared(given, memory);
        const ctx = await context('task_summary', state, taskIndex);
        try {
          const { summary } = await ask({ ...ctx, call: 'task_summary' }, signal);
          return { summary };
        } catch (err) {
          if (signal.aborted) throw err;
          log.warn('no summary of a task at its iteration limit', { runId: state.runId, taskIndex, error: err instanceof Error ? err.message : String(err) });
          return { summary: null };
        }
      });
    },

    /** `final_answer` of a tree run, from what its tasks produced (it enters the thread when the run closes). */
    async treeAnswer({ state: given, ...memory }: { state: ExecutionState } & TreeCallMemory): Promise<{ answer: string }> {
      current(given);
      return withHeartbeats(async (signal) => {
        const state = await prepared(given, memory);
        return ask({ ...(await context('final_answer', state)), call: 'final_answer' }, signal);
      });
    },
  } satisfies TreeCalls;
}

/** The tree run's calls, as the engine's contract names them (`TreeCalls`). */
export type TreeActivities = TreeCalls;
