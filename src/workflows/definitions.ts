/**
 * Signals, queries and search attributes of Threadline workflows — defined once,
 * imported by workflows, the API, the chat client and tests alike.
 */
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { ExecutionState } from '../planning/execution-state';

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

export interface PlanExecutionInput {
  userId: string;
  goal: string;
  sessionId?: string | null;
  parentRunId?: string | null;
  /** 0 for a top-level run. @default 0 */
  depth?: number;
  limits: { maxSteps: number; maxDepth: number };
  /** The memory thread of the session that started this run (its conversation and TaskState reach the planner). */
  sessionThreadId?: string | null;
}

export const PLAN_WORKFLOW_TYPE = 'planExecutionWorkflow';
