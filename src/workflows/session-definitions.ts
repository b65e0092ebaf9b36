/**
 * Messages of the session workflow — defined once, imported by the workflow,
 * the API, the chat client and tests.
 */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { TaskState, Turn } from '../sessions/session-model';
import type { MessageOutcome, RunReport, SessionWorkflowView } from '../engine/contract';
import type { EngineChoice } from '../engine/run-inputs';

// The session's contract lives with its engine; re-exported for the API, the chat client and tests.
export type { MessageOutcome, SessionInput, SessionWorkflowView } from '../engine/contract';

export const SESSION_WORKFLOW_TYPE = 'agentSessionWorkflow';

/** A person's message to the session; handled in arrival order. `engine`: a new run it starts runs on this engine (else the session's). */
export const sendMessageUpdate = defineUpdate<MessageOutcome, [{ text: string; engine?: EngineChoice }]>('sendMessage');

export const runReportSignal = defineSignal<[RunReport]>('runReport');

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

/** The error type a message is refused with while the session drains its queue to continue as new: send it again. */
export const HANDING_OVER = 'SessionHandingOver';
