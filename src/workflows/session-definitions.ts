/**
 * Messages of the session workflow — defined once, imported by the workflow,
 * the API, the chat client and tests.
 */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { SessionRun, TaskState, Turn } from '../sessions/session-model';
import type { SessionLimits } from '../sessions/session-state';
import type { RunReport, TreeLimits } from '../engine/contract';
import type { EngineChoice } from '../engine/run-inputs';

export const SESSION_WORKFLOW_TYPE = 'agentSessionWorkflow';

/** What became of a message (the REST API's 200 body). */
export interface MessageOutcome {
  kind: 'command' | 'reply' | 'new_run' | 'retry';
  runId?: string;
  reply?: string;
}

/** A person's message to the session; handled in arrival order. `engine`: a new run it starts runs on this engine (else the session's). */
export const sendMessageUpdate = defineUpdate<MessageOutcome, [{ text: string; engine?: EngineChoice }]>('sendMessage');

export const runReportSignal = defineSignal<[RunReport]>('runReport');

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
export const getSessionQuery = defineQuery<SessionWorkflowView>('getSession');

/**
 * The session as the API shows it: the workflow's view plus chatHistory and TaskState read from the
 * session thread's head (so a rollback or a person's edit of the thread shows), and a `version` that
 * grows with either.
 */
export interface SessionView extends SessionWorkflowView {
  chatHistory: Turn[];
  taskState: TaskState;
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

/** The error type a message is refused with while the session drains its queue to continue as new: send it again. */
export const HANDING_OVER = 'SessionHandingOver';
