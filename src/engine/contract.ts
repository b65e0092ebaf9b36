/**
 * The engine's contract: what a run is started with, what reaches it from people and from its
 * children, what it reports, and the calls it makes with their inputs and results. Workflows
 * carry the engine's commands out and activities implement its calls (`satisfies PlanCalls`,
 * `TreeCalls`); nothing here depends on either. Types only.
 */
import type { AgentInvocation, RunAgent } from '../agents/names';
import type { Allow } from '../planning/capabilities';
import type { CodeVersion } from '../planning/code-version';
import type { ExecutionState, Observation, ObservationKind, RunEnding } from '../planning/execution-state';
import type { ApprovalDecision, PendingApproval } from '../planning/approval';
import type { MessageRouteReply } from '../calls/message-route';
import type { ReplanDecisionReply } from '../calls/replan-decision';
import type { StepSpec } from '../planning/step-spec';
import type { TaskNode, TaskSpec } from '../planning/task-tree';
import type { ReactActionReply } from '../calls/react-action';
import type { ReflectionReply } from '../calls/reflection';
import type { SpinCheckReply } from '../calls/spin-check';
import type { TaskTreeReply } from '../calls/task-tree';
import type { ApprovalAnswer, SessionRun, SessionRunStatus, TaskState, Turn } from '../sessions/session-model';
import type { SessionLimits } from '../sessions/session-state';
import type { ReflectionLevel, ReflectionSettings } from './reflection';
import type { SpinLimits } from './spin';

// ---- a run's input

export interface PlanExecutionInput {
  userId: string;
  goal: string;
  /**
   * The run features its starter has (RUN_FEATURES_PATCH), set by every starter of today's code. A run
   * started without it (recorded before, or by hand) asks `patched` instead, which records a marker.
   */
  features?: string;
  sessionId?: string | null;
  parentRunId?: string | null;
  /** 0 for a top-level run. @default 0 */
  depth?: number;
  limits: { maxSteps: number; maxDepth: number };
  /** The memory thread of the session that started this run (its conversation and TaskState reach the planner). */
  sessionThreadId?: string | null;
  /** Seed 003's tree engine instead of seed 000's planner (absent: the planner). */
  engine?: 'tree';
  /**
   * Tools whose calls wait for a person's approval (names or patterns, `*` for all): the operator's
   * TOOL_APPROVAL and what the run's starter added. Absent: none.
   */
  approval?: string[];
  /**
   * The run tells its session (`reportTo`) when a call waits for approval and when it goes on, so that the
   * person's next message can answer it (set by sessions; runs started before never report it). Absent: false.
   */
  reportApprovals?: boolean;
  /** A fork of another run: its first state (the source's at the fork point, edited), from which it goes on. */
  fork?: { state: ExecutionState };
  /** Tree runs: wait for a person to review the proposed tree before executing it. @default false */
  review?: boolean;
  /**
   * Tree runs: begin as one ReAct loop on the goal (seed 003's ReAct first): the run answers directly or
   * acts with tools, and makes a task tree only when the loop plans. Absent: the run proposes a tree first.
   */
  entry?: 'react';
  /** Tree runs: limits on the tree and its tasks. */
  treeLimits?: TreeLimits;
  /**
   * A tree run's child run: it executes the subtree at `scope.index` of the tree it was handed
   * (the whole tree, so its prompts show the root's progress), and returns that tree.
   */
  scope?: { index: string; tree: TaskNode; rootRunId: string; threadId?: string | null; codeVersion?: CodeVersion };
  /** A tree run started from a blueprint: its expanded tree is the plan (reviewed like a proposal when asked). */
  blueprint?: { name: string; tree: TaskSpec };
  /**
   * A run of a sub-agent (a parent called `agent.<name>`): its prompts carry the agent's
   * instructions, it may call only the agent's tools, and its model calls ask for the agent's model.
   * Its sub-plans and task groups carry it on.
   */
  agent?: RunAgent;
  /**
   * How long the last call of the run that started this one (its session's previous run, or its
   * parent) took, in ms: a run whose caller's calls were fast makes its first call locally too
   * (src/engine/local-calls.ts). Absent: the first call is a regular activity.
   */
  lastCallMs?: number | null;
  /**
   * A child run (a sub-plan, a sub-agent) whose parent shows its questions as its own and passes the
   * person's reply down: it reports its waits for a reply to the parent (src/engine/relay.ts). Absent
   * on runs started before parents did (their questions stayed with them).
   */
  relayQuestions?: boolean;
  /** Capability switches (src/planning/capabilities.ts): what the run and its children may not do. @default everything on */
  allow?: Allow;
}

/** A person's decision on the task tree a run proposed (DESIGN.md: POST /v1/runs/:runId/review). */
export interface ReviewDecision {
  decision: 'approve' | 'revise' | 'reject';
  /** The plan the decision answers; a stale one is refused. */
  planId: string;
  /** An edited tree: with approve it runs as edited, with revise it is shown for review again. */
  tree?: TaskSpec;
  /** With revise: what the model should change; with reject: why. */
  feedback?: string;
}
/** A person steering a tree run while it executes (POST /v1/runs/:runId/tasks/:index/skip and /redo). */
export interface TaskSteer {
  index: string;
  reason?: string;
}
// ---- what a run reports

/** A run of this session reports a change of status (sent by the run itself). */
export interface RunReport {
  runId: string;
  /** `waiting_review` only to a parent run that shows its child's reviews (never to a session). */
  status: SessionRunStatus;
  question: string | null;
  finalAnswer: string | null;
  lastError: string | null;
  /** Status `waiting_review`: the plan under review (the run's own, or one it shows of its child). */
  planId?: string;
  /** How long the run's latest activity call took (ms), for the speed of the session's next run's first call. */
  lastCallMs?: number | null;
  /** The report's turn is in the session's thread already: the call that closed the run added it (src/activities/session-turns.ts). */
  recorded?: boolean;
  /** Status `waiting_approval`: the call that waits (`question` says it in words). */
  approval?: PendingApproval;
}
/** A report for a run's parent (its session, or its parent run), sent by the activity that closes the run. */
export interface ParentNotice {
  parentId: string;
  report: RunReport;
}

// ---- the calls of a plan run (seed 000's planner)

/**
 * Asked of a call that may answer the run (`planRun`, `respond`): run locally, it also closes the run once
 * it has the answer — what the `close` command and the final report to `reportTo` would do — and says so
 * in its result (`closed`), so an answered run needs no closing call of its own.
 */
export interface CloseOnAnswer {
  reportTo: string | null;
}

/** What closing a run's memory needs: its final state and how it ended. */
export interface CloseRunInput {
  state: ExecutionState;
  ending: RunEnding;
}

export interface StepObservation {
  kind: ObservationKind;
  content: string;
}

export interface StepResult {
  observation: StepObservation;
  outcome: 'completed' | 'failed';
  decision: ReplanDecisionReply;
}

/** The answer of a plan's first step, a respond step, given with the plan (`answerAtOnce`); `closed`: the call closed the run too. */
export interface PlanAnswer {
  stepId: string;
  text: string;
  closed?: true;
}

/** respond's result; `closed`: the call closed the run too (`CloseOnAnswer`). */
export interface RespondResult {
  answer: string;
  closed?: true;
}

/** planRun's result: the plan, what it was made with, and the answer when the plan begins with it. */
export interface PlannedRun {
  steps: StepSpec[];
  model: string;
  codeVersion?: CodeVersion;
  threadId?: string;
  snapshots?: Observation[];
  answer?: PlanAnswer;
}

/** closeRun's input: how the run ended, and the report its parent gets once the run is closed. */
export type CloseRunCall = CloseRunInput & { notify?: ParentNotice };

/** What `closeRun` found: the answer an answering call closed the run with before (`CloseOnAnswer`), if one had. */
export interface ClosedRun {
  answeredBefore?: string;
}

/** resolveAgent's result: the agent's run to start, or the error the step observes. */
export type AgentResolution = { ok: true; invocation: AgentInvocation } | { ok: false; error: string };

/** The activities a plan run calls, by name: `src/activities/plan-activities.ts` implements them. */
export type PlanCalls = {
  planRun(input: { state: ExecutionState; close?: CloseOnAnswer }): Promise<PlannedRun>;
  executeStep(input: { state: ExecutionState; stepId: string }): Promise<StepResult>;
  replan(input: { state: ExecutionState }): Promise<ReplanDecisionReply>;
  resolveAgent(input: { state: ExecutionState; stepId: string }): Promise<AgentResolution>;
  respond(input: { state: ExecutionState; stepId: string; close?: CloseOnAnswer }): Promise<RespondResult>;
  closeRun(input: CloseRunCall): Promise<ClosedRun>;
};

// ---- the calls of a tree run (seed 003)

export interface TreeLimits {
  /** Levels of a tree, the root counting as 1 (`MAX_TREE_DEPTH`). @default 4 */
  maxDepth: number;
  /** Subtasks of one task (`MAX_TREE_FANOUT`). @default 8 */
  maxFanout: number;
  /** ReAct iterations of one task before it is aborted (`MAX_ITERATIONS`). @default 10 */
  maxIterations: number;
  /** Spin detection thresholds (`SPIN_WARN_AT`, `SPIN_STOP_AT`); runs started before they existed use the defaults. */
  spin?: SpinLimits;
  /** Self-reflection (`REFLECTION`, `REFLECTION_EVERY`); runs started before it existed reflect on failed actions only. */
  reflection?: ReflectionSettings;
  /** Whether a task at its iteration limit is summarised by the model (`task_summary`) before it aborts; runs started before: no. */
  summarizeAtLimit?: boolean;
}

/**
 * What a tree run's call may carry besides its own input (the tree engine adds it): the run whose memory
 * thread to open when the state names none yet (a run started from a blueprint proposed no tree, and a
 * group's run writes to its root's thread), and what happened since the run's last call that no call
 * wrote — observations from `from` on, and the plan when `plan` (src/memory/run-chunks.ts `eventChunks`).
 */
export interface TreeCallMemory {
  openThread?: string;
  unrecorded?: { from: number; plan: boolean };
}

export interface ProposeTreeInput extends TreeCallMemory {
  state: ExecutionState;
  /** A person's revision request on the plan they reviewed. */
  feedback?: string;
  /** Planning as an action: the task that plans, and for what. Its subtree must fit under it. */
  plan?: { taskIndex: string; goal: string };
}

export interface ReactStepResult {
  reply: ReactActionReply;
  /** The tool's result (or error) when the action was a tool call. */
  observation: StepObservation | null;
  /** The action called a sub-agent (`agent.<name>`): the engine runs it as a child run, whose answer is the observation. */
  agent?: AgentInvocation;
  /** The worker's code version, for a run that has none yet (one started from a blueprint never proposed a tree). */
  codeVersion?: CodeVersion;
  /** The memory thread the call opened (`TreeCallMemory.openThread`), for a run whose state names none yet. */
  threadId?: string;
  /** The tool call waits for a person's approval (the policy's pattern that matched): it was not made. */
  held?: string;
}

/** The activities a tree run calls, by name: `src/activities/tree-activities.ts` implements them. */
export type TreeCalls = {
  proposeTree(input: ProposeTreeInput): Promise<{ tree: TaskTreeReply; model: string; codeVersion?: CodeVersion; threadId?: string }>;
  /** `hold`: tools whose calls wait for approval (the run's `approval`); absent: none. */
  reactStep(input: { state: ExecutionState; taskIndex: string; stepId: string; hold?: string[] } & TreeCallMemory): Promise<ReactStepResult>;
  /** A held call a person approved (with the arguments they gave): the tool's result, or the sub-agent to start. */
  runHeldCall(
    input: { state: ExecutionState; taskIndex: string; stepId: string; tool: string; args: Record<string, unknown> } & TreeCallMemory,
  ): Promise<Pick<ReactStepResult, 'observation' | 'agent'>>;
  expandBlueprint(input: { state: ExecutionState; taskIndex: string; name: string } & TreeCallMemory): Promise<{ tree: TaskSpec } | { error: string }>;
  checkSpin(input: { state: ExecutionState; taskIndex: string } & TreeCallMemory): Promise<SpinCheckReply>;
  /** `level` absent: `deep` (a failed action), as runs recorded before asked. */
  reflect(input: { state: ExecutionState; taskIndex: string; level?: Exclude<ReflectionLevel, 'none' | 'deep'> } & TreeCallMemory): Promise<ReflectionReply>;
  /** `task_summary` of a task at its iteration limit; null when the model gave none (the task aborts without it). */
  summarizeTask(input: { state: ExecutionState; taskIndex: string } & TreeCallMemory): Promise<{ summary: string | null }>;
  treeAnswer(input: { state: ExecutionState } & TreeCallMemory): Promise<{ answer: string }>;
};

// ---- a session (seed 000's conversation, src/engine/session-engine.ts)

/** What became of a message (the REST API's 200 body). */
export interface MessageOutcome {
  kind: 'command' | 'reply' | 'new_run' | 'retry';
  runId?: string;
  reply?: string;
}

/** What the session workflow holds: its runs and counters. The conversation itself lives in its memory thread. */
export interface SessionWorkflowView {
  sessionId: string;
  userId: string;
  threadId: string;
  runs: SessionRun[];
  /** Messages handled since the session began, across continue-as-new. */
  turns: number;
  /** Increments at every change (for SSE watchers). */
  version: number;
}

export interface SessionInput {
  sessionId: string;
  userId: string;
  threadId: string;
  limits: { maxSteps: number; maxDepth: number };
  /** The engine of the runs the session starts: seed 000's planner (absent), seed 003's task tree, or its ReAct first. */
  engine?: 'tree' | 'react';
  /** Tree runs' limits (with `engine: "tree"`, or a message that asks for a tree run). */
  treeLimits?: TreeLimits;
  /** Tools whose calls wait for approval in its runs (TOOL_APPROVAL when the session started); absent: none. */
  approval?: string[];
  /** Compact state carried across continue-as-new. */
  carried?: Omit<SessionWorkflowView, 'sessionId' | 'userId' | 'threadId'> & {
    /** Estimated tokens of the turns in the thread's recent window (decides compression). */
    window?: number[];
    /** Carried by sessions from before the conversation lived in the thread only; read for `window`. */
    chatHistory?: Turn[];
    taskState?: TaskState;
    /** How long the latest call of the latest run that reported took (ms). */
    lastRunCallMs?: number;
  };
  /** Run reports that were queued at the hand-over; the next run handles them first. */
  pendingReports?: RunReport[];
  /** History window and compression; see DEFAULT_SESSION_LIMITS. */
  settings?: Partial<SessionLimits> & {
    /** Continue-as-new once the history has this many events (or when Temporal suggests it). @default 2000 */
    continueAsNewAfterEvents?: number;
    /**
     * When traffic never pauses, how many more events the history may gain after the hand-over fell due
     * before new messages are turned away (as HANDING_OVER, which `Sessions.send` retries) so that the
     * queue drains and the hand-over happens. @default 500
     */
    handOverGraceEvents?: number;
    /** With no message for this long and no run open, the conversation ends (as `/end`); 0 or absent: never. */
    idleTimeoutMs?: number;
  };
  /** Fingerprint of the tools the previous run of this session saw (carried across continue-as-new). */
  capabilities?: string;
}

/** A run a session starts in the call that records the message asking for it (src/activities/run-starts.ts). */
export interface StartRunInput {
  runId: string;
  input: PlanExecutionInput;
  /** What the Web UI shows for the run. */
  summary: string;
}

/** A run waiting for the person, as the `message_route` call sees it. */
export interface WaitingRun {
  runId: string;
  goal: string;
  question: string;
}

/** A message answering a tool call held for approval (issue 28), handed to the run. */
export interface AnswerApprovalInput {
  runId: string;
  pending: PendingApproval;
  /** The person's message (what an edit is made from). */
  text: string;
  answer: ApprovalAnswer;
  /** One id per message, so a retried activity never delivers a decision twice. */
  updateId: string;
}

/**
 * What became of the answer: `delivered` (the run goes on, `reply` says how), or not — `waiting`
 * true when the call still waits (the edit did not fit: `reply` says why), false when the run no
 * longer waits on it.
 */
export type AnswerApprovalResult = { delivered: true; decision: ApprovalDecision; reply: string } | { delivered: false; waiting: boolean; reply: string };

/** The activities a session calls, by name: `src/activities/session-activities.ts` implements them. */
export type SessionCalls = {
  /** At the start of each run of a session: its thread exists; returns what the worker can do now. */
  openSession(input: { sessionId: string; userId: string; threadId: string; first?: boolean }): Promise<{ capabilities: string }>;
  /** Adds turns to the thread (idempotently, under `key`), and with `start` starts the run the message asks for. */
  recordTurns(input: { sessionId: string; threadId: string; turns: Turn[]; start?: StartRunInput; key?: string }): Promise<{ messageIds: string[]; capabilities: string; ended?: RunReport }>;
  /** Seed 000's routing: a reply to a waiting run, or a new request? */
  judgeMessage(input: { text: string; waiting: WaitingRun[] }): Promise<MessageRouteReply>;
  /** Seed 000's compression of older turns into TaskState; returns the window's estimates after it. */
  compressHistory(input: { sessionId: string; threadId: string; keep?: number; keepMessageIds?: string[] }): Promise<{ taskState: TaskState; window: number[] }>;
  readSession(input: { threadId: string; maxTurns: number }): Promise<{ chatHistory: Turn[]; taskState: TaskState }>;
  clearSession(input: { sessionId: string; threadId: string; cancelledRuns: string[] }): Promise<void>;
  endSession(input: { sessionId: string; threadId: string; reason: string }): Promise<void>;
  answerApproval(input: AnswerApprovalInput): Promise<AnswerApprovalResult>;
};
