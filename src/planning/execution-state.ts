/**
 * ExecutionState (seed 000's third layer) and the pure transitions on it.
 * The plan-execution workflow holds one of these and changes it only through
 * the functions here, so every transition is unit-testable without Temporal.
 * Shape and names follow DESIGN.md §4 exactly; a few extra fields are additive.
 */
import type { RunAgent } from '../agents/names';
import type { Allow } from './capabilities';
import type { CodeVersion } from './code-version';
import type { StepSpec, StepType } from './step-spec';
import { renderTaskProgress, type TaskNode } from './task-tree';
import { editNote, rejectionText, type ApprovalDecision, type PendingApproval } from './approval';

/**
 * `waiting_review`: a tree run waits for a person to approve, edit, revise or reject its proposed plan;
 * `waiting_approval`: a tool call waits for a person to approve, edit or reject it (`pendingApproval`).
 */
export const RUN_STATUSES = ['planning', 'running', 'waiting_user', 'waiting_review', 'waiting_approval', 'completed', 'failed', 'cancelled'] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];
export const TERMINAL_STATUSES: readonly RunStatus[] = ['completed', 'failed', 'cancelled'];
export const isTerminal = (status: RunStatus): boolean => TERMINAL_STATUSES.includes(status);

/** How a run ended: with an answer (a respond step, or the plan ran out), by a replan `finish`, at the step limit, failed or cancelled. */
export type RunEnding = 'answered' | 'finished' | 'step_limit' | 'failed' | 'cancelled';

export const STEP_STATUSES = ['pending', 'running', 'completed', 'failed', 'replaced', 'skipped'] as const;
export type StepStatus = (typeof STEP_STATUSES)[number];

/** `rejected`: a person rejected a tool call waiting for approval; it holds their feedback. */
export const OBSERVATION_KINDS = ['tool', 'reason', 'user_reply', 'snapshot', 'error', 'subplan', 'rejected'] as const;
export type ObservationKind = (typeof OBSERVATION_KINDS)[number];

export interface PlanStep {
  id: string;
  /** 1-based position in `steps`; replaced steps keep theirs. */
  index: number;
  type: StepType;
  description: string;
  status: StepStatus;
  tool?: string;
  args?: Record<string, unknown>;
  question?: string;
  goal?: string;
  childRunId?: string;
  /** A tree run's step: the index of the task whose ReAct iteration it was. */
  task?: string;
}

export interface Observation {
  stepId: string | null;
  kind: ObservationKind;
  content: string;
  at: string;
}

export interface ExecutionState {
  runId: string;
  sessionId: string | null;
  userId: string;
  goal: string;
  status: RunStatus;
  planId: string | null;
  steps: PlanStep[];
  currentStepId: string | null;
  observations: Observation[];
  finalAnswer: string | null;
  lastError: string | null;
  parentRunId: string | null;
  updatedAt: string;
  /** Nesting depth: 0 for a top-level run. */
  depth: number;
  /** Which model plans this run, e.g. "offline-demo" — shown so a demo is never mistaken for a real model. */
  model: string;
  /** Increments at every change; lets watchers (SSE) detect changes cheaply. */
  version: number;
  /** The memory thread holding this run's working memory (GET /v1/threads/:threadId). */
  threadId: string | null;
  /** The memory thread of the session the run belongs to: its planner prompts show that conversation and TaskState. Absent outside sessions. */
  sessionThreadId?: string | null;
  /** Which engine runs it: seed 000's planner (absent on plan runs, whose states keep their shape) or seed 003's task tree. */
  engine?: 'tree';
  /** A tree run that began as one ReAct loop on the goal, planning only when it needed to (seed 003's ReAct first). */
  entry?: 'react';
  /** A tree run's task tree (seed 003), once proposed. */
  tree?: TaskNode | null;
  /** A tree run's progress tree as the seed renders it (`-[x]`, `-[-]`, `-[~]`, `-[ ]`). */
  progress?: string;
  /** What the run was planned with (model, prompts, tools); a step on a worker that differs stops it as stale. */
  codeVersion?: CodeVersion;
  /** A sub-agent's run: which agent, its instructions, the tools it may call (absent on other runs). */
  agent?: RunAgent;
  /** Capability switches its starter turned off (src/planning/capabilities.ts); absent: everything on. */
  allow?: Allow;
  /** The tool call waiting for a person's approval (status `waiting_approval`); absent or null otherwise. */
  pendingApproval?: PendingApproval | null;
  /** A fork: the run and the version of its state it started from (POST /v1/runs/:runId/fork). */
  forkedFrom?: { runId: string; version: number };
  /**
   * Status `waiting_review` of a run whose child run (a group's, a sub-agent's) waits for a review of
   * its plan: which run, and the plan. A review sent to this run goes down to that one (src/engine/relay.ts).
   */
  reviewIn?: { runId: string; planId: string } | null;
}

export interface NewRunInput {
  runId: string;
  userId: string;
  goal: string;
  sessionId?: string | null;
  parentRunId?: string | null;
  depth?: number;
  model: string;
  sessionThreadId?: string | null;
  agent?: RunAgent;
  allow?: Allow;
}

/** Observations longer than this are cut in state; the model and the UI see the head. */
export const MAX_OBSERVATION_CHARS = 8_000;

export function initialState(input: NewRunInput, now: Date): ExecutionState {
  return {
    runId: input.runId,
    sessionId: input.sessionId ?? null,
    userId: input.userId,
    goal: input.goal,
    status: 'planning',
    planId: null,
    steps: [],
    currentStepId: null,
    observations: [],
    finalAnswer: null,
    lastError: null,
    parentRunId: input.parentRunId ?? null,
    updatedAt: now.toISOString(),
    depth: input.depth ?? 0,
    model: input.model,
    version: 1,
    threadId: null,
    // Only runs of a session carry it, so states of other runs keep their shape.
    ...(input.sessionThreadId ? { sessionThreadId: input.sessionThreadId } : {}),
    ...(input.agent ? { agent: input.agent } : {}),
    ...(input.allow ? { allow: input.allow } : {}),
  };
}

/** Every transition goes through here: immutable update, timestamp, version. */
function next(state: ExecutionState, patch: Partial<ExecutionState>, now: Date): ExecutionState {
  return { ...state, ...patch, updatedAt: now.toISOString(), version: state.version + 1 };
}

/** Step ids are `s1, s2, …` in order of creation and never reused; `index` is the position. */
function toPlanSteps(specs: readonly StepSpec[], firstIndex: number, firstIdNo = firstIndex): PlanStep[] {
  return specs.map((spec, i) => {
    const index = firstIndex + i;
    const step: PlanStep = { id: `s${firstIdNo + i}`, index, type: spec.type, description: spec.description, status: 'pending' };
    if (spec.tool !== undefined) step.tool = spec.tool;
    if (spec.args !== undefined) step.args = spec.args;
    if (spec.question !== undefined) step.question = spec.question;
    if (spec.goal !== undefined) step.goal = spec.goal;
    return step;
  });
}

/** The first plan of a run: status becomes running. */
export function applyPlan(state: ExecutionState, specs: readonly StepSpec[], now: Date): ExecutionState {
  return next(state, { status: 'running', planId: `${state.runId}#plan1`, steps: toPlanSteps(specs, 1) }, now);
}

/** Seed 000's "replace remaining steps": pending steps are marked replaced and never run. */
export function replaceRemaining(state: ExecutionState, specs: readonly StepSpec[], now: Date): ExecutionState {
  const kept = state.steps.map((s) => (s.status === 'pending' ? { ...s, status: 'replaced' as const } : s));
  const planNo = Number((state.planId ?? '#plan0').split('#plan')[1] ?? 0) + 1;
  return next(state, { steps: [...kept, ...toPlanSteps(specs, kept.length + 1)], planId: `${state.runId}#plan${planNo}` }, now);
}

/**
 * Appends one step (e.g. an ask_user the replanner decided on) after the current one. `open`: the step
 * is under way already (a child's question shown by its parent) and becomes the current step.
 */
export function insertStepAfterCurrent(state: ExecutionState, spec: StepSpec, now: Date, open?: Pick<PlanStep, 'childRunId'>): ExecutionState {
  // Remaining pending steps stay after the inserted one, in order.
  const pending = state.steps.filter((s) => s.status === 'pending');
  const done = state.steps.filter((s) => s.status !== 'pending');
  const inserted = toPlanSteps([spec], done.length + 1, state.steps.length + 1).map((s) => (open ? { ...s, ...open, status: 'running' as const } : s));
  const reindexed = [...done, ...inserted, ...pending].map((s, i) => ({ ...s, index: i + 1 }));
  return next(state, { steps: reindexed, ...(open ? { currentStepId: inserted[0]?.id ?? state.currentStepId } : {}) }, now);
}

export function nextPendingStep(state: ExecutionState): PlanStep | undefined {
  return state.steps.find((s) => s.status === 'pending');
}

export function findStep(state: ExecutionState, stepId: string): PlanStep | undefined {
  return state.steps.find((s) => s.id === stepId);
}

function patchStep(state: ExecutionState, stepId: string, patch: Partial<PlanStep>): PlanStep[] {
  return state.steps.map((s) => (s.id === stepId ? { ...s, ...patch } : s));
}

export function startStep(state: ExecutionState, stepId: string, now: Date, extra: Partial<PlanStep> = {}): ExecutionState {
  return next(state, { steps: patchStep(state, stepId, { status: 'running', ...extra }), currentStepId: stepId, status: 'running' }, now);
}

export function finishStep(state: ExecutionState, stepId: string, outcome: 'completed' | 'failed' | 'skipped', observation: Omit<Observation, 'at' | 'stepId'> | null, now: Date): ExecutionState {
  const observations = observation ? [...state.observations, makeObservation(stepId, observation, now)] : state.observations;
  return next(state, { steps: patchStep(state, stepId, { status: outcome }), observations }, now);
}

/** `content`'s first `limit` characters, saying how many were dropped. */
const cut = (content: string, limit: number): string => (content.length > limit ? `${content.slice(0, limit)}… [truncated ${content.length - limit} chars]` : content);

export function makeObservation(stepId: string | null, obs: Omit<Observation, 'at' | 'stepId'>, now: Date): Observation {
  return { stepId, kind: obs.kind, content: cut(obs.content, MAX_OBSERVATION_CHARS), at: now.toISOString() };
}

/**
 * What of a step's result an activity returns into Temporal history: its head. The whole result
 * goes to the run's memory thread (what the model reads) and the step journal, so history grows
 * by a bounded amount per step whatever a tool returns.
 */
export const HISTORY_OBSERVATION_CHARS = 120;

export function headForHistory<O extends { content: string }>(obs: O): O {
  return obs.content.length > HISTORY_OBSERVATION_CHARS ? { ...obs, content: cut(obs.content, HISTORY_OBSERVATION_CHARS) } : obs;
}

export function waitForUser(state: ExecutionState, stepId: string, now: Date): ExecutionState {
  return next(state, { status: 'waiting_user', currentStepId: stepId }, now);
}

/** A tool call waits for a person's approval before it runs. */
export function awaitApproval(state: ExecutionState, pending: PendingApproval, now: Date): ExecutionState {
  return next(state, { status: 'waiting_approval', currentStepId: pending.stepId, pendingApproval: pending }, now);
}

/** The person decided: the call runs (with `args` when they edited them) or, rejected, is done with. */
export function decideApproval(state: ExecutionState, stepId: string, args: Record<string, unknown> | undefined, now: Date): ExecutionState {
  return next(state, { status: 'running', pendingApproval: null, ...(args ? { steps: patchStep(state, stepId, { args }) } : {}) }, now);
}

/**
 * A person's decision on the held call, as the successive states that show it (each one version):
 * rejected, the wait ends and the step is skipped with a `rejected` observation holding their
 * feedback; approved, the wait ends — edited arguments go on the step, the edit recorded beside the
 * proposed ones. Whether and how the call then runs is the engine's.
 */
export function settleApproval(state: ExecutionState, decision: ApprovalDecision, now: Date): ExecutionState[] {
  const pending = state.pendingApproval;
  if (!pending || pending.stepId !== decision.stepId) throw new Error(`no call waits for approval at step ${decision.stepId}`);
  const { stepId } = decision;
  if (decision.decision === 'reject') {
    const decided = decideApproval(state, stepId, undefined, now);
    return [decided, finishStep(decided, stepId, 'skipped', { kind: 'rejected', content: rejectionText(pending, decision.feedback) }, now)];
  }
  const args = decision.decision === 'edit' ? decision.args : undefined;
  const decided = decideApproval(state, stepId, args, now);
  return args ? [decided, addObservation(decided, stepId, { kind: 'user_reply', content: editNote(pending, args, decision.feedback) }, now)] : [decided];
}

/** An observation of a step that does not finish it (a person's edit of its arguments, say). */
export function addObservation(state: ExecutionState, stepId: string, observation: Omit<Observation, 'at' | 'stepId'>, now: Date): ExecutionState {
  return next(state, { observations: [...state.observations, makeObservation(stepId, observation, now)] }, now);
}

/** A child run's tool call waits for approval: this run shows it (status `waiting_approval`, `pendingApproval` naming that run). */
export function showChildApproval(state: ExecutionState, pending: PendingApproval, now: Date): ExecutionState {
  return next(state, { status: 'waiting_approval', pendingApproval: pending }, now);
}

/** The child's call was decided (or the child ended): this run goes on waiting on it, running. */
export function endChildApproval(state: ExecutionState, now: Date): ExecutionState {
  return next(state, { status: 'running', pendingApproval: null }, now);
}

/** A child run's plan waits for review: this run shows it (status `waiting_review`, `reviewIn`). */
export function showChildReview(state: ExecutionState, reviewIn: { runId: string; planId: string }, now: Date): ExecutionState {
  return next(state, { status: 'waiting_review', reviewIn }, now);
}

/** The child's plan was reviewed (or the child ended): this run goes on waiting on it, running. */
export function endChildReview(state: ExecutionState, now: Date): ExecutionState {
  return next(state, { status: 'running', reviewIn: null }, now);
}

/** The run goes on without the reply it showed it waited for (the question was dropped). */
export function resume(state: ExecutionState, now: Date): ExecutionState {
  return next(state, { status: 'running' }, now);
}

/** The person's reply: recorded as a user_reply observation, the ask step completed. */
export function recordReply(state: ExecutionState, stepId: string, text: string, now: Date): ExecutionState {
  return next(
    state,
    {
      status: 'running',
      steps: patchStep(state, stepId, { status: 'completed' }),
      observations: [...state.observations, makeObservation(stepId, { kind: 'user_reply', content: text }, now)],
    },
    now,
  );
}

export function complete(state: ExecutionState, answer: string, now: Date): ExecutionState {
  return next(state, { status: 'completed', finalAnswer: answer, steps: pendingSkipped(state.steps), currentStepId: null }, now);
}

/** The run finishes early and its answer is still to be written: the steps left are skipped first. */
export function skipPending(state: ExecutionState, now: Date): ExecutionState {
  return next(state, { steps: pendingSkipped(state.steps) }, now);
}

/** Steps the model finished early past are skipped, not left pending forever. */
function pendingSkipped(steps: readonly PlanStep[]): PlanStep[] {
  return steps.map((s) => (s.status === 'pending' ? { ...s, status: 'skipped' as const } : s));
}

/**
 * The run answered: its respond step (none when the plan ran out without one) done, the run complete.
 * The engine and an answering call that closes the run (plan-activities) both get the final state here.
 */
export function answer(state: ExecutionState, stepId: string | null, text: string, now: Date): ExecutionState {
  const done = complete(stepId === null ? state : finishStep(state, stepId, 'completed', null, now), text, now);
  // One change, one version: the run's history shows no version that never existed.
  return { ...done, version: state.version + 1 };
}

export function fail(state: ExecutionState, error: string, now: Date): ExecutionState {
  const steps = state.steps.map((s) => (s.status === 'running' ? { ...s, status: 'failed' as const } : s));
  return next(state, { status: 'failed', lastError: error, steps, currentStepId: null }, now);
}

export function cancel(state: ExecutionState, now: Date): ExecutionState {
  const steps = state.steps.map((s) => (s.status === 'running' || s.status === 'pending' ? { ...s, status: 'skipped' as const } : s));
  return next(state, { status: 'cancelled', steps, currentStepId: null, lastError: state.lastError }, now);
}

/**
 * One step that already happened, appended with its outcome (a tree run's ReAct iteration: the
 * action is known only once the model chose it). `running` leaves it open (an ask_user).
 */
export function appendStep(
  state: ExecutionState,
  spec: StepSpec,
  outcome: 'completed' | 'failed' | 'skipped' | 'running',
  observation: Omit<Observation, 'at' | 'stepId'> | null,
  now: Date,
  extra: Pick<PlanStep, 'task' | 'childRunId'> = {},
): ExecutionState {
  const [step] = toPlanSteps([spec], state.steps.length + 1);
  if (!step) return state;
  const observations = observation ? [...state.observations, makeObservation(step.id, observation, now)] : state.observations;
  return next(state, { steps: [...state.steps, { ...step, ...extra, status: outcome }], observations, currentStepId: step.id }, now);
}

/** A tree run's new task tree, with its progress rendering kept in step; `patch` changes more at once. */
export function withTree(state: ExecutionState, tree: TaskNode, now: Date, patch: Partial<ExecutionState> = {}): ExecutionState {
  return next(state, { ...patch, engine: 'tree', tree, progress: renderTaskProgress(tree) }, now);
}

/** The question the run is waiting on, if it is waiting. */
export function pendingQuestion(state: ExecutionState): string | null {
  if (state.status !== 'waiting_user' || !state.currentStepId) return null;
  return findStep(state, state.currentStepId)?.question ?? null;
}
