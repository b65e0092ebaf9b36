/**
 * Plan executions as the outside world sees them: start, read, reply, cancel,
 * list. The REST API is a thin layer over this; so are tests that skip HTTP.
 */
import { randomBytes } from 'node:crypto';
import {
  ApplicationFailure,
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
  type Client,
  type UpdateDefinition,
  type WorkflowExecutionDescription,
  type WorkflowExecutionInfo,
  type WorkflowStartOptions,
} from '@temporalio/client';
import { treeLimitsOf, withTreeDefaults, type Config } from '../config';
import type { TaskSpec } from '../planning/task-tree';
import { isTerminal, type ExecutionState, type RunStatus } from '../planning/execution-state';
import {
  getStateQuery,
  PLAN_WORKFLOW_TYPE,
  runSearchAttributes,
  submitReplyUpdate,
  submitReviewUpdate,
  submitApprovalUpdate,
  redoTaskUpdate,
  skipTaskUpdate,
  STEER_REFUSALS,
  SESSION_ID_ATTR,
  STATUS_ATTR,
  runMemo,
  withRunFeatures,
  WORKFLOW_TASK_TIMEOUT,
} from '../workflows/definitions';
import { DEFAULT_RESEND, isNotReady, isUnavailable, resendUntilTaken, type ResendPolicy } from './resend';
import { SharedQueries } from './shared-queries';
import { quote, userClause, userOf } from './visibility';
import type { Allow } from '../planning/capabilities';
import { parsePatterns, runApproval, type ApprovalDecision } from '../planning/approval';
import type { PlanExecutionInput, ReviewDecision, TaskSteer } from '../engine/contract';
import { engineFields, type EngineChoice } from '../engine/run-inputs';
import type { ReflectionMode } from '../engine/reflection';

/** A run's workflow options but its id, shared by `Runs.start` and a schedule's action. */
export type RunStartOptions = Pick<WorkflowStartOptions, 'taskQueue' | 'workflowTaskTimeout' | 'staticSummary' | 'memo' | 'typedSearchAttributes'> & { args: [PlanExecutionInput] };

/** What a run is started with (`POST /v1/runs`, a schedule's occurrences). */
export interface StartRunRequest {
  userId: string;
  goal: string;
  sessionId?: string | null;
  engine?: EngineChoice;
  review?: boolean;
  /** Tree runs: self-reflection (src/engine/reflection.ts). @default REFLECTION */
  reflection?: ReflectionMode;
  /** A tree run from a blueprint: its name and its tree, expanded with validated parameters. */
  blueprint?: { name: string; tree: TaskSpec };
  /** Capability switches: what the run may not do (src/planning/capabilities.ts). @default everything on */
  allow?: Allow;
  /** Tools whose calls wait for approval, added to TOOL_APPROVAL (never removing one). */
  approval?: string[];
}

export class RunNotFoundError extends Error {
  constructor(readonly runId: string) {
    super(`no run with id "${runId}"`);
    this.name = 'RunNotFoundError';
  }
}

export class RunNotWaitingError extends Error {
  constructor(
    readonly runId: string,
    readonly status: RunStatus,
    what = 'a reply',
    why?: string,
  ) {
    super(why ? `run "${runId}" does not take ${what}: ${why}` : `run "${runId}" is ${status}, not waiting for ${what}`);
    this.name = 'RunNotWaitingError';
  }
}

/** No task with that index in the run (404). */
export class TaskNotFoundError extends Error {
  constructor(
    readonly runId: string,
    message: string,
  ) {
    super(message);
    this.name = 'TaskNotFoundError';
  }
}

/** The task cannot be skipped or redone now (409): finished, not started, the run not executing… */
export class TaskNotNowError extends Error {
  constructor(
    readonly runId: string,
    message: string,
  ) {
    super(message);
    this.name = 'TaskNotNowError';
  }
}

export interface RunSummary {
  runId: string;
  userId: string;
  sessionId: string | null;
  parentRunId: string | null;
  goal: string;
  status: RunStatus | 'unknown';
  startedAt: string | null;
  closedAt: string | null;
}

/** Readable, unique workflow ids: `run-<user>-<random>`; sub-plans append `.s<step>`. */
export function newRunId(userId: string): string {
  return readableId('run', userId);
}

/** `<kind>-<user slug>-<10 hex>`: tells a person in the Web UI whose it is, and never collides in practice. */
export function readableId(kind: string, userId: string): string {
  const slug =
    userId
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-|-$/g, '')
      .slice(0, 32) || 'user';
  return `${kind}-${slug}-${randomBytes(5).toString('hex')}`;
}

const QUERY_DEADLINE_MS = 5000;

export class Runs {
  constructor(
    private readonly client: Client,
    private readonly config: Pick<
      Config,
      'TASK_QUEUE' | 'MAX_STEPS' | 'MAX_SUBPLAN_DEPTH' | 'MAX_TREE_DEPTH' | 'MAX_TREE_FANOUT' | 'MAX_ITERATIONS' | 'SPIN_WARN_AT' | 'SPIN_STOP_AT' | 'PLAN_REVIEW'
    > &
      Partial<Pick<Config, 'REFLECTION' | 'REFLECTION_EVERY' | 'TOOL_APPROVAL'>>,
    /** How a person's input is resent while no worker takes it (resend.ts). */
    private readonly resend: ResendPolicy = DEFAULT_RESEND,
  ) {}

  /** The state queries in flight, shared by run and history length. */
  private readonly queries = new SharedQueries();

  /**
   * Starts a run: seed 000's planner, or with `engine: "tree"` seed 003's task tree, which waits
   * for a person's review of its plan when `review` is true or PLAN_REVIEW=always.
   */
  async start(request: StartRunRequest): Promise<{ runId: string; status: RunStatus }> {
    const runId = newRunId(request.userId);
    await this.client.workflow.start(PLAN_WORKFLOW_TYPE, { workflowId: runId, ...this.startOptions(request) });
    return { runId, status: 'planning' };
  }

  /**
   * How every run is started — by `start`, or by a schedule's action at each occurrence: the workflow's
   * input and its options but the id.
   */
  startOptions(request: StartRunRequest): RunStartOptions {
    const tree = request.engine === 'tree' || request.engine === 'react';
    const limits = treeLimitsOf(withTreeDefaults(this.config));
    const approval = runApproval(parsePatterns(this.config.TOOL_APPROVAL), request.approval);
    const input: PlanExecutionInput = {
      userId: request.userId,
      goal: request.goal,
      sessionId: request.sessionId ?? null,
      limits: { maxSteps: this.config.MAX_STEPS, maxDepth: this.config.MAX_SUBPLAN_DEPTH },
      // Plan runs keep the input they always had, so their histories look as before.
      ...engineFields(request.engine, request.reflection ? { ...limits, reflection: { every: limits.reflection?.every ?? 0, mode: request.reflection } } : limits),
      ...(tree ? { review: request.review === true || this.config.PLAN_REVIEW === 'always' } : {}),
      ...(tree && request.blueprint ? { blueprint: request.blueprint } : {}),
      // Only switches turned off are kept: a run with everything on has the input it always had.
      ...(request.allow && Object.values(request.allow).includes(false) ? { allow: request.allow } : {}),
      ...(approval.length ? { approval } : {}),
    };
    return {
      taskQueue: this.config.TASK_QUEUE,
      workflowTaskTimeout: WORKFLOW_TASK_TIMEOUT,
      args: [withRunFeatures(input)],
      staticSummary: `${request.userId}: ${request.goal}`.slice(0, 200),
      memo: runMemo(request.goal, request.userId),
      typedSearchAttributes: runSearchAttributes(request.userId, 'planning', request.sessionId),
    };
  }

  /**
   * What a run shows, to pass a decision down to the run below it that waits for it; null when it cannot be
   * read now (no worker answers the query yet, e.g. just after a crash): the decision then goes to the run itself.
   */
  private async shown(runId: string): Promise<ExecutionState | null> {
    try {
      return await this.get(runId);
    } catch (err) {
      if (err instanceof RunNotFoundError) throw err;
      return null;
    }
  }

  /** The run's ExecutionState: by query while it runs, from its result once it has ended. */
  async get(runId: string): Promise<ExecutionState> {
    return this.stateOf(runId, await this.describe(runId));
  }

  /**
   * The run's state and its history's length, or no state when the history is still `seenHistoryLength`
   * events long: a run's state changes only in its workflow tasks, and every task adds events (its
   * start, its completion), so nothing has changed and no query is needed. An event stream polls this:
   * a query of a run the worker no longer holds replays it.
   */
  async getIfMoved(runId: string, seenHistoryLength?: number): Promise<{ state: ExecutionState | null; historyLength: number }> {
    const description = await this.describe(runId);
    if (seenHistoryLength !== undefined && description.historyLength === seenHistoryLength) return { state: null, historyLength: seenHistoryLength };
    return { state: await this.stateOf(runId, description), historyLength: description.historyLength };
  }

  private async stateOf(runId: string, description: WorkflowExecutionDescription): Promise<ExecutionState> {
    const handle = this.client.workflow.getHandle<(input: PlanExecutionInput) => Promise<ExecutionState>>(runId);
    const closed = description.status.name;
    try {
      if (closed === 'COMPLETED') return await handle.result();
      const state = await this.queries.ask(runId, description.historyLength, () =>
        // A query needs a worker; without one, fail fast instead of hanging for Temporal's default 30 s.
        this.client.connection.withDeadline(Date.now() + QUERY_DEADLINE_MS, () => handle.query(getStateQuery)),
      );
      // Ended from outside the workflow (terminated in the Web UI, timed out): say so instead of the last live status.
      if (closed === 'TERMINATED' || closed === 'TIMED_OUT' || closed === 'FAILED' || closed === 'CANCELLED') {
        const status = closed === 'CANCELLED' ? 'cancelled' : 'failed';
        return { ...state, status, version: state.version + 1, lastError: state.lastError ?? `workflow ${closed.toLowerCase().replace('_', ' ')}` };
      }
      return state;
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) throw new RunNotFoundError(runId);
      throw err;
    }
  }

  /**
   * Delivers a person's reply. Needs no query (so no worker must answer in time): the server refuses
   * the update for a run that has ended or does not exist (then its description says which), and
   * the update's validator refuses atomically when the run is not waiting. A reply the server could
   * not take yet (a worker busy replaying runs, a frontend restart), or whose attempt timed out, is
   * resent under the same update id until it is taken, refused, or 2 min pass (then 503): a reply
   * is never lost to load and never taken twice.
   */
  async reply(runId: string, text: string): Promise<void> {
    await this.sendToRun(runId, submitReplyUpdate, { text }, this.notWaiting(runId, 'a reply'));
  }

  /**
   * How a person's reply, review or approval is refused (409): the run has ended, or the update's
   * validator said why it does not take `what` now. The validator's reason names the run's own state;
   * visibility's status attribute can lag it (a run that took another reply still shows waiting_user).
   */
  private notWaiting(runId: string, what: string) {
    return {
      ended: (status: RunStatus) => new RunNotWaitingError(runId, status, what),
      refused: async (err: WorkflowUpdateFailedError): Promise<void> => {
        const why = err.cause instanceof Error ? err.cause.message : err.message;
        throw new RunNotWaitingError(runId, closedStatus(await this.describe(runId)), what, why);
      },
    };
  }

  /**
   * A person's input to a running run, as an update, resent under one id while the server cannot
   * take it yet (resend.ts). The update itself finds out whether the run exists and runs: the server
   * refuses it for a run that has ended or never existed, and only then is the run described (no
   * worker involved) to say which — one round trip to the server per input instead of two.
   * `ended` makes the error for a run that has ended; `refused` deals with a refusal by the update's
   * validator (it throws the error to give, or forwards the input).
   */
  private async sendToRun<Arg>(
    runId: string,
    update: UpdateDefinition<unknown, [Arg]>,
    arg: Arg,
    on: { ended: (status: RunStatus) => Error; refused: (failure: WorkflowUpdateFailedError) => Promise<void> },
  ): Promise<void> {
    const handle = this.client.workflow.getHandle(runId);
    try {
      await resendUntilTaken(
        this.client,
        (updateId) => handle.executeUpdate(update, { args: [arg], updateId }),
        (err) => isNotReady(err) || isUnavailable(err),
        this.resend,
      );
    } catch (err) {
      // Refused by a validator, or by a workflow of another type that has no such update: describe() 404s for the latter.
      if (err instanceof WorkflowUpdateFailedError) return on.refused(err);
      // The run has ended (the server refuses updates to a closed workflow) or never existed: say
      // how it ended; describe() 404s if there is no such run.
      if (err instanceof WorkflowNotFoundError) throw on.ended(closedStatus(await this.describe(runId)));
      // Given up (resend.ts): still a 404 when the id names no run.
      await this.describe(runId);
      throw err;
    }
  }

  /** The user a run belongs to (compare with `sameUser`), or null when there is no such run. */
  async ownerOf(runId: string): Promise<string | null> {
    try {
      return userOf(await this.describe(runId));
    } catch (err) {
      if (err instanceof RunNotFoundError) return null;
      throw err;
    }
  }

  /** The run's workflow as the server describes it (no worker involved); 404 for anything else. */
  private async describe(runId: string): Promise<WorkflowExecutionDescription> {
    try {
      const description = await this.client.workflow.getHandle(runId).describe();
      if (description.type !== PLAN_WORKFLOW_TYPE) throw new RunNotFoundError(runId);
      return description;
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) throw new RunNotFoundError(runId);
      throw err;
    }
  }

  /**
   * A person's decision on the plan a tree run waits with: approve (optionally edited), revise
   * (with feedback or an edited tree) or reject. Refused (409) unless the run waits for a review
   * of exactly `decision.planId`; a decision the server cannot take yet is resent, as replies are.
   */
  async review(runId: string, decision: ReviewDecision): Promise<void> {
    // A run that shows its child's plan review (a group's, a sub-agent's) passes the decision down to it.
    const shown = await this.shown(runId);
    if (shown?.status === 'waiting_review' && shown.reviewIn && shown.reviewIn.runId !== runId) return this.review(shown.reviewIn.runId, decision);
    await this.sendToRun(runId, submitReviewUpdate, decision, this.notWaiting(runId, 'a review'));
  }

  /** A person's decision on the tool call waiting for approval (409 unless that step waits). */
  async approve(runId: string, decision: ApprovalDecision): Promise<void> {
    // A run that shows a held call of a run below it (a sub-plan's, a group's, a sub-agent's) passes the decision down.
    const shown = await this.shown(runId);
    const below = shown?.status === 'waiting_approval' ? shown.pendingApproval?.runId : undefined;
    if (below && below !== runId) return this.approve(below, decision);
    await this.sendToRun(runId, submitApprovalUpdate, decision, this.notWaiting(runId, 'an approval'));
  }

  /** Skips a task of a tree run while it executes: whatever of it runs is cancelled. */
  skip(runId: string, index: string, reason?: string): Promise<void> {
    return this.steer(skipTaskUpdate, runId, { index, ...(reason ? { reason } : {}) });
  }

  /** Queues a finished, aborted or skipped task of a tree run again, with the reason and its old result noted. */
  redo(runId: string, index: string, reason?: string): Promise<void> {
    return this.steer(redoTaskUpdate, runId, { index, ...(reason ? { reason } : {}) });
  }

  /** A skip or redo, sent to the run that executes the task: a group's tasks belong to its child run. */
  private async steer(update: typeof skipTaskUpdate, runId: string, steer: TaskSteer, hops = 0): Promise<void> {
    await this.sendToRun(runId, update, steer, {
      ended: (status) => new TaskNotNowError(runId, `run "${runId}" is ${status}: tasks can be skipped or redone while it executes`),
      refused: async (err) => {
        if (!(err.cause instanceof ApplicationFailure)) throw new TaskNotNowError(runId, err.message);
        const { type, message, details } = err.cause;
        const child = details?.[0];
        if (type === STEER_REFUSALS.delegated && typeof child === 'string' && hops < 10) return this.steer(update, child, steer, hops + 1);
        if (type === STEER_REFUSALS.unknown) throw new TaskNotFoundError(runId, message);
        throw new TaskNotNowError(runId, message);
      },
    });
  }

  async cancel(runId: string): Promise<void> {
    const state = await this.get(runId);
    if (isTerminal(state.status)) return; // cancelling an ended run is a no-op, not an error
    await this.client.workflow.getHandle(runId).cancel();
  }

  async list(filter: { userId?: string; status?: RunStatus; limit?: number }): Promise<RunSummary[]> {
    const clauses = [`WorkflowType = ${quote(PLAN_WORKFLOW_TYPE)}`];
    if (filter.userId) clauses.push(userClause(filter.userId));
    if (filter.status) clauses.push(`${STATUS_ATTR.name} = ${quote(filter.status)}`);
    const runs: RunSummary[] = [];
    for await (const info of this.client.workflow.list({ query: clauses.join(' AND ') })) {
      runs.push(summarize(info));
      if (runs.length >= (filter.limit ?? 100)) break;
    }
    return runs;
  }
}

/** A run's status as the server knows it without asking the workflow: its search attribute, or how it closed. */
export function closedStatus(info: Pick<WorkflowExecutionInfo, 'status' | 'typedSearchAttributes'>): RunStatus {
  const name = info.status.name;
  if (name === 'COMPLETED') return (info.typedSearchAttributes.get(STATUS_ATTR) as RunStatus | undefined) ?? 'completed';
  if (name === 'CANCELLED') return 'cancelled';
  if (name !== 'RUNNING' && name !== 'CONTINUED_AS_NEW') return 'failed';
  return (info.typedSearchAttributes.get(STATUS_ATTR) as RunStatus | undefined) ?? 'running';
}

function summarize(info: WorkflowExecutionInfo): RunSummary {
  const sa = info.typedSearchAttributes;
  return {
    runId: info.workflowId,
    userId: userOf(info) ?? '',
    sessionId: sa.get(SESSION_ID_ATTR) ?? null,
    parentRunId: info.parentExecution?.workflowId ?? null,
    goal: typeof info.memo?.goal === 'string' ? info.memo.goal : '',
    status: (sa.get(STATUS_ATTR) as RunStatus | undefined) ?? 'unknown',
    startedAt: info.startTime.toISOString(),
    closedAt: info.closeTime?.toISOString() ?? null,
  };
}
