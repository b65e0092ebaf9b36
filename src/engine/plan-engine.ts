/**
 * Seed 000's planner as an engine over the core (`./core`): plan, run each step, replan after
 * each, wait for a person on ask_user, run sub-plans as child runs, answer. State changes go
 * through the pure transitions of `planning/execution-state`; every change of status becomes a
 * `status` command and, for a run of a session, a `notify_parent` report.
 *
 * The order of commands is part of the contract with recorded histories: the workflow carries
 * them out in order, so a change here that reorders them breaks replay (test/workflows/replay).
 */
import { agentRunInput, newRunOf } from './run-inputs';
import { agentNameOf, type AgentInvocation } from '../agents/names';
import * as model from '../planning/execution-state';
import type { ExecutionState, Observation, PlanStep, RunEnding } from '../planning/execution-state';
import { stepSummary } from '../planning/progress';
import type { ReplanDecisionReply } from '../calls/replan-decision';
import type { Command, Engine, EngineEvent } from './core';
import { Outbox } from './outbox';
import { QuestionRelay, type ChildReportEvent, type RelayHost } from './relay';
import { offFor, refusedAction } from '../planning/capabilities';
import { approvalNeeded, approvalProblem, type ApprovalDecision } from '../planning/approval';
import type { CloseOnAnswer, PlanAnswer, PlanCalls, PlanExecutionInput } from './contract';

/** A person's answer to the question the run waits on. */
export interface ReplyEvent {
  kind: 'reply';
  text: string;
}

/** A person's decision on the tool call waiting for approval. */
export interface ApprovalEvent extends ApprovalDecision {
  kind: 'approval';
}

/** What reaches a plan run from outside: a person's reply or approval decision, or a child run's report that it waits for one. */
export type PlanPersonEvent = ReplyEvent | ApprovalEvent | ChildReportEvent;
export type PlanCommand = Command<PlanCalls>;
export type PlanEvent = EngineEvent<PlanCalls, PlanPersonEvent, ExecutionState>;

export interface PlanEngineInput extends PlanExecutionInput {
  runId: string;
  /** The workflow a run reports its waits and ends to (its session), or null. */
  reportTo: string | null;
  /** The parent run that shows this run's questions as its own (`relayQuestions`): it gets the waits, not the end. */
  questionsTo?: string | null;
  /** Whether this run tells the run above of its held calls and of a child's review or held call it shows (asked when such a wait begins or ends). @default none */
  reportsWaits?: () => boolean;
  /** Whether the calls that may answer the run are asked to close it too (`CloseOnAnswer`): runs recorded before it were not. */
  closeOnAnswer?: boolean;
  /** Told of every version of the state (the history replayer's; absent in a worker). */
  observe?: (state: ExecutionState) => void;
}

/** What the engine is waiting for, so an event it did not ask for is a bug, not a silent turn. */
type Waiting =
  | { for: 'plan' }
  | { for: 'step'; stepId: string }
  | { for: 'answer'; stepId: string | null }
  | { for: 'reply'; stepId: string }
  | { for: 'approval'; stepId: string }
  | { for: 'child'; stepId: string }
  | { for: 'agent'; stepId: string }
  | { for: 'agent_run'; stepId: string; agent: string }
  | { for: 'decision' }
  | { for: 'nothing' };

/** A wait on a child run (a sub-plan, a sub-agent), whose questions this run shows as its own. */
const isChildWait = (w: Waiting): w is Extract<Waiting, { for: 'child' | 'agent_run' }> => w.for === 'child' || w.for === 'agent_run';

export class PlanEngine implements Engine<ExecutionState, PlanCalls, PlanPersonEvent, ExecutionState> {
  #state: ExecutionState;
  #waiting: Waiting = { for: 'nothing' };
  /** Steps started so far, checked against `limits.maxSteps`. */
  #executed = 0;
  readonly #out = new Outbox<PlanCalls>();
  /** A question of the child run in flight, shown as this run's own until someone answers it. */
  readonly #relay = new QuestionRelay();

  constructor(
    private readonly input: PlanEngineInput,
    now: Date,
  ) {
    this.#state = model.initialState(newRunOf(input), now);
    input.observe?.(this.#state);
  }

  get state(): ExecutionState {
    return this.#state;
  }

  /** True while a reply would be taken: the run waits on a person (or shows a child's question) and has none yet. */
  canTakeReply(): boolean {
    return this.#state.status === 'waiting_user' && (this.#waiting.for === 'reply' || (isChildWait(this.#waiting) && this.#relay.open));
  }

  /** Why an approval decision cannot be taken now, or null when it can (the update's validator). */
  approvalProblem(decision: ApprovalDecision): string | null {
    return this.#waiting.for === 'approval' ? approvalProblem(this.#state, decision) : `run is ${this.#state.status}, not waiting for an approval`;
  }

  start(now: Date): PlanCommand[] {
    if (this.input.fork) return this.#forked(this.input.fork.state, now);
    this.#waiting = { for: 'plan' };
    // A plan that begins with its respond step comes with its answer, and then closes the run too.
    const close = this.input.limits.maxSteps >= 1 ? this.#closeOnAnswer() : undefined;
    return [{ kind: 'call', activity: 'planRun', input: { state: this.#state, ...(close ? { close } : {}) }, policy: close ? 'answer' : 'model', summary: `plan: ${this.input.goal}`.slice(0, 200) }];
  }

  handle(event: PlanEvent, now: Date): PlanCommand[] {
    this.#out.clear();
    const waiting = this.#waiting;
    this.#waiting = { for: 'nothing' };
    switch (event.kind) {
      case 'failed':
        this.#publish(model.fail(this.#state, event.error, now));
        return this.#end('failed');
      case 'cancelled':
        this.#publish(model.cancel(this.#state, now));
        return this.#end('cancelled');
      case 'child_report':
        if (isChildWait(waiting)) this.#relay.report(this.#relayHost(now), event.report, this.#childOf(waiting), now);
        return this.#aside(waiting);
      case 'reply': {
        if (isChildWait(waiting) && this.#relay.open) {
          const relayed = this.#relay.answer(this.#relayHost(now), event.text, now);
          if (relayed) this.#out.push(relayed);
          return this.#aside(waiting);
        }
        if (waiting.for !== 'reply') throw new Error(`a reply arrived while the run waits for ${waiting.for}`);
        this.#publish(model.recordReply(this.#state, waiting.stepId, event.text, now));
        return this.#replan(`replan after the reply to ${waiting.stepId}`);
      }
      case 'approval':
        if (waiting.for !== 'approval' || waiting.stepId !== event.stepId) throw new Error(`an approval arrived while the run waits for ${waiting.for}`);
        return this.#decided(event, now);
      case 'child_ended': {
        // A question it asked through this run and nobody answered (it was cancelled, say) is dropped.
        if (this.#relay.drop(this.#relayHost(now), now) && this.#state.status === 'waiting_user') this.#publish(model.resume(this.#state, now));
        if (waiting.for === 'agent_run') return this.#agentEnded(waiting, event.value, now);
        if (waiting.for !== 'child') throw new Error(`a child ended while the run waits for ${waiting.for}`);
        const child = event.value;
        const observation =
          child.status === 'completed'
            ? { kind: 'subplan' as const, content: child.finalAnswer ?? '' }
            : { kind: 'error' as const, content: `sub-plan ${child.runId} ended ${child.status}${child.lastError ? `: ${child.lastError}` : ''}` };
        this.#publish(model.finishStep(this.#state, waiting.stepId, observation.kind === 'error' ? 'failed' : 'completed', observation, now));
        return this.#replan(`replan after sub-plan ${waiting.stepId}`);
      }
      case 'delivered':
      case 'done':
        throw new Error(`a run gives no command that answers ${event.kind}`);
      case 'result':
        break;
    }
    switch (event.activity) {
      case 'planRun': {
        const planned = event.value;
        // Histories recorded before runs had memory threads return no threadId.
        this.#state = {
          ...this.#state,
          model: planned.model,
          // What the plan is made with; its steps check it (histories recorded before it have none).
          ...(planned.codeVersion ? { codeVersion: planned.codeVersion } : {}),
          threadId: planned.threadId ?? null,
          observations: [...this.#state.observations, ...(planned.snapshots ?? [])],
        };
        this.#publish(model.applyPlan(this.#state, planned.steps, now));
        // Histories recorded before plans could come with their answer have none: the respond step asks for it.
        return this.#advance(now, planned.answer);
      }
      case 'executeStep': {
        if (waiting.for !== 'step') throw new Error(`a step result arrived while the run waits for ${waiting.for}`);
        const result = event.value;
        this.#publish(model.finishStep(this.#state, waiting.stepId, result.outcome, result.observation, now));
        return this.#apply(result.decision, now);
      }
      case 'replan':
        return this.#apply(event.value, now);
      case 'resolveAgent': {
        if (waiting.for !== 'agent') throw new Error(`an agent arrived while the run waits for ${waiting.for}`);
        const resolved = event.value;
        if (!resolved.ok) {
          this.#publish(model.finishStep(this.#state, waiting.stepId, 'failed', { kind: 'error', content: resolved.error }, now));
          return this.#replan(`replan after agent step ${waiting.stepId}`);
        }
        return this.#startAgent(waiting.stepId, resolved.invocation, now);
      }
      case 'respond': {
        if (waiting.for !== 'answer') throw new Error(`an answer arrived while the run waits for ${waiting.for}`);
        return this.#answered(waiting.stepId, event.value.answer, now, event.value.closed === true);
      }
      case 'closeRun':
        throw new Error('closeRun comes from a close command, whose result the engine never waits for');
    }
  }

  /**
   * A fork goes on from its first state: a question waiting there is asked again, the next pending step
   * runs — or, with nothing left to run, the model decides what to do with what was observed.
   */
  #forked(state: ExecutionState, now: Date): PlanCommand[] {
    this.#out.clear();
    this.#executed = state.steps.filter((s) => s.status !== 'pending' && s.status !== 'replaced').length;
    this.#publish({ ...state, runId: this.input.runId, updatedAt: now.toISOString() });
    if (state.status === 'waiting_user' && state.currentStepId) {
      this.#waiting = { for: 'reply', stepId: state.currentStepId };
      return this.#emit({ kind: 'await_person' });
    }
    return model.nextPendingStep(this.#state) ? this.#advance(now) : this.#replan(`replan of a fork of ${state.forkedFrom?.runId ?? 'a run'}`);
  }

  /** The next step, or the final answer when the plan ran out, or the end at the step limit; `given`: the next respond step's answer, if it came with the plan. */
  #advance(now: Date, given?: PlanAnswer): PlanCommand[] {
    const step = model.nextPendingStep(this.#state);
    // The plan ran out without a respond step: write the answer from what was observed.
    if (!step) return this.#writeAnswer();
    if (++this.#executed > this.input.limits.maxSteps) {
      this.#publish(model.fail(this.#state, `step limit reached: a run may execute at most ${this.input.limits.maxSteps} steps`, now));
      return this.#end('step_limit');
    }
    return this.#run(step, now, given?.stepId === step.id ? given : undefined);
  }

  #run(step: PlanStep, now: Date, given?: PlanAnswer): PlanCommand[] {
    const off = offFor(step.type, this.#state.allow);
    if (off) {
      // A step its starter turned off (a capability switch) is a failed step the replan sees.
      this.#publish(model.startStep(this.#state, step.id, now));
      this.#publish(model.finishStep(this.#state, step.id, 'failed', { kind: 'error', content: refusedAction(off) }, now));
      return this.#replan(`replan after refused step ${step.id}`);
    }
    switch (step.type) {
      case 'respond':
        this.#publish(model.startStep(this.#state, step.id, now));
        if (given !== undefined) return this.#answered(step.id, given.text, now, given.closed === true);
        this.#waiting = { for: 'answer', stepId: step.id };
        return this.#emit(this.#respond(step.id, stepSummary(step)));
      case 'tool':
      case 'reason': {
        // A call its policy holds waits for a person first (built-in, MCP and sub-agent tools alike).
        const held = step.type === 'tool' ? approvalNeeded(step.tool ?? '', this.input.approval) : null;
        if (held !== null) {
          this.#publish(model.startStep(this.#state, step.id, now));
          this.#publish(model.awaitApproval(this.#state, { stepId: step.id, tool: step.tool ?? '', args: step.args ?? {}, reason: `TOOL_APPROVAL ${held}` }, now));
          this.#waiting = { for: 'approval', stepId: step.id };
          return this.#emit({ kind: 'await_person' });
        }
        return this.#execute(step, now);
      }
      case 'ask_user':
        this.#publish(model.startStep(this.#state, step.id, now));
        this.#publish(model.waitForUser(this.#state, step.id, now));
        this.#waiting = { for: 'reply', stepId: step.id };
        return this.#emit({ kind: 'await_person' });
      case 'subplan':
        return this.#subplan(step, now);
    }
  }

  /** A tool or reason step as an activity, or a sub-agent as a child run. */
  #execute(step: PlanStep, now: Date): PlanCommand[] {
    const agent = step.type === 'tool' ? agentNameOf(step.tool) : null;
    if (agent !== null) {
      // A sub-agent is a child run: an activity looks its profile up (workflow code holds none), then it starts.
      this.#publish(model.startStep(this.#state, step.id, now));
      this.#waiting = { for: 'agent', stepId: step.id };
      return this.#emit({ kind: 'call', activity: 'resolveAgent', input: { state: this.#state, stepId: step.id }, policy: 'model', summary: `agent ${agent}: ${stepSummary(step)}`.slice(0, 200) });
    }
    // The step and the replan after it are one activity: ~6 history events per step.
    this.#publish(model.startStep(this.#state, step.id, now));
    this.#waiting = { for: 'step', stepId: step.id };
    return this.#emit({ kind: 'call', activity: 'executeStep', input: { state: this.#state, stepId: step.id }, policy: 'step', summary: `${stepSummary(step)} → replan` });
  }

  /**
   * A person's decision on the call that waits: approved (or with edited arguments, recorded beside the
   * proposed ones) it runs; rejected it is done with, the feedback an observation (`rejected`) the replan sees.
   */
  #decided(event: ApprovalEvent, now: Date): PlanCommand[] {
    const tool = this.#state.pendingApproval?.tool ?? '';
    for (const next of model.settleApproval(this.#state, event, now)) this.#publish(next);
    const step = model.findStep(this.#state, event.stepId);
    if (!step) throw new Error(`no step ${event.stepId}`);
    return event.decision === 'reject' ? this.#replan(`replan after the person rejected ${tool} (${step.id})`) : this.#execute(step, now);
  }

  /** The run's close found it answered by a call whose task did not count (`Engine.answeredBefore`): it ends with that answer. */
  answeredBefore(answer: string, now: Date): PlanCommand[] {
    this.#out.clear();
    this.#publish(model.complete(this.#state, answer, now), false);
    return this.#out.drain();
  }

  /** The answer of a run with no respond step left, written by a `final_answer` call from what was observed. */
  #writeAnswer(): PlanCommand[] {
    this.#waiting = { for: 'answer', stepId: null };
    return this.#emit(this.#respond(this.#state.currentStepId ?? '', 'final answer'));
  }

  /** The `final_answer` call of a respond step (or of a plan that ran out), asked to close the run when it answers. */
  #respond(stepId: string, summary: string): PlanCommand {
    const close = this.#closeOnAnswer();
    return { kind: 'call', activity: 'respond', input: { state: this.#state, stepId, ...(close ? { close } : {}) }, policy: close ? 'answer' : 'model', summary };
  }

  #closeOnAnswer(): CloseOnAnswer | undefined {
    return this.input.closeOnAnswer ? { reportTo: this.input.reportTo } : undefined;
  }

  /**
   * The run's answer: its respond step (none when the plan ran out without one) done, the run complete.
   * `closed`: the answering call closed the run and sent its report, so only the status and the end are left.
   */
  #answered(stepId: string | null, answer: string, now: Date, closed: boolean): PlanCommand[] {
    this.#publish(model.answer(this.#state, stepId, answer, now), !closed);
    return closed ? this.#out.end(this.#state, null) : this.#end('answered');
  }

  #subplan(step: PlanStep, now: Date): PlanCommand[] {
    const { limits } = this.input;
    if (this.#state.depth >= limits.maxDepth) {
      const refused: Omit<Observation, 'at' | 'stepId'> = { kind: 'error', content: `sub-plan not started: nesting limit of ${limits.maxDepth} reached` };
      this.#publish(model.finishStep(this.#state, step.id, 'failed', refused, now));
      return this.#replan(`replan after sub-plan ${step.id}`);
    }
    const childRunId = `${this.#state.runId}.${step.id}`;
    this.#publish(model.startStep(this.#state, step.id, now, { childRunId }));
    const child: PlanExecutionInput = {
      userId: this.input.userId,
      goal: step.goal ?? step.description,
      sessionId: this.input.sessionId ?? null,
      parentRunId: this.#state.runId,
      depth: this.#state.depth + 1,
      limits,
      // Its questions reach the person through this run.
      relayQuestions: true,
      ...(this.input.allow ? { allow: this.input.allow } : {}),
      // Held calls stay held in its sub-plans.
      ...(this.input.approval ? { approval: this.input.approval } : {}),
      ...(this.input.sessionThreadId ? { sessionThreadId: this.input.sessionThreadId } : {}),
      // A sub-plan of an agent's run is still that agent's work.
      ...(this.input.agent ? { agent: this.input.agent } : {}),
    };
    this.#waiting = { for: 'child', stepId: step.id };
    return this.#emit({ kind: 'start_child', workflowId: childRunId, input: child, summary: `sub-plan of ${this.#state.runId}: ${child.goal}`.slice(0, 200) });
  }

  /**
   * An agent's run: a child run (the subplan mechanism) whose goal is the task, carrying the agent.
   * It starts afresh — its own memory thread, no session conversation — and its answer is the step's observation.
   */
  #startAgent(stepId: string, { agent, engine, task }: AgentInvocation, now: Date): PlanCommand[] {
    const { limits } = this.input;
    if (this.#state.depth >= limits.maxDepth) {
      this.#publish(model.finishStep(this.#state, stepId, 'failed', { kind: 'error', content: `agent ${agent.name} not started: nesting limit of ${limits.maxDepth} reached` }, now));
      return this.#replan(`replan after agent step ${stepId}`);
    }
    const childRunId = `${this.#state.runId}.${stepId}`;
    this.#publish(model.startStep(this.#state, stepId, now, { childRunId }));
    const child = agentRunInput({ input: this.input, runId: this.#state.runId, depth: this.#state.depth }, { task, agent, engine });
    this.#waiting = { for: 'agent_run', stepId, agent: agent.name };
    return this.#emit({ kind: 'start_child', workflowId: childRunId, input: child, summary: `agent ${agent.name} for ${this.#state.runId}: ${task}`.slice(0, 200) });
  }

  #agentEnded(waiting: Extract<Waiting, { for: 'agent_run' }>, child: ExecutionState, now: Date): PlanCommand[] {
    const observation =
      child.status === 'completed'
        ? { kind: 'tool' as const, content: child.finalAnswer ?? '' }
        : { kind: 'error' as const, content: `agent ${waiting.agent} (run ${child.runId}) ended ${child.status}${child.lastError ? `: ${child.lastError}` : ''}` };
    this.#publish(model.finishStep(this.#state, waiting.stepId, observation.kind === 'error' ? 'failed' : 'completed', observation, now));
    return this.#replan(`replan after agent ${waiting.agent} (${waiting.stepId})`);
  }

  #apply(decision: ReplanDecisionReply, now: Date): PlanCommand[] {
    switch (decision.decision) {
      case 'continue':
        break;
      case 'replace_remaining':
        this.#publish(model.replaceRemaining(this.#state, decision.steps ?? [], now));
        break;
      case 'ask_user':
        this.#publish(model.insertStepAfterCurrent(this.#state, { type: 'ask_user', description: 'Ask the user', question: decision.question ?? '' }, now));
        break;
      case 'finish':
        if (decision.answer === undefined || decision.answer.trim() === '') {
          // Finished without the answer (DESIGN.md makes it optional): written as when the plan runs out.
          this.#publish(model.skipPending(this.#state, now));
          return this.#writeAnswer();
        }
        this.#publish(model.complete(this.#state, decision.answer, now));
        return this.#end('finished');
    }
    return this.#advance(now);
  }

  /** The child run a wait is on: a step's `childRunId` (its id is `<run>.<step>`). */
  #childOf(waiting: Extract<Waiting, { for: 'child' | 'agent_run' }>): string {
    return model.findStep(this.#state, waiting.stepId)?.childRunId ?? `${this.#state.runId}.${waiting.stepId}`;
  }

  /** The relay's view of this run: a child's question is an open ask_user step right after the step that waits on the child. */
  #relayHost(now: Date): RelayHost {
    return {
      state: () => this.#state,
      publish: (next) => this.#publish(next),
      ask: (question, childRunId) => {
        this.#publish(model.insertStepAfterCurrent(this.#state, { type: 'ask_user', description: `asked in run ${childRunId}`, question }, now, { childRunId }));
        return this.#state.currentStepId ?? '';
      },
    };
  }

  /** An event taken aside: what changed goes out, and the run goes on waiting for the same thing. */
  #aside(waiting: Waiting): PlanCommand[] {
    this.#waiting = waiting;
    return this.#out.drain();
  }

  #replan(summary: string): PlanCommand[] {
    this.#waiting = { for: 'decision' };
    return this.#emit({ kind: 'call', activity: 'replan', input: { state: this.#state }, policy: 'model', summary });
  }

  /** Every way a run ends closes its memory first. */
  #end(ending: RunEnding): PlanCommand[] {
    return this.#out.end(this.#state, ending);
  }

  #emit(last: PlanCommand): PlanCommand[] {
    return this.#out.emit(last);
  }

  /** Every change of state goes through here, so status and reports never lag (`reportEnds`: false when the end was reported already). */
  #publish(next: ExecutionState, reportEnds = true): void {
    const previous = this.#state.status;
    this.#state = next;
    this.input.observe?.(next);
    // A child run whose parent shows its questions tells the parent of its waits; its end comes back as the child's result.
    const questionsTo = this.input.questionsTo ?? null;
    // A session's run reports its approval waits to the session, which answers them from the person's messages.
    const toSession = this.input.reportApprovals === true && !!this.input.reportTo;
    // Its held calls, and a child's plan review or held call this run shows, go up too, when a run above shows this run's questions.
    const reviews = () => !this.input.reportTo && questionsTo !== null && (this.input.reportsWaits?.() ?? false);
    const approvals = () => toSession || reviews();
    this.#out.changed(next, previous, this.input.reportTo ?? questionsTo, reportEnds && questionsTo === null, approvals, reviews);
  }
}
