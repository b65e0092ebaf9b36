/**
 * Seed 003's recursive dual engine as an engine over the core (`./core`): the model proposes a
 * task tree; a person may review it (approve, edit, revise with feedback, reject); leaves run in
 * DFS order, each as a ReAct loop of one model-chosen action per iteration (a tool, finish,
 * ask the person, or plan: the task splits into subtasks under its own index, up to the depth
 * limit). Every iteration is also a step of the run's ExecutionState, so every client that
 * shows steps and observations shows a tree run too; the tree and its progress rendering are
 * the state's `tree` and `progress`.
 */
import type { ReactStepResult, TreeActivities, TreeLimits } from '../activities/tree-activities';
import * as model from '../planning/execution-state';
import type { ExecutionState, Observation } from '../planning/execution-state';
import type { StepSpec } from '../planning/schemas';
import {
  attachSubtasks,
  buildTree,
  findTask,
  levelOf,
  nextLeaf,
  treeProblems,
  updateTask,
  type TaskNode,
  type TaskSpec,
} from '../planning/task-tree';
import type { PlanExecutionInput, ReviewDecision } from '../workflows/definitions';
import type { Command, Engine, EngineEvent } from './core';
import type { ReplyEvent } from './plan-engine';
import { parentReport } from './report';

export interface ReviewEvent extends ReviewDecision {
  kind: 'review';
}
export type TreePersonEvent = ReplyEvent | ReviewEvent;
export type TreeCommand = Command<TreeActivities>;
export type TreeEvent = EngineEvent<TreeActivities, TreePersonEvent, ExecutionState>;

export interface TreeEngineInput extends PlanExecutionInput {
  runId: string;
  reportTo: string | null;
  review: boolean;
  limits: PlanExecutionInput['limits'];
  treeLimits: TreeLimits;
}

type Waiting =
  | { for: 'tree' }
  | { for: 'review' }
  | { for: 'iteration'; taskIndex: string; stepId: string }
  | { for: 'reply'; taskIndex: string; stepId: string }
  | { for: 'subtasks'; taskIndex: string; stepId: string }
  | { for: 'answer' }
  | { for: 'nothing' };

/** One line of a result for the progress tree. */
const summaryOf = (text: string) => {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > 120 ? `${line.slice(0, 119)}…` : line;
};

export class TreeEngine implements Engine<ExecutionState, TreeActivities, TreePersonEvent, ExecutionState> {
  #state: ExecutionState;
  #waiting: Waiting = { for: 'nothing' };
  #plans = 0;
  #out: TreeCommand[] = [];

  constructor(
    private readonly input: TreeEngineInput,
    now: Date,
  ) {
    const initial = model.initialState(
      { runId: input.runId, userId: input.userId, goal: input.goal, sessionId: input.sessionId, parentRunId: input.parentRunId, depth: input.depth, model: '', sessionThreadId: input.sessionThreadId ?? null },
      now,
    );
    this.#state = { ...initial, engine: 'tree', tree: null, progress: '' };
  }

  get state(): ExecutionState {
    return this.#state;
  }

  canTakeReply(): boolean {
    return this.#state.status === 'waiting_user' && this.#waiting.for === 'reply';
  }

  /** Why a review decision cannot be taken now, or null when it can (the update's validator). */
  reviewProblem(decision: ReviewDecision): string | null {
    if (this.#state.status !== 'waiting_review' || this.#waiting.for !== 'review') return `run is ${this.#state.status}, not waiting for a review`;
    if (decision.planId !== this.#state.planId) return `plan ${decision.planId} is not the plan under review (${this.#state.planId ?? 'none'})`;
    if (decision.tree) {
      const problems = treeProblems(decision.tree, this.input.treeLimits);
      if (problems.length) return `the edited tree breaks the limits: ${problems.join('; ')}`;
    }
    if (decision.decision === 'revise' && !decision.tree && !decision.feedback) return 'a revision needs feedback or an edited tree';
    return null;
  }

  start(_now: Date): TreeCommand[] {
    this.#waiting = { for: 'tree' };
    return [{ kind: 'call', activity: 'proposeTree', input: { state: this.#state }, policy: 'model', summary: `task tree: ${this.input.goal}`.slice(0, 200) }];
  }

  handle(event: TreeEvent, now: Date): TreeCommand[] {
    this.#out = [];
    const waiting = this.#waiting;
    this.#waiting = { for: 'nothing' };
    switch (event.kind) {
      case 'failed':
        this.#closeRunningTask('aborted', event.error, now);
        this.#publish(model.fail(this.#state, event.error, now));
        return this.#end();
      case 'cancelled':
        this.#closeRunningTask('skipped', 'the run was cancelled', now);
        this.#publish(model.cancel(this.#state, now));
        return this.#end();
      case 'reply':
        if (waiting.for !== 'reply') throw new Error(`a reply arrived while the run waits for ${waiting.for}`);
        this.#publish(model.recordReply(this.#state, waiting.stepId, event.text, now));
        return this.#schedule(now);
      case 'review':
        if (waiting.for !== 'review') throw new Error(`a review arrived while the run waits for ${waiting.for}`);
        return this.#review(event, now);
      case 'child_ended':
        throw new Error('tree runs start no child runs yet');
      case 'result':
        break;
    }
    switch (event.activity) {
      case 'proposeTree': {
        const { tree, model: label, threadId } = event.value;
        if (waiting.for === 'subtasks') return this.#planned(waiting, tree.subtasks, now);
        if (waiting.for !== 'tree') throw new Error(`a task tree arrived while the run waits for ${waiting.for}`);
        this.#state = { ...this.#state, model: label, threadId: threadId ?? this.#state.threadId };
        return this.#proposed(tree, now);
      }
      case 'reactStep':
        if (waiting.for !== 'iteration') throw new Error(`an action arrived while the run waits for ${waiting.for}`);
        return this.#acted(waiting, event.value, now);
      case 'treeAnswer':
        if (waiting.for !== 'answer') throw new Error(`an answer arrived while the run waits for ${waiting.for}`);
        this.#publish(model.complete(this.#state, event.value.answer, now));
        return this.#end();
    }
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
        return this.#emit({ kind: 'call', activity: 'proposeTree', input: { state: this.#state, feedback: event.feedback ?? '' }, policy: 'model', summary: `task tree, revised: ${event.feedback ?? ''}`.slice(0, 200) });
      case 'reject':
        this.#publish(model.cancel({ ...this.#state, lastError: `plan rejected${event.feedback ? `: ${event.feedback}` : ''}` }, now));
        return this.#end();
    }
  }

  /** The next leaf's next iteration, or the final answer when every task is done with. */
  #schedule(now: Date): TreeCommand[] {
    for (;;) {
      const tree = this.#state.tree;
      const leaf = tree ? nextLeaf(tree) : undefined;
      if (!tree || !leaf) {
        this.#waiting = { for: 'answer' };
        return this.#emit({ kind: 'call', activity: 'treeAnswer', input: { state: this.#state }, policy: 'model', summary: 'final answer' });
      }
      const { maxIterations } = this.input.treeLimits;
      if (leaf.iterations >= maxIterations) {
        this.#setTask(leaf.index, (n) => ({ ...n, status: 'aborted', summary: `gave up after ${maxIterations} iterations` }), now);
        continue;
      }
      this.#setTask(leaf.index, (n) => ({ ...n, status: 'processing', iterations: n.iterations + 1 }), now);
      const stepId = `s${this.#state.steps.length + 1}`;
      this.#waiting = { for: 'iteration', taskIndex: leaf.index, stepId };
      return this.#emit({
        kind: 'call',
        activity: 'reactStep',
        input: { state: this.#state, taskIndex: leaf.index, stepId },
        policy: 'step',
        summary: `task ${leaf.index} · iteration ${leaf.iterations + 1}: ${leaf.name}`.slice(0, 200),
      });
    }
  }

  #acted(waiting: Extract<Waiting, { for: 'iteration' }>, { reply, observation }: ReactStepResult, now: Date): TreeCommand[] {
    const { taskIndex } = waiting;
    const description = `[${taskIndex}] ${reply.thought}`.slice(0, 2000);
    /** The iteration as a step of the run, marked with its task. */
    const step = (spec: Omit<StepSpec, 'description'>, outcome: 'completed' | 'failed' | 'running', obs: Omit<Observation, 'at' | 'stepId'> | null) =>
      this.#publish(model.appendStep(this.#state, { ...spec, description }, outcome, obs, now, { task: taskIndex }));
    switch (reply.action) {
      case 'tool': {
        const obs = observation ?? { kind: 'error' as const, content: 'the tool gave no result' };
        step({ type: 'tool', tool: reply.tool ?? '', args: reply.args ?? {} }, obs.kind === 'error' ? 'failed' : 'completed', obs);
        return this.#schedule(now);
      }
      case 'finish': {
        const result = reply.result ?? '';
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
          return this.#schedule(now);
        }
        step({ type: 'subplan', goal: reply.goal ?? '' }, 'running', null);
        const stepId = this.#state.currentStepId ?? waiting.stepId;
        this.#waiting = { for: 'subtasks', taskIndex, stepId };
        return this.#emit({
          kind: 'call',
          activity: 'proposeTree',
          input: { state: this.#state, plan: { taskIndex, goal: reply.goal ?? '' } },
          policy: 'model',
          summary: `task ${taskIndex} · plan: ${reply.goal ?? ''}`.slice(0, 200),
        });
      }
      case 'blueprint':
        step({ type: 'reason' }, 'failed', { kind: 'error', content: 'no blueprints are available to this run; plan or act instead' });
        return this.#schedule(now);
    }
  }

  /** Planning as an action: the subtasks go under the task that planned, and run before it ends. */
  #planned(waiting: Extract<Waiting, { for: 'subtasks' }>, subtasks: TaskSpec[], now: Date): TreeCommand[] {
    const tree = this.#tree();
    const names = subtasks.map((s, i) => `${waiting.taskIndex}-${i + 1} ${s.name}`).join('; ');
    this.#publish(model.finishStep(this.#state, waiting.stepId, 'completed', { kind: 'subplan', content: `task ${waiting.taskIndex} planned ${subtasks.length} subtasks: ${names}` }, now));
    this.#publish(model.withTree(this.#state, attachSubtasks(tree, waiting.taskIndex, subtasks), now));
    return this.#schedule(now);
  }

  /** On failure or cancellation: the leaf under way ends too. */
  #closeRunningTask(status: 'aborted' | 'skipped', why: string, now: Date): void {
    const tree = this.#state.tree;
    const running = tree ? nextLeaf(tree) : undefined;
    if (running?.status === 'processing') this.#setTask(running.index, (n) => ({ ...n, status, summary: summaryOf(why) }), now);
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

  #end(): TreeCommand[] {
    return this.#emit({ kind: 'end' });
  }

  #emit(last: TreeCommand): TreeCommand[] {
    const out = [...this.#out, last];
    this.#out = [];
    return out;
  }

  #publish(next: ExecutionState): void {
    const previous = this.#state.status;
    this.#state = next;
    if (next.status === previous) return;
    this.#out.push({ kind: 'status', status: next.status });
    const report = parentReport<TreeActivities>(next, previous, this.input.reportTo);
    if (report) this.#out.push(report);
  }
}
