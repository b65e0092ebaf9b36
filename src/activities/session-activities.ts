/**
 * The activities of a session (AgentSessionWorkflow): everything it does to its
 * memory thread — it owns that thread; the one other writer is its runs' closing call, which adds
 * their answers (src/activities/session-turns.ts) — and the
 * `task_state_summary` model call that compresses older turns into TaskState — and the start of
 * its runs (src/activities/run-starts.ts) — and the answers its messages give to its runs' tool calls
 * held for approval (src/activities/session-approvals.ts).
 */
import type { ModelProvider } from '../llm/provider';
import { completeStructured } from '../llm/structured';
import { isTaskStateChunk, isTurnChunk, planCompression, readConversation, taskStateChunk } from '../sessions/session-chunks';
import { emptyTaskState, estimateTokens, type TaskState, type Turn } from '../sessions/session-model';
import { DEFAULT_SESSION_LIMITS } from '../sessions/session-state';
import { describeDropped, enforceTaskStateRules } from '../sessions/task-state-rules';
import { taskStateSummaryContext, taskStateSummaryMessages } from '../calls/task-state-summary';
import { messageRouteMessages, type MessageRouteContext, type MessageRouteReply } from '../calls/message-route';
import { operationIdFor, type MemoryService } from '../store/memory-service';
import type { ToolRegistry } from '../tools/registry';
import { describeCodeVersion } from '../planning/code-version';
import { codeVersionOf } from './code-version';
import { idempotencyKey, withHeartbeats } from './heartbeat';
import type { LongTermMemory } from '../longterm/contract';
import { asFailure } from './plan-activities';
import type { KeyValueStore } from '../store/kv';
import type { MemoryWorkflowSettings } from '../workflows/memory-definitions';
import { sendMemoryJob } from './memory-jobs';
import { startSessionRun, type StartRunInput } from './run-starts';
import { addSessionTurns, sessionMeta, shortHash } from './session-turns';
import type { RunReport, SessionCalls } from '../engine/contract';
import { createApprovalActivities } from './session-approvals';

export interface SessionActivityDeps {
  provider: ModelProvider;
  tools: ToolRegistry;
  memory: MemoryService;
  /** Model replies failing validation are sent back this many times in total. @default 3 */
  repairAttempts?: number;
  /** react_mem: every conversation message also goes to the user's long-term recall memory. */
  longterm?: LongTermMemory;
  /** Where each user's TaskState is kept across sessions (`agent_task_state_<userId>`), under either memory manager. */
  store: KeyValueStore;
  /** react_mem's passes: a conversation's end hands its promotion to the user's memory workflow (absent: off). */
  memoryPasses?: MemoryWorkflowSettings;
  /** Worker Deployment Versioning: waiting runs finish on their own version, so a deploy is no change of capabilities for a session. @default false */
  versioned?: boolean;
}

const TASK_STATES = 'task-state';
/** Seed 002's name for a user's TaskState across sessions. */
export const userTaskStateKey = (userId: string) => `agent_task_state_${userId}`;

/**
 * What this worker can do, as a fingerprint: its model, prompts and tools (the version runs record).
 * When it changes, plans made before are stale (seed 000's workflow versioning).
 */
export const capabilitiesFingerprint = (deps: Pick<SessionActivityDeps, 'provider' | 'tools' | 'versioned'>): string =>
  deps.versioned ? 'versioned deployment' : describeCodeVersion(codeVersionOf(deps.provider, deps.tools));

export function createSessionActivities(deps: SessionActivityDeps) {
  const attempts = deps.repairAttempts ?? 3;
  /** TaskState is kept per user (seed 000: keyed by userID; seed 002's agent_task_state_<userId>), under either memory manager. */
  const userTaskStates = deps.store;
  const putTaskState = async (userId: string | null, taskState: TaskState | null) => {
    if (userId) await userTaskStates.put(TASK_STATES, userTaskStateKey(userId), taskState);
  };
  /** Keeps `taskState` as the thread owner's; null forgets it. */
  const saveTaskState = async (threadId: string, taskState: TaskState | null) => {
    await putTaskState(await deps.memory.ownerOf(threadId), taskState);
  };

  return {
    // A message that answers a tool call held for approval (issue 28).
    ...createApprovalActivities(deps),
    /**
     * At the start of each run of a session: its thread exists, and what the worker can do now. A new
     * session (`first`) starts with the TaskState the user's last session left.
     */
    async openSession({ sessionId, userId, threadId, first }: { sessionId: string; userId: string; threadId: string; first?: boolean }): Promise<{ capabilities: string }> {
      const thread = await deps.memory.ensureThread({
        threadId,
        userId,
        chunks: [
          {
            type: 'agent',
            content: { kind: 'json', data: { session: sessionId, userId, role: 'conversation memory of this session: recent turns, task state, runs' } },
            priority: 90,
            retention: 'CRITICAL',
            agentModifiable: false,
          },
        ],
        meta: sessionMeta(sessionId, 'memory thread of a session', `session ${sessionId} started`),
      });
      const carried = first ? await userTaskStates.get<TaskState | null>(TASK_STATES, userTaskStateKey(userId)) : undefined;
      if (carried) {
        const { chunks } = await deps.memory.view(thread.id);
        if (!chunks.some((c) => isTaskStateChunk(c) || isTurnChunk(c))) {
          await deps.memory.apply(thread.id, { op: 'add', chunks: [taskStateChunk(sessionId, carried)] }, sessionMeta(sessionId, "the task state of this user's last session", 'new session'), {
            operationId: operationIdFor(`${idempotencyKey()}:task-state`),
          });
        }
      }
      return { capabilities: capabilitiesFingerprint(deps) };
    },

    /**
     * Adds turns to the thread (idempotently: a retry writes nothing twice, nor does another writer with
     * the same `key`) and returns their message ids — plus the capabilities fingerprint, so every message
     * notices a change of tools. With `start`, then starts the run the message asks for (it reads the turn
     * in its prompt).
     */
    async recordTurns({
      sessionId,
      threadId,
      turns,
      start,
      key: given,
    }: {
      sessionId: string;
      threadId: string;
      turns: Turn[];
      start?: StartRunInput;
      key?: string;
    }): Promise<{ messageIds: string[]; capabilities: string; ended?: RunReport }> {
      // A message that starts a run is named by its run: a replay that handles it at another point of the session's history records it once.
      const key = start ? `start:${start.runId}` : (given ?? idempotencyKey());
      const messageIds = await addSessionTurns(deps, { sessionId, threadId, turns, key });
      const started = start ? await startSessionRun(start) : {};
      return { messageIds, capabilities: capabilitiesFingerprint(deps), ...started };
    },

    /**
     * Seed 000's compression, from what the thread holds now (a person's edit or rollback included):
     * `task_state_summary` folds the turns before the last `keep` into a new TaskState, entries breaking
     * seed 000's rules dropped (and noted in the audit). One operation then replaces those turns and the
     * old TaskState chunk with the new one, which names the folded turns so `retrieve_message` still finds
     * them: readers never see half a compression, and a retry finds either all of it done or none.
     * Returns the token estimates of the turns left. (`keepMessageIds`: what sessions from before send.)
     */
    /**
     * Seed 000's routing (`message_route`): a message sent while runs wait is a reply (to which run) or
     * a new request. The session treats a failure as no judgement: the message stays a reply.
     */
    async judgeMessage(input: { text: string; waiting: MessageRouteContext['waiting'] }): Promise<MessageRouteReply> {
      const context: MessageRouteContext = { call: 'message_route', text: input.text, waiting: input.waiting };
      return withHeartbeats(async (signal) => {
        try {
          return await completeStructured(deps.provider, { name: 'message_route', messages: messageRouteMessages(context), context }, attempts, signal);
        } catch (err) {
          throw asFailure(err);
        }
      });
    },

    async compressHistory(input: { sessionId: string; threadId: string; keep?: number; keepMessageIds?: string[] }): Promise<{ taskState: TaskState; window: number[] }> {
      return withHeartbeats(async (signal) => {
        const key = idempotencyKey();
        const keep = input.keep ?? input.keepMessageIds?.length ?? DEFAULT_SESSION_LIMITS.keepAfterCompression;
        const { chunks } = await deps.memory.view(input.threadId);
        const plan = planCompression(input.sessionId, chunks, keep);
        if (!plan) {
          const { taskState, recentTurns } = readConversation(chunks, Number.POSITIVE_INFINITY);
          return { taskState: taskState ?? emptyTaskState(), window: recentTurns.map((t) => estimateTokens(t.text)) };
        }
        const context = taskStateSummaryContext(plan.previous ?? emptyTaskState(), plan.older);
        let reply;
        try {
          reply = await completeStructured(deps.provider, { name: 'task_state_summary', messages: taskStateSummaryMessages(context), context }, attempts, signal);
        } catch (err) {
          throw asFailure(err);
        }
        const { taskState: kept, dropped } = enforceTaskStateRules(reply);
        const taskState: TaskState = { ...kept, UpdatedAt: new Date().toISOString() };
        await deps.memory.apply(
          input.threadId,
          { op: 'batch_replace', chunkIds: plan.replaced, chunk: plan.chunk(taskState) },
          sessionMeta(input.sessionId, 'older turns compressed into the task state', `${plan.older.length} older turn(s) left the recent history`),
          { operationId: operationIdFor(`${key}:compress`), notes: dropped.map((d) => `dropped by the TaskState rules: ${describeDropped(d)}`) },
        );
        await deps.memory.compactIfNeeded(input.threadId, { reason: 'soft token limit exceeded', trigger: `${input.sessionId}: compression` });
        await saveTaskState(input.threadId, taskState);
        return { taskState, window: plan.kept.map((t) => estimateTokens(t.text)) };
      });
    },

    /** The conversation as the thread holds it now, for `/state`. */
    async readSession({ threadId, maxTurns }: { threadId: string; maxTurns: number }): Promise<{ chatHistory: Turn[]; taskState: TaskState }> {
      const conversation = readConversation((await deps.memory.view(threadId)).chunks, maxTurns);
      return { chatHistory: conversation.recentTurns, taskState: conversation.taskState ?? emptyTaskState() };
    },

    /** `/clear`: the thread forgets the turns and the TaskState (with the compressed turns it names); the audit records it either way. */
    async clearSession({ sessionId, threadId, cancelledRuns }: { sessionId: string; threadId: string; cancelledRuns: string[] }): Promise<void> {
      const key = idempotencyKey();
      const meta = sessionMeta(sessionId, '/clear', `the person cleared the session${cancelledRuns.length > 0 ? `; cancelled ${cancelledRuns.join(', ')}` : ''}`);
      const { chunks } = await deps.memory.view(threadId);
      const forgotten = chunks.filter((c) => isTurnChunk(c) || isTaskStateChunk(c)).map((c) => c.id);
      if (forgotten.length > 0) await deps.memory.apply(threadId, { op: 'delete', chunkIds: forgotten }, meta, { operationId: operationIdFor(`${key}:clear`) });
      else await deps.memory.checkpoint(threadId, `cleared-${shortHash(key, 8)}`, meta);
      // Forgotten for the next session too.
      await saveTaskState(threadId, null);
    },

    /**
     * The conversation ended (`/end`, DELETE, idle): its TaskState is kept as the user's, and its
     * promotion is handed to the user's memory workflow (react_mem). The thread stays, readable.
     */
    async endSession({ sessionId, threadId, reason }: { sessionId: string; threadId: string; reason: string }): Promise<void> {
      const { thread, chunks } = await deps.memory.view(threadId);
      const { userId } = thread;
      const { taskState } = readConversation(chunks, 0);
      if (taskState) await putTaskState(userId, taskState);
      // Seed 001: EPHEMERAL chunks (live snapshots and the like) leave when their conversation ends.
      await deps.memory.endSession(threadId, { reason: `conversation ended: ${reason}`, trigger: 'session ended' });
      await deps.memory.checkpoint(threadId, `ended-${shortHash(idempotencyKey(), 8)}`, sessionMeta(sessionId, `conversation ended: ${reason}`, 'session ended'));
      if (deps.longterm && deps.memoryPasses && userId) {
        const job = { kind: 'promote' as const, key: `promote:${sessionId}`, sessionId, threadId, reason, at: new Date().toISOString() };
        await sendMemoryJob(userId, job, deps.memoryPasses);
      }
    },
  } satisfies SessionCalls;
}

export type SessionActivities = ReturnType<typeof createSessionActivities>;
