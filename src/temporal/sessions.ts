/**
 * Sessions (conversations) as the outside world sees them: create, list, read,
 * send a message, clear. Each session is one long-lived workflow
 * (`agentSessionWorkflow`) that owns its memory thread; the REST API and tests
 * go through this class rather than through Temporal directly.
 */
import { isNotReady, resendUntilTaken } from './resend';
import { readableId } from './runs';
import { SharedQueries } from './shared-queries';
import { quote, userClause, userOf } from './visibility';
import { ApplicationFailure, WorkflowNotFoundError, WorkflowUpdateFailedError, type Client, type WorkflowExecutionDescription, type WorkflowExecutionInfo } from '@temporalio/client';
import { treeLimitsOf, withTreeDefaults, type Config } from '../config';
import type { TreeLimits } from '../engine/contract';
import type { EngineChoice } from '../engine/run-inputs';
import { parsePatterns, runApproval } from '../planning/approval';
import type { ChunkInput } from '../memory/model';
import { readConversation } from '../sessions/session-chunks';
import { emptyTaskState } from '../sessions/session-model';
import { shownTurns } from '../sessions/session-state';
import { ThreadNotFoundError, type MemoryService } from '../store/memory-service';
import { SESSION_ID_ATTR, userIdAttribute, WORKFLOW_TASK_TIMEOUT } from '../workflows/definitions';
import {
  getSessionQuery,
  HANDING_OVER,
  sendMessageUpdate,
  SESSION_WORKFLOW_TYPE,
  type MessageOutcome,
  type SessionInput,
  type SessionView,
  type SessionWorkflowView,
} from '../workflows/session-definitions';

export class SessionNotFoundError extends Error {
  constructor(readonly sessionId: string) {
    super(`no session with id "${sessionId}"`);
    this.name = 'SessionNotFoundError';
  }
}

/** The session's workflow has ended (terminated in the Web UI, say): it takes no more messages. */
export class SessionClosedError extends Error {
  constructor(
    readonly sessionId: string,
    readonly status: string,
  ) {
    super(`session "${sessionId}" has ended (${status.toLowerCase().replace('_', ' ')}) and takes no more messages`);
    this.name = 'SessionClosedError';
  }
}

/** The session workflow refused the message (its update handler or validator failed). */
export class MessageRejectedError extends Error {
  constructor(
    readonly sessionId: string,
    reason: string,
  ) {
    super(`session "${sessionId}" refused the message: ${reason}`);
    this.name = 'MessageRejectedError';
  }
}

export interface SessionSummary {
  sessionId: string;
  userId: string;
  threadId: string;
  /** Whether the session's workflow is still running (it normally always is). */
  status: 'running' | 'closed';
  startedAt: string;
  closedAt: string | null;
}

/** Readable, unique workflow ids: `session-<user>-<10 hex>`. */
export function newSessionId(userId: string): string {
  return readableId('session', userId);
}

/** The session's memory thread, named after it so the Web UI and the threads API line up. */
export const sessionThreadId = (sessionId: string) => `thread_${sessionId}`;

/** The thread's first chunk: whose conversation this is (kept whatever compaction does). */
function sessionChunk(sessionId: string, userId: string): ChunkInput {
  return {
    type: 'agent',
    content: { kind: 'json', data: { session: sessionId, userId, role: 'conversation memory of this session: recent turns, task state, runs' } },
    priority: 90,
    retention: 'CRITICAL',
    agentModifiable: false,
  };
}

/** Reads answer quickly or not at all: a query needs a worker, and without one Temporal would wait 30 s. */
const QUERY_DEADLINE_MS = 5_000;
const isHandingOver = (err: unknown) => err instanceof WorkflowUpdateFailedError && err.cause instanceof ApplicationFailure && err.cause.type === HANDING_OVER;

type SessionWorkflow = (input: SessionInput) => Promise<void>;

/**
 * What a caller that reads a session again and again (its event stream) has seen: `get` fills it, and
 * answers from it while the session's history has not grown.
 */
export interface SeenSession {
  historyLength?: number;
  session?: SessionWorkflowView;
}

export class Sessions {
  /** The session queries in flight, shared by session and history length. */
  private readonly queries = new SharedQueries();
  constructor(
    private readonly client: Client,
    private readonly memory: Pick<MemoryService, 'createThread' | 'view'>,
    private readonly config: Pick<Config, 'TASK_QUEUE' | 'MAX_STEPS' | 'MAX_SUBPLAN_DEPTH'> &
      Partial<Pick<Config, 'SESSION_IDLE_MINUTES' | 'MAX_TREE_DEPTH' | 'MAX_TREE_FANOUT' | 'MAX_ITERATIONS' | 'SPIN_WARN_AT' | 'SPIN_STOP_AT' | 'REFLECTION' | 'REFLECTION_EVERY' | 'TOOL_APPROVAL'>>,
  ) {}

  /**
   * Creates the session's memory thread, then starts its workflow. `engine`: the engine of the runs its
   * messages start (a message may choose another). @default "plan"
   */
  async create(request: { userId: string; engine?: EngineChoice; approval?: string[] }): Promise<{ sessionId: string; threadId: string }> {
    const sessionId = newSessionId(request.userId);
    // The operator's TOOL_APPROVAL, plus what the session adds (it can add, never remove).
    const approval = runApproval(parsePatterns(this.config.TOOL_APPROVAL), request.approval);
    const threadId = sessionThreadId(sessionId);
    await this.memory.createThread({
      threadId,
      userId: request.userId,
      chunks: [sessionChunk(sessionId, request.userId)],
      meta: { origin: 'system', reason: 'memory thread of a new session', trigger: `session ${sessionId} created` },
    });
    const input: SessionInput = {
      sessionId,
      userId: request.userId,
      threadId,
      limits: { maxSteps: this.config.MAX_STEPS, maxDepth: this.config.MAX_SUBPLAN_DEPTH },
      ...(request.engine && request.engine !== 'plan' ? { engine: request.engine } : {}),
      ...(this.treeLimits() ? { treeLimits: this.treeLimits() } : {}),
      ...(approval.length ? { approval } : {}),
      ...(this.config.SESSION_IDLE_MINUTES ? { settings: { idleTimeoutMs: Math.round(this.config.SESSION_IDLE_MINUTES * 60_000) } } : {}),
    };
    await this.client.workflow.start<SessionWorkflow>(SESSION_WORKFLOW_TYPE, {
      taskQueue: this.config.TASK_QUEUE,
      workflowId: sessionId,
      workflowTaskTimeout: WORKFLOW_TASK_TIMEOUT,
      args: [input],
      staticSummary: `${request.userId}: conversation`.slice(0, 200),
      memo: { userId: request.userId, threadId },
      typedSearchAttributes: [userIdAttribute(request.userId), { key: SESSION_ID_ATTR, value: sessionId }],
    });
    return { sessionId, threadId };
  }

  /** The user's sessions whose workflow is running (each may idle up to SESSION_IDLE_MINUTES): from visibility, so a moment behind. */
  async countOpen(userId: string): Promise<number> {
    const { count } = await this.client.workflow.count(`WorkflowType = ${quote(SESSION_WORKFLOW_TYPE)} AND ExecutionStatus = 'Running' AND ${userClause(userId)}`);
    return count;
  }

  /** Sessions, newest first; one entry per session however often it continued as new. */
  async list(filter: { userId?: string; limit?: number }): Promise<SessionSummary[]> {
    // A session that continued as new leaves closed runs behind under the same id: only its latest counts.
    const clauses = [`WorkflowType = ${quote(SESSION_WORKFLOW_TYPE)}`, `ExecutionStatus != 'ContinuedAsNew'`];
    if (filter.userId) clauses.push(userClause(filter.userId));
    const seen = new Set<string>();
    const sessions: SessionSummary[] = [];
    for await (const info of this.client.workflow.list({ query: clauses.join(' AND ') })) {
      if (seen.has(info.workflowId)) continue;
      seen.add(info.workflowId);
      sessions.push(summarize(info));
      if (sessions.length >= (filter.limit ?? 100)) break;
    }
    return sessions;
  }

  /**
   * The session now: its runs as its workflow sees them, its chatHistory and TaskState as its thread
   * holds them (the one place they live). `version` adds the thread head's sequence number to the
   * workflow's, so it grows when either changes.
   */
  async get(sessionId: string, seen?: SeenSession): Promise<SessionView> {
    const { historyLength } = await this.describe(sessionId);
    // Its workflow's state changes only with its history: asked again only when that grew.
    const session =
      seen?.historyLength === historyLength && seen.session
        ? seen.session
        : await this.queries.ask(sessionId, historyLength, () =>
            this.client.connection.withDeadline(Date.now() + QUERY_DEADLINE_MS, () => this.client.workflow.getHandle<SessionWorkflow>(sessionId).query(getSessionQuery)),
          );
    if (seen) Object.assign(seen, { historyLength, session });
    // A session that has just started may not have made its thread yet: an empty conversation.
    const thread = await this.memory.view(session.threadId).catch((err: unknown) => {
      if (err instanceof ThreadNotFoundError) return { state: { seq: 0 }, chunks: [] };
      throw err;
    });
    // Every turn the thread holds: the session's compression keeps them few.
    const conversation = readConversation(thread.chunks, Number.POSITIVE_INFINITY);
    return { ...session, chatHistory: shownTurns(conversation.recentTurns, session.runs), taskState: conversation.taskState ?? emptyTaskState(), version: session.version + thread.state.seq };
  }

  /** The tree limits the session's tree runs get, when the configuration names them. */
  private treeLimits(): TreeLimits | undefined {
    const c = this.config;
    if (c.MAX_TREE_DEPTH === undefined || c.MAX_TREE_FANOUT === undefined || c.MAX_ITERATIONS === undefined || c.SPIN_WARN_AT === undefined || c.SPIN_STOP_AT === undefined) return undefined;
    return treeLimitsOf(
      withTreeDefaults({
        MAX_TREE_DEPTH: c.MAX_TREE_DEPTH,
        MAX_TREE_FANOUT: c.MAX_TREE_FANOUT,
        MAX_ITERATIONS: c.MAX_ITERATIONS,
        SPIN_WARN_AT: c.SPIN_WARN_AT,
        SPIN_STOP_AT: c.SPIN_STOP_AT,
        REFLECTION: c.REFLECTION,
        REFLECTION_EVERY: c.REFLECTION_EVERY,
      }),
    );
  }

  /**
   * Sends a person's message; resolves with what became of it once the session has routed it.
   * `engine`: a run the message starts runs on it (else on the session's engine).
   */
  async send(sessionId: string, text: string, options: { engine?: EngineChoice } = {}): Promise<MessageOutcome> {
    // Sent at once: what the id names (no session, another workflow, an ended session) is looked up only when the message fails.
    const handle = this.client.workflow.getHandle<SessionWorkflow>(sessionId);
    try {
      // Turned away while the session drains its queue to continue as new (the next run takes it), or
      // caught in a workflow task the server failed: either way not accepted, so it is sent again.
      return await resendUntilTaken(
        this.client,
        (updateId) => handle.executeUpdate(sendMessageUpdate, { args: [{ text, ...(options.engine ? { engine: options.engine } : {}) }], updateId }),
        (err) => isHandingOver(err) || isNotReady(err),
      );
    } catch (err) {
      if (err instanceof WorkflowUpdateFailedError || err instanceof WorkflowNotFoundError) await this.handle(sessionId, { mustRun: true });
      if (err instanceof WorkflowUpdateFailedError) {
        const cause = err.cause instanceof Error ? err.cause.message : err.message;
        throw new MessageRejectedError(sessionId, cause);
      }
      if (err instanceof WorkflowNotFoundError) throw new SessionNotFoundError(sessionId);
      throw err;
    }
  }

  /** Forgets the conversation (recent turns, TaskState, pending runs): the `/clear` command. */
  clear(sessionId: string): Promise<MessageOutcome> {
    return this.send(sessionId, '/clear');
  }

  /**
   * Ends the conversation (the `/end` command): unfinished runs are cancelled and what is worth keeping
   * goes to long-term memory. A session that has already ended is left as it is.
   */
  async end(sessionId: string): Promise<{ sessionId: string; status: 'closed'; reply: string | null }> {
    const description = await this.describe(sessionId);
    if (description.status.name !== 'RUNNING') return { sessionId, status: 'closed', reply: null };
    try {
      const outcome = await this.send(sessionId, '/end');
      await this.client.workflow
        .getHandle(sessionId)
        .result()
        .catch(() => undefined);
      return { sessionId, status: 'closed', reply: outcome.reply ?? null };
    } catch (err) {
      // Ended between the check and the message (idle, say): the same outcome.
      if (err instanceof SessionClosedError || (err instanceof MessageRejectedError && err.message.includes('has ended'))) return { sessionId, status: 'closed', reply: null };
      throw err;
    }
  }

  /** The user a session belongs to (compare with `sameUser`), or null when there is no such session. */
  async ownerOf(sessionId: string): Promise<string | null> {
    try {
      return userOf(await this.describe(sessionId));
    } catch (err) {
      if (err instanceof SessionNotFoundError) return null;
      throw err;
    }
  }

  /** The handle of a session workflow (one that still runs, with `mustRun`). */
  private async handle(sessionId: string, options: { mustRun?: boolean } = {}) {
    const description = await this.describe(sessionId);
    if (options.mustRun && description.status.name !== 'RUNNING') throw new SessionClosedError(sessionId, description.status.name);
    return this.client.workflow.getHandle<SessionWorkflow>(sessionId);
  }

  /** The session's workflow as the server describes it; anything else with that id (a run, say) is not a session. */
  private async describe(sessionId: string): Promise<WorkflowExecutionDescription> {
    try {
      const description = await this.client.workflow.getHandle(sessionId).describe();
      if (description.type !== SESSION_WORKFLOW_TYPE) throw new SessionNotFoundError(sessionId);
      return description;
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) throw new SessionNotFoundError(sessionId);
      throw err;
    }
  }
}

function summarize(info: WorkflowExecutionInfo): SessionSummary {
  const sessionId = info.workflowId;
  const memoThread = info.memo?.threadId;
  return {
    sessionId,
    userId: userOf(info) ?? '',
    threadId: typeof memoThread === 'string' ? memoThread : sessionThreadId(sessionId),
    status: info.status.name === 'RUNNING' ? 'running' : 'closed',
    startedAt: info.startTime.toISOString(),
    closedAt: info.closeTime?.toISOString() ?? null,
  };
}
