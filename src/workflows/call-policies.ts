/**
 * How each kind of call (src/engine/core.ts `CallPolicy`) is timed out and retried, and which calls'
 * speed decides whether the next such call runs locally (src/workflows/calls.ts): one table for runs
 * and sessions, chosen on purpose — a crashed worker's call is retried within seconds.
 */
import type { ActivityOptions } from '@temporalio/workflow';
import type { CallPolicy } from '../engine/core';
import type { CallOptions } from './calls';

export const NON_RETRYABLE = ['InvalidModelReply', 'ModelRequestRefused', 'UnknownStep'];

/** Model calls: a crashed worker is noticed by the 10 s heartbeat timeout; outages retry 5 times, then the run fails. */
export const MODEL_CALL: ActivityOptions = {
  startToCloseTimeout: '5 minutes',
  heartbeatTimeout: '10 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds', maximumAttempts: 5, nonRetryableErrorTypes: NON_RETRYABLE },
};
/** A step may run a tool for up to 5 minutes (`wait`) before its replan call. */
const STEP_CALL: ActivityOptions = { ...MODEL_CALL, startToCloseTimeout: '12 minutes' };
/** A call that may close the run when it answers (CloseOnAnswer): cancelled while local, it is waited for, so a run it closed ends answered. */
const ANSWER_CALL: CallOptions = { ...MODEL_CALL, waitsOnCancel: true };

/** A session's memory writes: quick, retried through a short outage of the store. */
const MEMORY: ActivityOptions = {
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '500 milliseconds', backoffCoefficient: 2, maximumInterval: '10 seconds', maximumAttempts: 8 },
};
/** A session's model calls: the planner's, but they name no step, so no `UnknownStep` can end them. */
const SESSION_MODEL: ActivityOptions = { ...MODEL_CALL, retry: { ...MODEL_CALL.retry, nonRetryableErrorTypes: ['InvalidModelReply', 'ModelRequestRefused'] } };
const SUMMARY_CALL: ActivityOptions = { ...SESSION_MODEL, summary: 'task_state_summary: compress older turns into the task state' };
/** The routing call: on the person's path, so short and tried twice; without an answer the message stays a reply. */
const ROUTE_CALL: ActivityOptions = {
  ...SESSION_MODEL,
  startToCloseTimeout: '30 seconds',
  retry: { ...SESSION_MODEL.retry, maximumAttempts: 2 },
  summary: 'message_route: a reply to a waiting run, or a new request?',
};
/** A message answering a held tool call: a model call for an edit in words, then the decision sent to the run. */
const APPROVAL_CALL: ActivityOptions = {
  ...SESSION_MODEL,
  startToCloseTimeout: '2 minutes',
  retry: { ...SESSION_MODEL.retry, maximumAttempts: 3 },
  summary: 'approval: a message answers a tool call held for approval',
};

/**
 * Each policy's options, and `kind`: calls of one kind are timed together to choose local or regular (a
 * session's fast memory writes say nothing of its summary model's speed). Absent: the caller's default kind.
 */
export const CALL_POLICIES: Record<CallPolicy, { options: CallOptions; kind?: string }> = {
  model: { options: MODEL_CALL },
  step: { options: STEP_CALL },
  answer: { options: ANSWER_CALL },
  memory: { options: MEMORY, kind: 'memory' },
  summary: { options: SUMMARY_CALL, kind: 'summary' },
  route: { options: ROUTE_CALL, kind: 'route' },
  approval: { options: APPROVAL_CALL, kind: 'approval' },
};
