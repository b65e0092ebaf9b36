/**
 * Signals, queries and search attributes of Threadline workflows — defined once,
 * imported by workflows, the API, the chat client and tests alike.
 */
import { defineSearchAttributeKey, SearchAttributeType, type SearchAttributePair } from '@temporalio/common';
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { ExecutionState } from '../planning/execution-state';
import { clip } from '../text/clip';
import { userKey } from '../text/user-key';
import type { PlanExecutionInput, ReviewDecision, TaskSteer } from '../engine/contract';
import type { ApprovalDecision } from '../planning/approval';

/** The person's answer to the question a waiting run asked. */
export const replySignal = defineSignal<[{ text: string }]>('reply');
/**
 * The same reply as an update: rejected by its validator unless the run is waiting,
 * so the sender (the REST API) learns atomically whether the reply was taken.
 */
export const submitReplyUpdate = defineUpdate<{ accepted: true }, [{ text: string }]>('submitReply');
/** The run's ExecutionState, at any moment. */
export const getStateQuery = defineQuery<ExecutionState>('getState');

/** Keyword search attributes, registered on the server by `npm start` / `npm test` / docker-compose. */
export const USER_ID_ATTR = defineSearchAttributeKey('ThreadlineUserId', SearchAttributeType.KEYWORD);
export const STATUS_ATTR = defineSearchAttributeKey('ThreadlineStatus', SearchAttributeType.KEYWORD);
export const SESSION_ID_ATTR = defineSearchAttributeKey('ThreadlineSessionId', SearchAttributeType.KEYWORD);
export const SEARCH_ATTRIBUTE_NAMES = [USER_ID_ATTR.name, STATUS_ATTR.name, SESSION_ID_ATTR.name];

/**
 * The user of a run, session or schedule as its search attribute: the user's key (src/text/user-key.ts),
 * so a list by any spelling finds them all; responses show the spelling from the input.
 */
export const userIdAttribute = (userId: string): SearchAttributePair => ({ key: USER_ID_ATTR, value: userKey(userId) });

/** Whether a recorded `ThreadlineUserId` names `userId`: its key, or its exact spelling (recorded before keys). */
export const holdsUser = (recorded: string | undefined, userId: string): boolean => recorded === userKey(userId) || recorded === userId;

/** A run's search attributes: its user, its status and, for a run of a session, the session. */
export const runSearchAttributes = (userId: string, status: string, sessionId?: string | null): SearchAttributePair[] => [
  userIdAttribute(userId),
  { key: STATUS_ATTR, value: status },
  ...(sessionId ? [{ key: SESSION_ID_ATTR, value: sessionId }] : []),
];

/**
 * The workflow task timeout of runs and sessions (Temporal's default: 10 s). While a local call
 * runs (src/engine/local-calls.ts) the worker keeps the task open, beating it every 80% of this,
 * which is when a query, a reply or a cancellation waiting for the run gets in; a worker that dies
 * with a task open is noticed after this long.
 */
export const WORKFLOW_TASK_TIMEOUT = '4 seconds';

/**
 * One patch id for every run feature so far. Runs recorded before it replay through the feature's own
 * patch: 'report-to-session', 'local-calls', 'close-run'. Two features exist only under it: the final
 * report sent by `closeRun`, and the status written to its search attribute once per workflow task.
 * Today's starters name it in the input (`features`), so a new run needs no patch marker: each is a
 * history event and, with the `TemporalChangeVersion` search attribute the SDK's core upserts for it, a
 * visibility write.
 */
export const RUN_FEATURES_PATCH = 'run-features-2026-11';

/** `input` as today's code starts it: with its features named (`PlanExecutionInput.features`). */
export const withRunFeatures = (input: PlanExecutionInput): PlanExecutionInput => ({ ...input, features: RUN_FEATURES_PATCH });

/**
 * Characters of a run's goal kept in its memo, which run lists show (`GET /v1/runs`, the Web UI). A memo is
 * stored with every visibility record, and the SDK warns past 2 KiB; the whole goal is in the run's input and state.
 */
export const MEMO_GOAL_CHARS = 400;

/**
 * A run's memo: its goal, cut to MEMO_GOAL_CHARS (ending in "…" when cut), and, when given, its user as spelt
 * — run lists show it, as the search attribute holds only the user's key.
 */
export function runMemo(goal: string, userId?: string): { goal: string; userId?: string } {
  return { goal: clip(goal, MEMO_GOAL_CHARS), ...(userId === undefined ? {} : { userId }) };
}

/** Skip a task: whatever of it runs is cancelled; it and its pending subtasks become `skipped`. */
export const skipTaskUpdate = defineUpdate<{ accepted: true }, [TaskSteer]>('skipTask');
/** Redo a finished, aborted or skipped task: it and its subtree are queued again, the reason and old result noted. */
export const redoTaskUpdate = defineUpdate<{ accepted: true }, [TaskSteer]>('redoTask');
/** Failure types of a refused skip or redo, read by the API: unknown index (404), not now (409), owned by a child run (sent there). */
export const STEER_REFUSALS = { unknown: 'UnknownTask', notNow: 'TaskNotNow', delegated: 'TaskDelegated' } as const;

/** The review as an update: refused by its validator unless the run waits for review of exactly this plan. */
export const submitReviewUpdate = defineUpdate<{ accepted: true; planId: string }, [ReviewDecision]>('submitReview');

/** A person's decision on the tool call waiting for approval: refused by its validator unless that step waits. */
export const submitApprovalUpdate = defineUpdate<{ accepted: true }, [ApprovalDecision]>('submitApproval');

export const PLAN_WORKFLOW_TYPE = 'planExecutionWorkflow';
/** A run's workflow, as its starters (the API, a session, a parent run) call it by PLAN_WORKFLOW_TYPE. */
export type PlanExecutionWorkflow = (input: PlanExecutionInput) => Promise<ExecutionState>;
