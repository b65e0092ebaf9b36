/**
 * Seed 003's recursive dual engine as an engine over the core (`./core`): the model proposes a
 * task tree; a person may review it (approve, edit, revise with feedback, reject); leaves run in
 * DFS order, each as a ReAct loop of one model-chosen action per iteration (a tool, finish,
 * ask the person, or plan: the task splits into subtasks under its own index, up to the depth
 * limit). Every iteration is also a step of the run's ExecutionState, so every client that
 * shows steps and observations shows a tree run too; the tree and its progress rendering are
 * the state's `tree` and `progress`.
 */
import { agentRunInput, newRunOf } from './run-inputs';
import type { AgentInvocation } from '../agents/names';
import * as model from '../planning/execution-state';
import type { ExecutionState, Observation, RunEnding } from '../planning/execution-state';
import type { StepSpec } from '../planning/step-spec';
import {
  attachSubtasks,
  buildTree,
  delegatedOwner,
  dfs,
  findTask,
  isFinishedTask,
  levelOf,
  nextInScope,
  requeueSubtree,
  skipSubtree,
  treeProblems,
  updateSubtree,
  updateTask,
  type TaskNode,
  type TaskSpec,
} from '../planning/task-tree';
import type { Command, Engine, EngineEvent } from './core';
import type { ApprovalEvent, ReplyEvent } from './plan-engine';
import { approvalProblem, type ApprovalDecision } from '../planning/approval';
import { Outbox } from './outbox';
import { QuestionRelay, type ChildReportEvent, type RelayHost } from './relay';
import { offFor, refusedAction } from '../planning/capabilities';
import { FAILURES_ONLY, reflectionLevel, type ReflectionLevel } from './reflection';
import { DEFAULT_SPIN_LIMITS, repeatedActionType, repeatedCalls, shouldCheckSpin, shouldCheckTypeSpin } from './spin';
import type { SpinCheckReply } from '../calls/spin-check';
import { oneLine } from '../text/clip';
import type { PlanExecutionInput, ReactStepResult, ReviewDecision, TaskSteer, TreeCalls, TreeLimits } from './contract';

export interface ReviewEvent extends ReviewDecision {
  kind: 'review';
}
/** A person's skip or redo of a task while the run executes. */
export interface SteerEvent extends TaskSteer {
  kind: 'skip' | 'redo';
}
export type { ChildReportEvent } from './relay';
export type TreePersonEvent = ReplyEvent | ReviewEvent | SteerEvent | ChildReportEvent | ApprovalEvent;

/** Why a skip or redo cannot be taken: the task is unknown, it cannot be now, or a child run executes it. */
export type SteerRefusal = { kind: 'unknown' | 'notNow'; message: string } | { kind: 'delegated'; message: string; childRunId: string };
export type TreeCommand = Command<TreeCalls>;
export type TreeEvent = EngineEvent<TreeCalls, TreePersonEvent, ExecutionState>;

export interface TreeEngineInput extends PlanExecutionInput {
  runId: string;
  reportTo: string | null;
  /** The parent run that shows this run's questions as its own (`relayQuestions`), or null. */
  questionsTo?: string | null;
  /**
   * Whether a subtree a `plan` or `blueprint` action makes waits for review too, when the run is reviewed
   * (asked when one is made: runs recorded before answer false, the workflow's `patched`). @default none
   */
  reviewsSubtrees?: () => boolean;
  /** Whether a task that aborts fails the plan unless it is optional (asked when one aborts; runs recorded before answer false). @default none */
  failsOnAbort?: () => boolean;
  /** Whether this run tells the run above of its plan reviews and held calls, as of its questions (asked when such a wait begins or ends; runs recorded before answer false). @default none */
  reportsWaits?: () => boolean;
  /** Whether calls of one tool with changing arguments are checked for spinning too (asked when that count is reached; runs recorded before answer false). @default none */
  spinsByType?: () => boolean;
  review: boolean;
  limits: PlanExecutionInput['limits'];
  treeLimits: TreeLimits;
  /** Told of every version of the state (the history replayer's; absent in a worker). */
  observe?: (state: ExecutionState) => void;
}

type Waiting =
  | { for: 'tree' }
  | { for: 'review' }
  /** A subtree a task planned (or took from a blueprint), shown for review before it runs. */
  | { for: 'subtree_review'; taskIndex: string; stepId: string; goal: string }
  | { for: 'iteration'; taskIndex: string; stepId: string }
  | { for: 'reply'; taskIndex: string; stepId: string }
  | { for: 'subtasks'; taskIndex: string; stepId: string; goal?: string }
  | { for: 'child'; taskIndex: string; stepId: string; childRunId: string }
  | { for: 'agent'; taskIndex: string; stepId: string; childRunId: string; agent: string }
  | { for: 'reflection'; taskIndex: string; level: Exclude<ReflectionLevel, 'none'> }
  | { for: 'spin'; taskIndex: string }
  /** A task at its iteration limit, summarised before it aborts. */
  | { for: 'summary'; taskIndex: string }
  /** An iteration's tool call held for a person's approval, then (approved) made by `runHeldCall`. */
  | { for: 'approval'; taskIndex: string; stepId: string }
  | { for: 'held_call'; taskIndex: string; stepId: string }
  | { for: 'answer' }
  | { for: 'nothing' };

/** A wait on a child run (a group's or a sub-agent's), whose questions this run shows as its own. */
const isChildWait = (w: Waiting): w is Extract<Waiting, { for: 'child' | 'agent' }> => w.for === 'child' || w.for === 'agent';

/** One line of a result for the progress tree. */
const summaryOf = (text: string) => oneLine(text, 120);

export class TreeEngine implements Engine<ExecutionState, TreeCalls, TreePersonEvent, ExecutionState> {
  #state: ExecutionState;
  #waiting: Waiting = { for: 'nothing' };
  #plans = 0;
  /** Observations already in the run's memory thread; the next call writes the rest (`TreeCallMemory.unrecorded`). */
  #recorded = 0;
  /** The plan last written to the thread. */
  #recordedPlan: string | null = null;
  readonly #out = new Outbox<TreeCalls>();
  /** A question a child run (a group's, a sub-agent's) asked, shown as this run's own until the person answers it here (or there). */
  readonly #relay = new QuestionRelay();

  constructor(
    private readonly input: TreeEngineInput,
    now: Date,
  ) {
    const initial = model.initialState(newRunOf(input), now);
    this.#state = { ...initial, engine: 'tree', ...(input.entry ? { entry: input.entry } : {}), tree: null, progress: '' };
    input.observe?.(this.#state);
  }

  get state(): ExecutionState {
    return this.#state;
  }

  canTakeReply(): boolean {
    return this.#state.status === 'waiting_user' && (this.#waiting.for === 'reply' || (isChildWait(this.#waiting) && this.#relay.open));
  }

  /** Why an approval decision cannot be taken now, or null when it can (the update's validator). */
  approvalProblem(decision: ApprovalDecision): string | null {
    return this.#waiting.for === 'approval' ? approvalProblem(this.#state, decision) : `run is ${this.#state.status}, not waiting for an approval`;
  }

  /** Why a review decision cannot be taken now, or null when it can (the update's validator). */
  reviewProblem(decision: ReviewDecision): string | null {
    const waiting = this.#waiting;
    if (this.#state.status !== 'waiting_review' || (waiting.for !== 'review' && waiting.for !== 'subtree_review')) return `run is ${this.#state.status}, not waiting for a review`;
    if (decision.planId !== this.#state.planId) return `plan ${decision.planId} is not the plan under review (${this.#state.planId ?? 'none'})`;
    if (decision.tree) {
      // A subtree under review is rooted at its task: it may use the levels left below it.
      const limits = waiting.for === 'subtree_review' ? { ...this.input.treeLimits, maxDepth: this.input.treeLimits.maxDepth - levelOf(waiting.taskIndex) + 1 } : this.input.treeLimits;
      const problems = treeProblems(decision.tree, limits);
      if (problems.length) return `the edited tree breaks the limits: ${problems.join('; ')}`;
    }
    if (decision.decision === 'revise' && !decision.tree && !decision.feedback) return 'a revision needs feedback or an edited tree';
    return null;
  }

  /** Why a skip or redo of `index` cannot be taken now, or null when it can (the updates' validator). */
  steerProblem(kind: 'skip' | 'redo', index: string): SteerRefusal | null {
    const { status } = this.#state;
    const tree = this.#state.tree;
    const task = tree ? findTask(tree, index) : undefined;
    if (!tree || !task) return { kind: 'unknown', message: `run ${this.#state.runId} has no task ${index}` };
    // A call held for approval waits inside a leaf: its task and the others can be skipped or redone meanwhile.
    if (status !== 'running' && status !== 'waiting_user' && status !== 'waiting_approval') return { kind: 'notNow', message: `run is ${status}: tasks can be skipped or redone while it executes` };
    const scope = this.#scopeIndex();
    if (index === scope) return { kind: 'notNow', message: `task ${index} is the whole of this run: cancel the run instead` };
    if (!index.startsWith(`${scope}-`)) return { kind: 'notNow', message: `task ${index} is not part of this run (it executes task ${scope})` };
    const owner = delegatedOwner(tree, scope, index);
    if (owner?.childRunId) return { kind: 'delegated', message: `task ${index} is executed by run ${owner.childRunId}`, childRunId: owner.childRunId };
    const finished = isFinishedTask(task.status);
    if (kind === 'skip' && finished) return { kind: 'notNow', message: `task ${index} is ${task.status}: only a task not done with can be skipped` };
    if (kind === 'redo' && !finished) return { kind: 'notNow', message: `task ${index} is ${task.status}: only a finished, aborted or skipped task can be redone` };
    return null;
  }

  start(now: Date): TreeCommand[] {
    const scope = this.input.scope;
    if (scope) {
      // A child run: its part of the tree was planned (and reviewed) by the run above it.
      // It writes to the root run's memory thread: one working memory for the whole tree (the seed's shared timeline).
      this.#publish(
        model.withTree(this.#state, scope.tree, now, {
          status: 'running',
          planId: `${scope.rootRunId}#${scope.index}`,
          threadId: scope.threadId ?? null,
          ...(scope.codeVersion ? { codeVersion: scope.codeVersion } : {}),
        }),
      );
      return this.#schedule(now);
    }
    if (this.input.fork) {
      // A fork goes on from its first state: the tasks not done with run (a question waiting there is asked again).
      const state = { ...this.input.fork.state, runId: this.#state.runId, updatedAt: now.toISOString() };
      this.#publish(state);
      if (state.status === 'waiting_user' && state.currentStepId) {
        const task = model.findStep(state, state.currentStepId)?.task ?? '';
        this.#waiting = { for: 'reply', taskIndex: task, stepId: state.currentStepId };
        return this.#emit({ kind: 'await_person' });
      }
      if (state.tree) return this.#schedule(now);
      // Forked before its tree was made: it proposes one, as any run does (a fork carries no blueprint or entry).
    }
    if (this.input.blueprint) return this.#proposed(this.input.blueprint.tree, now);
    if (this.input.entry === 'react') return this.#reactFirst(now);
    this.#waiting = { for: 'tree' };
    return [{ kind: 'call', activity: 'proposeTree', input: { state: this.#state }, policy: 'model', summary: `task tree: ${this.input.goal}`.slice(0, 200) }];
  }

  handle(event: TreeEvent, now: Date): TreeCommand[] {
    this.#out.clear();
    const waiting = this.#waiting;
    this.#waiting = { for: 'nothing' };
    switch (event.kind) {
      case 'failed':
        this.#closeRunningTask('aborted', event.error, now);
        this.#publish(model.fail(this.#state, event.error, now));
        return this.#end('failed');
      case 'cancelled':
        this.#closeRunningTask('skipped', 'the run was cancelled', now);
        this.#publish(model.cancel(this.#state, now));
        return this.#end('cancelled');
      case 'reply':
        if (isChildWait(waiting) && this.#relay.open) return this.#relayReply(waiting, event.text, now);
        if (waiting.for !== 'reply') throw new Error(`a reply arrived while the run waits for ${waiting.for}`);
        this.#publish(model.recordReply(this.#state, waiting.stepId, event.text, now));
        return this.#schedule(now);
      case 'child_report':
        return this.#childReport(waiting, event.report, now);
      case 'approval':
        if (waiting.for !== 'approval' || waiting.stepId !== event.stepId) throw new Error(`an approval arrived while the run waits for ${waiting.for}`);
        return this.#decided(waiting, event, now);
      case 'review':
        if (waiting.for === 'subtree_review') return this.#subtreeReview(waiting, event, now);
        if (waiting.for !== 'review') throw new Error(`a review arrived while the run waits for ${waiting.for}`);
        return this.#review(event, now);
      case 'skip':
      case 'redo':
        return this.#steer(event, waiting, now);
      case 'child_ended':
        if (waiting.for === 'agent') return this.#agentEnded(waiting, event.value, now);
        if (waiting.for !== 'child') throw new Error(`a child run ended while the run waits for ${waiting.for}`);
        return this.#childEnded(waiting, event.value, now);
      case 'delivered':
      case 'done':
        throw new Error(`a run gives no command that answers ${event.kind}`);
      case 'result':
        break;
    }
    switch (event.activity) {
      case 'proposeTree': {
        const { tree, model: label, threadId, codeVersion } = event.value;
        if (waiting.for === 'subtasks') return this.#planned(waiting, tree.subtasks, now);
        if (waiting.for !== 'tree') throw new Error(`a task tree arrived while the run waits for ${waiting.for}`);
        // What the plan is made with; its steps check it (histories recorded before it have none).
        this.#state = { ...this.#state, model: label, threadId: threadId ?? this.#state.threadId, ...(codeVersion ? { codeVersion } : {}) };
        return this.#proposed(tree, now);
      }
      case 'expandBlueprint': {
        if (waiting.for !== 'subtasks') throw new Error(`a blueprint arrived while the run waits for ${waiting.for}`);
        const expanded = event.value;
        if ('tree' in expanded) return this.#planned(waiting, expanded.tree.subtasks ?? [], now);
        this.#publish(model.finishStep(this.#state, waiting.stepId, 'failed', { kind: 'error', content: expanded.error }, now));
        return this.#schedule(now);
      }
      case 'reactStep':
        if (waiting.for !== 'iteration') throw new Error(`an action arrived while the run waits for ${waiting.for}`);
        return this.#acted(waiting, event.value, now);
      case 'reflect': {
        if (waiting.for !== 'reflection') throw new Error(`a reflection arrived while the run waits for ${waiting.for}`);
        const { assessment, lesson } = event.value;
        const { level } = waiting;
        const content = level === 'deep' ? `reflection on the failed action: ${assessment} Lesson: ${lesson}` : `reflection (${level}): ${assessment} Lesson: ${lesson}`;
        // The call wrote its lesson to the thread.
        this.#recordedBy(() =>
          this.#publish(
            model.appendStep(this.#state, { type: 'reason', description: `[${waiting.taskIndex}] reflection` }, 'completed', { kind: 'reason', content }, now, { task: waiting.taskIndex }),
          ),
        );
        // A failed action's reflection is followed by the spin checks; a stock-taking came after them.
        return level === 'deep' ? this.#afterCall(waiting.taskIndex, now, true) : this.#schedule(now);
      }
      case 'runHeldCall': {
        if (waiting.for !== 'held_call') throw new Error(`a held call's result arrived while the run waits for ${waiting.for}`);
        const { taskIndex, stepId } = waiting;
        const { observation, agent } = event.value;
        const step = model.findStep(this.#state, stepId);
        if (agent && step) {
          // An approved sub-agent call: the agent's run is the next step.
          this.#publish(model.finishStep(this.#state, stepId, 'completed', { kind: 'reason', content: `approved: agent ${agent.agent.name} runs it` }, now));
          return this.#startAgent(taskIndex, step.description, { thought: step.description, action: 'tool', tool: step.tool ?? '', args: step.args ?? {} }, agent, now);
        }
        const obs = observation ?? { kind: 'error' as const, content: 'the tool gave no result' };
        // The call wrote the step's record to the thread.
        this.#recordedBy(() => this.#publish(model.finishStep(this.#state, stepId, obs.kind === 'error' ? 'failed' : 'completed', obs, now)));
        return obs.kind === 'error' ? this.#reflect(taskIndex, `a failed ${step?.tool ?? 'tool'} call`, now) : this.#afterCall(taskIndex, now);
      }
      case 'summarizeTask': {
        if (waiting.for !== 'summary') throw new Error(`a task summary arrived while the run waits for ${waiting.for}`);
        const { summary } = event.value;
        const task = findTask(this.#tree(), waiting.taskIndex);
        // Skipped or redone while it was summarised: nothing to give up on.
        if (!task || isFinishedTask(task.status) || task.iterations < this.input.treeLimits.maxIterations) return this.#schedule(now);
        if (summary) {
          const step = { type: 'reason' as const, description: `[${waiting.taskIndex}] summary at the iteration limit` };
          this.#publish(model.appendStep(this.#state, step, 'completed', { kind: 'reason', content: summary }, now, { task: waiting.taskIndex }));
        }
        return this.#gaveUp(waiting.taskIndex, summary, now) ?? this.#schedule(now);
      }
      case 'checkSpin':
        if (waiting.for !== 'spin') throw new Error(`a spin check arrived while the run waits for ${waiting.for}`);
        return this.#spinChecked(waiting.taskIndex, event.value, now);
      case 'treeAnswer':
        if (waiting.for !== 'answer') throw new Error(`an answer arrived while the run waits for ${waiting.for}`);
        this.#publish(model.complete(this.#state, event.value.answer, now));
        return this.#end('answered');
    }
  }

  /**
   * Seed 003's ReAct first: the goal is one task, carried out by a ReAct loop that answers directly, acts
   * with tools, or plans subtasks under itself when the goal needs them (planning as an action).
   */
  #reactFirst(now: Date): TreeCommand[] {
    const planId = `${this.#state.runId}#tree${++this.#plans}`;
    this.#publish(model.withTree(this.#state, buildTree({ name: summaryOf(this.input.goal), goal: this.input.goal }), now, { planId, status: 'running' }));
    return this.#schedule(now);
  }

  /** A (new) proposal: shown for review, or executed at once. */
  #proposed(spec: TaskSpec, now: Date): TreeCommand[] {
    const planId = `${this.#state.runId}#tree${++this.#plans}`;
    if (this.input.review) {
      this.#publish(model.withTree(this.#state, buildTree(spec), now, { planId, status: 'waiting_review' }));
      this.#waiting = { for: 'review' };
      return this.#emit({ kind: 'await_person' });
    }
    this.#publish(model.withTree(this.#state, buildTree(spec), now, { planId, status: 'running' }));
    return this.#schedule(now);
  }

  #review(event: ReviewEvent, now: Date): TreeCommand[] {
    switch (event.decision) {
      case 'approve':
        this.#publish(
          event.tree
            ? model.withTree(this.#state, buildTree(event.tree), now, { planId: `${this.#state.runId}#tree${++this.#plans}`, status: 'running' })
            : model.withTree(this.#state, this.#tree(), now, { status: 'running' }),
        );
        return this.#schedule(now);
      case 'revise':
        if (event.tree) return this.#proposed(event.tree, now);
        this.#publish(model.withTree(this.#state, this.#tree(), now, { status: 'planning' }));
        this.#waiting = { for: 'tree' };
        return this.#emit({
          kind: 'call',
          activity: 'proposeTree',
          input: { state: this.#state, feedback: event.feedback ?? '' },
          policy: 'model',
          summary: `task tree, revised: ${event.feedback ?? ''}`.slice(0, 200),
        });
      case 'reject':
        this.#publish(model.cancel({ ...this.#state, lastError: `plan rejected${event.feedback ? `: ${event.feedback}` : ''}` }, now));
        return this.#end('cancelled');
    }
  }

  /** The index of the subtree this run executes: the whole tree, or a child run's part. */
  #scopeIndex(): string {
    return this.input.scope?.index ?? this.#state.tree?.index ?? '1';
  }

  /**
   * The next thing to do in this run's scope: a leaf's next iteration, a group handed to a child
   * run, or — once everything is done with — the final answer (a child run just returns its tree).
   */
  #schedule(now: Date): TreeCommand[] {
    for (;;) {
      const tree = this.#tree();
      const next = nextInScope(tree, this.#scopeIndex());
      if (!next) return this.#finish(now);
      if (next.subtasks.length > 0) return this.#delegate(next, now);
      const { maxIterations } = this.input.treeLimits;
      if (next.iterations >= maxIterations) {
        // Seed 003: a loop stopped at its limit is summarised, so what it did reach is not lost.
        if (this.input.treeLimits.summarizeAtLimit) return this.#summarize(next.index);
        const ended = this.#gaveUp(next.index, null, now);
        if (ended) return ended;
        continue;
      }
      this.#setTask(next.index, (n) => ({ ...n, status: 'processing', iterations: n.iterations + 1 }), now);
      const stepId = `s${this.#state.steps.length + 1}`;
      this.#waiting = { for: 'iteration', taskIndex: next.index, stepId };
      return this.#emit({
        kind: 'call',
        activity: 'reactStep',
        input: { state: this.#state, taskIndex: next.index, stepId, ...(this.input.approval?.length ? { hold: this.input.approval } : {}) },
        policy: 'step',
        summary: `task ${next.index} · iteration ${next.iterations + 1}: ${next.name}`.slice(0, 200),
      });
    }
  }

  #finish(now: Date): TreeCommand[] {
    const root = this.#tree();
    if (!this.input.scope && this.input.entry === 'react' && root.subtasks.length === 0 && root.status === 'completed' && root.result) {
      // ReAct first, answered directly: the loop's result is the answer.
      this.#publish(model.complete(this.#state, root.result, now));
      return this.#end('answered');
    }
    if (!this.input.scope) {
      this.#waiting = { for: 'answer' };
      return this.#emit({ kind: 'call', activity: 'treeAnswer', input: { state: this.#state }, policy: 'model', summary: 'final answer' });
    }
    // A child run answers its parent with its subtree; what its leaves produced is its answer.
    const scope = findTask(this.#tree(), this.input.scope.index);
    const results = scope ? dfs(scope).flatMap((n) => (n.subtasks.length === 0 && n.result !== undefined ? [`${n.index}: ${n.result}`] : [])) : [];
    this.#publish(model.complete(this.#state, results.join('\n') || 'nothing was produced', now));
    return this.#end('answered');
  }

  /** A group runs as a child run `<root run>.t<index>`, so no run's history grows with the tree. */
  #delegate(group: TaskNode, now: Date): TreeCommand[] {
    const rootRunId = this.input.scope?.rootRunId ?? this.#state.runId;
    const childRunId = `${rootRunId}.t${group.index}`;
    this.#setTask(group.index, (n) => ({ ...n, status: 'processing', childRunId }), now);
    this.#publish(model.appendStep(this.#state, { type: 'subplan', description: `[${group.index}] ${group.name}`, goal: group.goal }, 'running', null, now, { task: group.index, childRunId }));
    const stepId = this.#state.currentStepId ?? '';
    const child: PlanExecutionInput = {
      userId: this.input.userId,
      // The person's goal stays the run's goal (prompts lead with it); the task is the scope.
      goal: this.input.goal,
      sessionId: this.input.sessionId ?? null,
      parentRunId: this.#state.runId,
      depth: this.#state.depth + 1,
      limits: this.input.limits,
      engine: 'tree',
      treeLimits: this.input.treeLimits,
      scope: { index: group.index, tree: this.#tree(), rootRunId, threadId: this.#state.threadId, ...(this.#state.codeVersion ? { codeVersion: this.#state.codeVersion } : {}) },
      ...(this.input.sessionThreadId ? { sessionThreadId: this.input.sessionThreadId } : {}),
      ...(this.input.allow ? { allow: this.input.allow } : {}),
      ...(this.input.approval ? { approval: this.input.approval } : {}),
      // Under review, what the group plans mid-run is reviewed too; the run above shows it (src/engine/relay.ts).
      ...(this.input.review ? { review: true } : {}),
      // A group of an agent's run is still that agent's work.
      ...(this.input.agent ? { agent: this.input.agent } : {}),
    };
    this.#waiting = { for: 'child', taskIndex: group.index, stepId, childRunId };
    return this.#emit({ kind: 'start_child', workflowId: childRunId, input: child, summary: `task ${group.index}: ${group.name}`.slice(0, 200) });
  }

  /**
   * A child run (a group's, a sub-agent's) waits for a reply: its question becomes this run's (a step of
   * the task, status `waiting_user`), so whoever follows this run — a person, the run above, a session —
   * sees and answers it here; the reply is passed down. Resumed there (answered directly): the question here is closed.
   */
  #childReport(waiting: Waiting, report: ChildReportEvent['report'], now: Date): TreeCommand[] {
    if (isChildWait(waiting)) this.#relay.report(this.#relayHost(waiting.taskIndex, now), report, waiting.childRunId, now);
    return this.#aside(waiting);
  }

  #relayReply(waiting: Waiting, text: string, now: Date): TreeCommand[] {
    const relayed = this.#relay.answer(this.#relayHost('', now), text, now);
    if (relayed) this.#out.push(relayed);
    return this.#aside(waiting);
  }

  /** The relay's view of this run: a child's question is a step of `taskIndex`'s, appended. */
  #relayHost(taskIndex: string, now: Date): RelayHost {
    return {
      state: () => this.#state,
      publish: (next) => this.#publish(next),
      ask: (question, childRunId) => {
        this.#publish(model.appendStep(this.#state, { type: 'ask_user', description: `[${taskIndex}] asked in run ${childRunId}`, question }, 'running', null, now, { task: taskIndex, childRunId }));
        return this.#state.currentStepId ?? '';
      },
    };
  }

  /** A child ended with its question still shown here (it was cancelled, say): the question is dropped, the run goes on. */
  #dropRelay(now: Date): void {
    if (this.#relay.drop(this.#relayHost('', now), now) && this.#state.status === 'waiting_user') this.#publish(model.withTree(this.#state, this.#tree(), now, { status: 'running' }));
  }

  /** An event taken aside: what changed goes out, and the run goes on waiting for the same thing. */
  #aside(waiting: Waiting): TreeCommand[] {
    this.#waiting = waiting;
    return this.#out.drain();
  }

  /** The child's subtree replaces ours (statuses, results); a failed child aborts what it left undone. */
  #childEnded(waiting: Extract<Waiting, { for: 'child' }>, child: ExecutionState, now: Date): TreeCommand[] {
    this.#dropRelay(now);
    // A group's run opened this run's thread when it had none (a blueprint whose first task is a group).
    if (child.threadId && !this.#state.threadId) this.#state = { ...this.#state, threadId: child.threadId };
    const { taskIndex, stepId, childRunId } = waiting;
    const theirs = child.tree ? findTask(child.tree, taskIndex) : undefined;
    const ok = child.status === 'completed' && theirs !== undefined;
    const why = `task ${taskIndex} (run ${childRunId}) ended ${child.status}${child.lastError ? `: ${child.lastError}` : ''}`;
    if (theirs) this.#setTask(taskIndex, () => ({ ...theirs, childRunId }), now);
    if (!ok) {
      this.#setTask(taskIndex, (n) => updateSubtree(n, (m) => (isFinishedTask(m.status) ? m : { ...m, status: 'aborted', summary: summaryOf(why) })), now);
    }
    const observation = ok ? { kind: 'subplan' as const, content: `task ${taskIndex} done:\n${child.finalAnswer ?? ''}` } : { kind: 'error' as const, content: why };
    this.#publish(model.finishStep(this.#state, stepId, ok ? 'completed' : 'failed', observation, now));
    if (!ok && child.status !== 'cancelled' && this.#abortFailsPlan(taskIndex)) return this.#planFailed(taskIndex, why, now);
    return this.#schedule(now);
  }

  /**
   * Whether the task just aborted fails the plan (seed 003): yes unless the plan marks it optional. Runs
   * recorded before went on instead (`failsOnAbort`, asked only when a task that is not optional aborts).
   */
  #abortFailsPlan(taskIndex: string): boolean {
    const task = findTask(this.#tree(), taskIndex);
    return task?.status === 'aborted' && task.optional !== true && this.input.failsOnAbort?.() === true;
  }

  #summarize(taskIndex: string): TreeCommand[] {
    this.#waiting = { for: 'summary', taskIndex };
    return this.#emit({ kind: 'call', activity: 'summarizeTask', input: { state: this.#state, taskIndex }, policy: 'model', summary: `task ${taskIndex} · summary at the iteration limit` });
  }

  /** A task at its iteration limit aborts, with what it reached (`summary`) as its result; the commands when that fails the plan. */
  #gaveUp(taskIndex: string, summary: string | null, now: Date): TreeCommand[] | null {
    const why = `gave up after ${this.input.treeLimits.maxIterations} iterations`;
    this.#setTask(taskIndex, (n) => ({ ...n, status: 'aborted', summary: summary ? summaryOf(`${why}: ${summary}`) : why, ...(summary ? { result: summary } : {}) }), now);
    return this.#abortFailsPlan(taskIndex) ? this.#planFailed(taskIndex, why, now) : null;
  }

  /** The plan cannot be carried out without an aborted task: the run fails, saying which and why. */
  #planFailed(taskIndex: string, why: string, now: Date): TreeCommand[] {
    this.#publish(model.fail(this.#state, `task ${taskIndex} could not be done (${why}), and the plan needs it`, now));
    return this.#end('failed');
  }

  /**
   * A skip or redo while the run waits on something. When what it waits on belongs to the task
   * (its iteration, its question, its planning, its child run) — or is the final answer and a redo
   * makes work again — that wait is abandoned: the engine answers with the next thing to do, and
   * the workflow cancels what was in flight. Otherwise the wait goes on (no blocking command).
   */
  #steer(event: SteerEvent, waiting: Waiting, now: Date): TreeCommand[] {
    const refusal = this.steerProblem(event.kind, event.index);
    if (refusal) throw new Error(`${event.kind} ${event.index} refused after its validator took it: ${refusal.message}`);
    const reason = event.reason ?? '';
    const concerned = 'taskIndex' in waiting && (waiting.taskIndex === event.index || waiting.taskIndex.startsWith(`${event.index}-`));
    if (event.kind === 'skip') {
      this.#setTask(event.index, (n) => skipSubtree(n, reason), now);
      if (concerned && 'stepId' in waiting) {
        this.#relay.drop(this.#relayHost(event.index, now), now);
        const observation = { kind: 'user_reply' as const, content: `task ${event.index} skipped by the user${reason ? `: ${reason}` : ''}` };
        // An iteration's step is written when its action comes back; a skipped one is written now.
        if (waiting.for === 'iteration') {
          this.#publish(model.appendStep(this.#state, { type: 'reason', description: `[${waiting.taskIndex}] skipped while it ran` }, 'skipped', observation, now, { task: waiting.taskIndex }));
        } else this.#publish(model.finishStep(this.#state, waiting.stepId, 'skipped', observation, now));
        if (this.#state.status === 'waiting_user') this.#publish(model.withTree(this.#state, this.#tree(), now, { status: 'running' }));
        // A call of the task held for approval is dropped with it.
        if (this.#state.status === 'waiting_approval') this.#publish(model.decideApproval(this.#state, waiting.stepId, undefined, now));
        return this.#schedule(now);
      }
    } else {
      this.#setTask(event.index, (n) => requeueSubtree(n, reason), now);
      if (waiting.for === 'answer') return this.#schedule(now);
    }
    return this.#aside(waiting);
  }

  /**
   * The iteration called a sub-agent: a child run `<run>.<step>` (plan or tree, as its profile says)
   * whose goal is the task; the iteration's step waits for its answer.
   */
  #startAgent(taskIndex: string, description: string, reply: ReactStepResult['reply'], { agent, engine, task }: AgentInvocation, now: Date): TreeCommand[] {
    const tool = { type: 'tool' as const, description, tool: reply.tool ?? '', args: reply.args ?? {} };
    const { limits } = this.input;
    if (this.#state.depth >= limits.maxDepth) {
      this.#publish(
        model.appendStep(this.#state, tool, 'failed', { kind: 'error', content: `agent ${agent.name} not started: nesting limit of ${limits.maxDepth} reached` }, now, { task: taskIndex }),
      );
      return this.#afterCall(taskIndex, now);
    }
    const childRunId = `${this.#state.runId}.s${this.#state.steps.length + 1}`;
    this.#publish(model.appendStep(this.#state, tool, 'running', null, now, { task: taskIndex, childRunId }));
    const stepId = this.#state.currentStepId ?? '';
    const child = agentRunInput({ input: this.input, runId: this.#state.runId, depth: this.#state.depth }, { task, agent, engine });
    this.#waiting = { for: 'agent', taskIndex, stepId, childRunId, agent: agent.name };
    return this.#emit({ kind: 'start_child', workflowId: childRunId, input: child, summary: `agent ${agent.name} for task ${taskIndex}: ${task}`.slice(0, 200) });
  }

  /** The agent's answer is the iteration's observation; a failed agent run is a failed action, reflected on like any. */
  #agentEnded(waiting: Extract<Waiting, { for: 'agent' }>, child: ExecutionState, now: Date): TreeCommand[] {
    this.#dropRelay(now);
    const { taskIndex, stepId } = waiting;
    const ok = child.status === 'completed';
    const observation = ok
      ? { kind: 'tool' as const, content: child.finalAnswer ?? '' }
      : { kind: 'error' as const, content: `agent ${waiting.agent} (run ${child.runId}) ended ${child.status}${child.lastError ? `: ${child.lastError}` : ''}` };
    this.#publish(model.finishStep(this.#state, stepId, ok ? 'completed' : 'failed', observation, now));
    return ok ? this.#afterCall(taskIndex, now) : this.#reflect(taskIndex, `a failed call of agent ${waiting.agent}`, now);
  }

  /** The iteration's call waits for a person's approval (issue 28): a running step of the task, shown as `pendingApproval`. */
  #hold(taskIndex: string, description: string, reply: ReactStepResult['reply'], reason: string, now: Date): TreeCommand[] {
    const tool = reply.tool ?? '';
    const args = reply.args ?? {};
    this.#publish(model.appendStep(this.#state, { type: 'tool', description, tool, args }, 'running', null, now, { task: taskIndex }));
    const stepId = this.#state.currentStepId ?? '';
    this.#publish(model.awaitApproval(this.#state, { stepId, taskIndex, tool, args, reason: `TOOL_APPROVAL ${reason}` }, now));
    this.#waiting = { for: 'approval', taskIndex, stepId };
    return this.#emit({ kind: 'await_person' });
  }

  /** A person's decision: approved (or edited, both recorded) the call is made; rejected, the feedback is the step's observation and the task goes on. */
  #decided(waiting: Extract<Waiting, { for: 'approval' }>, event: ApprovalEvent, now: Date): TreeCommand[] {
    const { taskIndex, stepId } = waiting;
    for (const next of model.settleApproval(this.#state, event, now)) this.#publish(next);
    if (event.decision === 'reject') return this.#afterCall(taskIndex, now);
    // The step holds the arguments to call with: the proposed ones, or the person's edit.
    const step = model.findStep(this.#state, stepId);
    const tool = step?.tool ?? '';
    this.#waiting = { for: 'held_call', taskIndex, stepId };
    return this.#emit({
      kind: 'call',
      activity: 'runHeldCall',
      input: { state: this.#state, taskIndex, stepId, tool, args: step?.args ?? {} },
      policy: 'step',
      summary: `task ${taskIndex} · ${tool} (approved)`.slice(0, 200),
    });
  }

  #acted(waiting: Extract<Waiting, { for: 'iteration' }>, { reply, observation, codeVersion, agent, threadId, held }: ReactStepResult, now: Date): TreeCommand[] {
    const { taskIndex } = waiting;
    // A run that never proposed a tree (started from a blueprint) takes its code version from its first iteration.
    if (codeVersion && !this.#state.codeVersion) this.#state = { ...this.#state, codeVersion };
    // …and its memory thread, which that iteration opened.
    if (threadId && !this.#state.threadId) this.#state = { ...this.#state, threadId };
    const description = `[${taskIndex}] ${reply.thought}`.slice(0, 2000);
    /** The iteration as a step of the run, marked with its task. */
    const step = (spec: Omit<StepSpec, 'description'>, outcome: 'completed' | 'failed' | 'running', obs: Omit<Observation, 'at' | 'stepId'> | null) =>
      this.#publish(model.appendStep(this.#state, { ...spec, description }, outcome, obs, now, { task: taskIndex }));
    // An action its starter turned off (a capability switch) is refused; the task goes on (a tool call is refused by its own call).
    const needs = reply.action === 'tool' ? null : offFor(reply.action, this.#state.allow);
    if (needs) {
      step({ type: 'reason' }, 'failed', { kind: 'error', content: refusedAction(needs) });
      return this.#afterCall(taskIndex, now);
    }
    switch (reply.action) {
      case 'tool': {
        if (held) return this.#hold(taskIndex, description, reply, held, now);
        if (agent) return this.#startAgent(taskIndex, description, reply, agent, now);
        const obs = observation ?? { kind: 'error' as const, content: 'the tool gave no result' };
        // The call wrote the step's record (its thought, the call, the result) to the thread.
        this.#recordedBy(() => step({ type: 'tool', tool: reply.tool ?? '', args: reply.args ?? {} }, obs.kind === 'error' ? 'failed' : 'completed', obs));
        if (obs.kind !== 'error') return this.#afterCall(taskIndex, now);
        return this.#reflect(taskIndex, `a failed ${reply.tool ?? 'tool'} call`, now);
      }
      case 'finish': {
        const result = reply.result ?? reply.thought;
        step({ type: 'reason' }, 'completed', { kind: 'reason', content: `task ${taskIndex} finished: ${result}` });
        this.#setTask(taskIndex, (n) => ({ ...n, status: 'completed', result, summary: summaryOf(result) }), now);
        return this.#schedule(now);
      }
      case 'ask_user':
        step({ type: 'ask_user', question: reply.question ?? '' }, 'running', null);
        this.#publish(model.waitForUser(this.#state, this.#state.currentStepId ?? waiting.stepId, now));
        this.#waiting = { for: 'reply', taskIndex, stepId: this.#state.currentStepId ?? waiting.stepId };
        return this.#emit({ kind: 'await_person' });
      case 'plan': {
        const { maxDepth } = this.input.treeLimits;
        if (levelOf(taskIndex) >= maxDepth) {
          const refused = `planning refused: task ${taskIndex} is at level ${levelOf(taskIndex)} and a tree may have at most ${maxDepth} levels; carry the task out with actions`;
          step({ type: 'reason' }, 'failed', { kind: 'error', content: refused });
          return this.#afterCall(taskIndex, now);
        }
        step({ type: 'subplan', goal: reply.goal ?? '' }, 'running', null);
        const stepId = this.#state.currentStepId ?? waiting.stepId;
        this.#waiting = { for: 'subtasks', taskIndex, stepId, goal: reply.goal ?? '' };
        return this.#emit({
          kind: 'call',
          activity: 'proposeTree',
          input: { state: this.#state, plan: { taskIndex, goal: reply.goal ?? '' } },
          policy: 'model',
          summary: `task ${taskIndex} · plan: ${reply.goal ?? ''}`.slice(0, 200),
        });
      }
      case 'blueprint': {
        const { maxDepth } = this.input.treeLimits;
        if (levelOf(taskIndex) >= maxDepth) {
          step({ type: 'reason' }, 'failed', { kind: 'error', content: `blueprint refused: task ${taskIndex} is at level ${levelOf(taskIndex)} and a tree may have at most ${maxDepth} levels` });
          return this.#afterCall(taskIndex, now);
        }
        const name = reply.blueprint ?? '';
        step({ type: 'subplan', goal: `blueprint ${name}` }, 'running', null);
        const stepId = this.#state.currentStepId ?? waiting.stepId;
        this.#waiting = { for: 'subtasks', taskIndex, stepId, goal: `blueprint ${name}` };
        return this.#emit({
          kind: 'call',
          activity: 'expandBlueprint',
          input: { state: this.#state, taskIndex, name },
          policy: 'model',
          summary: `task ${taskIndex} · blueprint ${name}`.slice(0, 200),
        });
      }
    }
  }

  /**
   * Self-reflection (seed 003's REFLECT phase): a failed action (`failed`, named by `what`) is examined
   * and its lesson kept for the next iteration; with periodic reflection the task also takes stock now
   * and then. The level comes from the run's settings; none: on to the spin checks or the next step.
   */
  #reflect(taskIndex: string, what: string | null, now: Date): TreeCommand[] {
    const failed = what !== null;
    const { reflection, maxIterations } = this.input.treeLimits;
    const level = reflectionLevel(reflection ?? FAILURES_ONLY, { failed, iterations: findTask(this.#tree(), taskIndex)?.iterations ?? 0, maxIterations });
    if (level === 'none') return failed ? this.#afterCall(taskIndex, now, true) : this.#schedule(now);
    this.#waiting = { for: 'reflection', taskIndex, level };
    return this.#emit({
      kind: 'call',
      activity: 'reflect',
      // A failed action's reflection is asked as runs recorded before asked it.
      input: { state: this.#state, taskIndex, ...(level === 'deep' ? {} : { level }) },
      policy: 'model',
      summary: `task ${taskIndex} · reflection on ${what ?? 'progress'}`.slice(0, 200),
    });
  }

  /**
   * After an action that did not end the task: the same one again and again makes the engine ask whether
   * it spins (seed §5.2); otherwise the task may take stock (`reflected`: it just reflected on a failure).
   */
  #afterCall(taskIndex: string, now: Date, reflected = false): TreeCommand[] {
    const spin = this.input.treeLimits.spin ?? DEFAULT_SPIN_LIMITS;
    const repeats = repeatedCalls(this.#state, taskIndex);
    if (shouldCheckSpin(repeats, spin)) return this.#checkSpin(taskIndex, `${repeats} identical calls`);
    // Seed 003's same-action-type spin: one tool again and again with other arguments; the model judges whether it is a logic spin.
    const sameType = repeatedActionType(this.#state, taskIndex);
    if (shouldCheckTypeSpin(sameType, spin) && this.input.spinsByType?.()) return this.#checkSpin(taskIndex, `${sameType} calls of the same kind`);
    return reflected ? this.#schedule(now) : this.#reflect(taskIndex, null, now);
  }

  #checkSpin(taskIndex: string, why: string): TreeCommand[] {
    this.#waiting = { for: 'spin', taskIndex };
    return this.#emit({ kind: 'call', activity: 'checkSpin', input: { state: this.#state, taskIndex }, policy: 'model', summary: `task ${taskIndex} · spin check after ${why}` });
  }

  /** A confirmed spin is a warning the next iteration sees; a second one aborts the task with the reason. */
  #spinChecked(taskIndex: string, { spinning, reason }: SpinCheckReply, now: Date): TreeCommand[] {
    if (!spinning) return this.#schedule(now);
    const spins = (findTask(this.#tree(), taskIndex)?.spins ?? 0) + 1;
    const record = (outcome: 'completed' | 'failed', content: string) =>
      this.#publish(model.appendStep(this.#state, { type: 'reason', description: `[${taskIndex}] spin check` }, outcome, { kind: 'reason', content }, now, { task: taskIndex }));
    if (spins >= 2) {
      const why = `stopped: going round in circles (${reason || 'the same call again and again'})`;
      record('failed', `task ${taskIndex} ${why}`);
      this.#setTask(taskIndex, (n) => ({ ...n, spins, status: 'aborted', summary: summaryOf(why) }), now);
      if (this.#abortFailsPlan(taskIndex)) return this.#planFailed(taskIndex, why, now);
    } else {
      record('completed', `warning: this task repeats the same call without progress (${reason || 'no reason given'}); change approach, or finish with what you have`);
      this.#setTask(taskIndex, (n) => ({ ...n, spins }), now);
    }
    return this.#schedule(now);
  }

  /** Planning as an action: the subtasks go under the task that planned, and run before it ends. */
  #planned(waiting: Extract<Waiting, { for: 'subtasks' }>, subtasks: TaskSpec[], now: Date): TreeCommand[] {
    const tree = this.#tree();
    // Under review, a subtree made mid-run is shown before it runs, like the first plan.
    if (this.input.review && this.input.reviewsSubtrees?.()) {
      const planId = `${this.#state.runId}#tree${++this.#plans}`;
      this.#publish(model.withTree(this.#state, attachSubtasks(tree, waiting.taskIndex, subtasks), now, { planId, status: 'waiting_review' }));
      this.#waiting = { for: 'subtree_review', taskIndex: waiting.taskIndex, stepId: waiting.stepId, goal: waiting.goal ?? '' };
      return this.#emit({ kind: 'await_person' });
    }
    const names = subtasks.map((s, i) => `${waiting.taskIndex}-${i + 1} ${s.name}`).join('; ');
    this.#publish(model.finishStep(this.#state, waiting.stepId, 'completed', { kind: 'subplan', content: `task ${waiting.taskIndex} planned ${subtasks.length} subtasks: ${names}` }, now));
    this.#publish(model.withTree(this.#state, attachSubtasks(tree, waiting.taskIndex, subtasks), now));
    return this.#schedule(now);
  }

  /**
   * A person's decision on a subtree a task made: approved (as made, or edited) it runs; revised, the task
   * plans again with the feedback (or the edited subtree is shown again); rejected, the subtree is dropped
   * and the task goes on with actions, the rejection among its observations.
   */
  #subtreeReview(waiting: Extract<Waiting, { for: 'subtree_review' }>, event: ReviewEvent, now: Date): TreeCommand[] {
    const { taskIndex, stepId, goal } = waiting;
    switch (event.decision) {
      case 'approve': {
        const subtasks = event.tree ? (event.tree.subtasks ?? []) : (findTask(this.#tree(), taskIndex)?.subtasks ?? []);
        const names = subtasks.map((s, i) => `${taskIndex}-${i + 1} ${s.name}`).join('; ');
        this.#publish(
          model.finishStep(
            this.#state,
            stepId,
            'completed',
            { kind: 'subplan', content: `task ${taskIndex} planned ${subtasks.length} subtasks (approved${event.tree ? ', edited' : ''}): ${names}` },
            now,
          ),
        );
        const tree = event.tree ? attachSubtasks(this.#tree(), taskIndex, event.tree.subtasks ?? []) : this.#tree();
        this.#publish(model.withTree(this.#state, tree, now, { status: 'running' }));
        return this.#schedule(now);
      }
      case 'revise':
        if (event.tree) return this.#planned({ for: 'subtasks', taskIndex, stepId, goal }, event.tree.subtasks ?? [], now);
        this.#publish(model.withTree(this.#state, this.#tree(), now, { status: 'running' }));
        this.#waiting = { for: 'subtasks', taskIndex, stepId, goal };
        return this.#emit({
          kind: 'call',
          activity: 'proposeTree',
          input: { state: this.#state, plan: { taskIndex, goal }, feedback: event.feedback ?? '' },
          policy: 'model',
          summary: `task ${taskIndex} · plan, revised: ${event.feedback ?? ''}`.slice(0, 200),
        });
      case 'reject': {
        const why = `the person rejected the subtasks planned for task ${taskIndex}${event.feedback ? `: ${event.feedback}` : ''}; carry the task out with actions`;
        this.#publish(model.withTree(this.#state, attachSubtasks(this.#tree(), taskIndex, []), now, { status: 'running' }));
        this.#publish(model.finishStep(this.#state, stepId, 'failed', { kind: 'error', content: why }, now));
        return this.#afterCall(taskIndex, now);
      }
    }
  }

  /** On failure or cancellation: the leaf under way ends too. */
  #closeRunningTask(status: 'aborted' | 'skipped', why: string, now: Date): void {
    const tree = this.#state.tree;
    const running = tree ? nextInScope(tree, this.#scopeIndex()) : undefined;
    if (running?.status === 'processing') this.#setTask(running.index, (n) => updateSubtree(n, (m) => (isFinishedTask(m.status) ? m : { ...m, status, summary: summaryOf(why) })), now);
  }

  #setTask(index: string, f: (node: TaskNode) => TaskNode, now: Date): void {
    const tree = this.#state.tree;
    if (!tree || !findTask(tree, index)) throw new Error(`no task ${index}`);
    this.#publish(model.withTree(this.#state, updateTask(tree, index, f), now));
  }

  #tree(): TaskNode {
    const tree = this.#state.tree;
    if (!tree) throw new Error('the run has no task tree yet');
    return tree;
  }

  /**
   * Every way a run ends closes its memory first — except a group's child run: it writes to the
   * root run's thread, which the root closes when the whole tree ends.
   */
  #end(ending: RunEnding): TreeCommand[] {
    return this.#out.end(this.#state, this.input.scope ? null : ending);
  }

  #emit(last: TreeCommand): TreeCommand[] {
    return this.#out.emit(last.kind === 'call' ? this.#withMemory(last) : last);
  }

  /**
   * A call carries what the run's memory thread lacks: the thread itself when the state names none yet
   * (a run started from a blueprint; a group's run writes to its root's), and what happened since the
   * last call that no call wrote (a reply, a task's result, a skip, a child's answer) with the plan when
   * it is new — so the thread holds the run's whole timeline, as seed 003's does.
   */
  #withMemory(call: Extract<TreeCommand, { kind: 'call' }>): TreeCommand {
    const from = this.#recorded;
    const { observations, planId, status } = this.#state;
    // The plan of the whole run, once it executes (a proposal under review is not yet the plan).
    const plan = !this.input.scope && planId !== null && planId !== this.#recordedPlan && status !== 'waiting_review' && status !== 'planning';
    this.#recorded = observations.length;
    if (plan) this.#recordedPlan = planId;
    const openThread = this.#state.threadId ? null : (this.input.scope?.rootRunId ?? this.#state.runId);
    if (from === observations.length && !plan && !openThread) return call;
    const memory = { ...(openThread ? { openThread } : {}), ...(from < observations.length || plan ? { unrecorded: { from, plan } } : {}) };
    // Every tree call takes these (TreeCallMemory); TypeScript cannot follow that through the call's activity union.
    return { ...call, input: { ...call.input, ...memory } } as typeof call;
  }

  /** `write` adds observations the call just made wrote to the thread itself: they count as recorded (when nothing before them waits). */
  #recordedBy(write: () => void): void {
    const caughtUp = this.#recorded === this.#state.observations.length;
    write();
    if (caughtUp) this.#recorded = this.#state.observations.length;
  }

  #publish(next: ExecutionState): void {
    const previous = this.#state.status;
    this.#state = next;
    this.input.observe?.(next);
    // A group's child run tells the run above when it waits and resumes (its end comes back as the child's result).
    // So does a sub-agent's run whose parent shows its questions (`questionsTo`).
    const scoped = this.input.scope !== undefined;
    const questionsTo = this.input.questionsTo ?? null;
    // A session's run reports its approval waits to the session, which answers them from the person's messages.
    const toSession = !scoped && this.input.reportApprovals === true && !!this.input.reportTo;
    // A run above shows its plan reviews and held calls too (a session its runs' held calls, not their reviews).
    const reviewsTo = scoped || (!this.input.reportTo && questionsTo !== null);
    const reviews = () => reviewsTo && (this.input.reportsWaits?.() ?? false);
    const approvals = () => toSession || reviews();
    this.#out.changed(next, previous, scoped ? (this.input.parentRunId ?? null) : (this.input.reportTo ?? questionsTo), !scoped && questionsTo === null, approvals, reviews);
  }
}
