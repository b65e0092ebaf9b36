/**
 * Response bodies of the REST API v1 as zod schemas, for its description (`GET /openapi.json`).
 * Where a body has a TypeScript type elsewhere, `describes<T>()` makes the schema fail to compile
 * when it no longer fits that type. Responses may gain fields (DESIGN.md: extend, don't rename), so
 * the document never closes a response object (src/api/openapi.ts).
 */
import { z } from 'zod';
import { ROLES } from '../auth/roles';
import type { ApiKeyInfo } from '../auth/keys';
import type { AgentSummary } from '../agents/profile';
import { CHUNK_TYPES, ChunkContentSchema, ORIGINS, ProvenanceSchema, RETENTION_CLASSES, type Chunk } from '../memory/model';
import type { RunAgent } from '../agents/names';
import { CAPABILITIES } from '../planning/capabilities';
import type { CodeVersion } from '../planning/code-version';
import { OBSERVATION_KINDS, RUN_STATUSES, type ExecutionState, type Observation, type PlanStep } from '../planning/execution-state';
import { PlanStepWireSchema } from '../planning/step-schema';
import { TASK_STATUSES, type TaskNode } from '../planning/task-tree';
import type { RunSummary } from '../temporal/runs';
import type { SessionSummary } from '../temporal/sessions';
import type { UsageSummary } from '../store/usage/usage-store';
import type { StateDiff } from '../store/memory-service';
import type { Checkpoint } from '../store/memory-store';
import type { MessageOutcome, SessionView } from '../workflows/session-definitions';
import type { PendingApproval } from '../planning/approval';
import { SESSION_RUN_STATUSES, type SessionRun, type TaskState, type Turn } from '../sessions/session-model';
import { ERROR_CODES, type ErrorBody } from './error-body';
import type { TokenData } from './token-hub';

type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type RequiredKeys<T> = { [K in keyof T]-?: Record<never, never> extends Pick<T, K> ? never : K }[keyof T];
/** Every field the schema lists is one of T's, of exactly T's type, and none of T's required fields is missing. */
type Describes<O, T> = Same<Exclude<keyof O, keyof T> | Exclude<RequiredKeys<T>, keyof O>, never> extends true ? Same<{ [K in keyof O & keyof T]: Same<O[K], T[K]> }[keyof O & keyof T], true> : false;
/**
 * `describes<T>()(schema)` compiles only when the schema describes T (a field T lacks, a wrong type,
 * a required field left out: "Expected 2 arguments"), so the description cannot drift from the types
 * the routes send. Optional fields added to T later are not forced in: their owners need not edit
 * this file at once.
 */
export const describes =
  <T>() =>
  <S extends z.ZodType>(schema: S, ..._mismatch: Describes<z.output<S>, T> extends true ? [] : [never]): S =>
    schema;

const runId = z.string().meta({ description: 'The run, e.g. `run-ada-0123456789`' });

export const ErrorBodySchema = describes<ErrorBody>()(
  z.object({
    error: z.object({
      code: z.enum(ERROR_CODES),
      message: z.string(),
      details: z
        .union([z.array(z.object({ path: z.string(), message: z.string() })), z.record(z.string(), z.unknown())])
        .optional()
        .meta({ description: 'The invalid fields of a 400 (`path`: dotted field path), or facts of another error' }),
    }),
  }),
).meta({ id: 'Error', description: 'The one error envelope of the API' });

export const HealthSchema = z.object({ ok: z.literal(true) });

// ---- runs

export const RunStartedSchema = z.object({ runId, status: z.enum(RUN_STATUSES), uiUrl: z.string().meta({ description: 'The run in the Temporal Web UI' }) });
export const ReplyAcceptedSchema = z.object({ runId, status: z.literal('running') });
export const ReviewAcceptedSchema = z.object({ runId, decision: z.enum(['approve', 'revise', 'reject']), planId: z.string() });
export const RunHistorySchema = z.object({
  versions: z.array(z.object({ version: z.number().int(), at: z.string(), status: z.enum(RUN_STATUSES), stepId: z.string().optional(), taskIndex: z.string().optional(), event: z.string() })),
});
export const ForkedSchema = z.object({ runId, forkedFrom: z.object({ runId: z.string(), version: z.number().int() }), status: z.enum(RUN_STATUSES), uiUrl: z.string() });
export const ApprovalAcceptedSchema = z.object({ runId, stepId: z.string(), decision: z.enum(['approve', 'reject', 'edit']) });
export const SteerAcceptedSchema = z.object({ runId, index: z.string(), action: z.enum(['skip', 'redo']) });
export const CancelAcceptedSchema = z.object({ runId });

const RunSummarySchema = describes<RunSummary>()(
  z.object({
    runId,
    userId: z.string(),
    sessionId: z.string().nullable(),
    parentRunId: z.string().nullable(),
    goal: z.string(),
    status: z.enum([...RUN_STATUSES, 'unknown']),
    startedAt: z.string().nullable(),
    closedAt: z.string().nullable(),
  }),
).meta({ id: 'RunSummary' });
export const RunListSchema = z.object({ runs: z.array(RunSummarySchema) });

const PlanStepSchema = describes<PlanStep>()(PlanStepWireSchema);
const ObservationSchema = describes<Observation>()(z.object({ stepId: z.string().nullable(), kind: z.enum(OBSERVATION_KINDS), content: z.string(), at: z.string() }));

const TaskNodeSchema: z.ZodType<TaskNode> = z
  .object({
    index: z.string(),
    name: z.string(),
    goal: z.string(),
    status: z.enum(TASK_STATUSES),
    summary: z.string().optional(),
    result: z.string().optional(),
    iterations: z.number().int(),
    childRunId: z.string().optional(),
    note: z.string().optional(),
    spins: z.number().int().optional(),
    get subtasks() {
      return z.array(TaskNodeSchema);
    },
  })
  .meta({ id: 'TaskNode' });

const PendingApprovalSchema = describes<PendingApproval>()(
  z.object({ stepId: z.string(), taskIndex: z.string().optional(), tool: z.string(), args: z.record(z.string(), z.unknown()), reason: z.string(), runId: z.string().optional() }),
);

export const ExecutionStateSchema = describes<ExecutionState>()(
  z.object({
    runId,
    sessionId: z.string().nullable(),
    userId: z.string(),
    goal: z.string(),
    status: z.enum(RUN_STATUSES),
    planId: z.string().nullable(),
    steps: z.array(PlanStepSchema),
    currentStepId: z.string().nullable(),
    observations: z.array(ObservationSchema),
    finalAnswer: z.string().nullable(),
    lastError: z.string().nullable(),
    parentRunId: z.string().nullable(),
    updatedAt: z.string(),
    depth: z.number().int(),
    model: z.string(),
    version: z.number().int().meta({ description: 'Grows at every change' }),
    threadId: z.string().nullable(),
    sessionThreadId: z.string().nullable().optional(),
    engine: z.literal('tree').optional(),
    entry: z.literal('react').optional().meta({ description: 'A tree run that began as one ReAct loop on the goal (engine "react" when started)' }),
    tree: TaskNodeSchema.nullable().optional(),
    progress: z.string().optional(),
    codeVersion: describes<CodeVersion>()(z.object({ model: z.string(), prompts: z.string(), tools: z.string() })).optional(),
    agent: describes<RunAgent>()(z.object({ name: z.string(), instructions: z.string(), tools: z.array(z.string()).optional(), model: z.string().optional() })).optional(),
    allow: z.partialRecord(z.enum(CAPABILITIES), z.boolean()).optional().meta({ description: 'Capability switches its starter turned off; absent: everything on' }),
    pendingApproval: PendingApprovalSchema.nullable().optional().meta({ description: 'The tool call waiting for a person’s approval (status `waiting_approval`)' }),
    forkedFrom: z.object({ runId: z.string(), version: z.number().int() }).optional().meta({ description: 'A fork: the run and version it started from' }),
    reviewIn: z
      .object({ runId: z.string(), planId: z.string() })
      .nullable()
      .optional()
      .meta({ description: 'Status `waiting_review` for a child run’s plan (a group’s, a sub-agent’s): a review sent to this run goes to that run and plan' }),
  }),
).meta({ id: 'ExecutionState', description: 'A run as it stands (DESIGN.md §4); `version` grows at every change' });

export const BlueprintListSchema = z.object({
  blueprints: z.array(z.object({ name: z.string(), description: z.string(), params: z.object({ type: z.literal('object') }).meta({ description: 'A JSON Schema of the parameters' }) })),
});
export const AgentListSchema = z.object({
  agents: z.array(
    describes<AgentSummary>()(z.object({ name: z.string(), description: z.string(), tools: z.array(z.string()).nullable(), engine: z.enum(['plan', 'tree', 'react']), model: z.string().optional() })),
  ),
});

/** `event: token` of a run's or a session's event stream (issue 29). */
export const TokenEventSchema = describes<TokenData>()(
  z.object({
    runId: z.string(),
    callId: z.string(),
    stepId: z.string().optional(),
    taskIndex: z.string().optional(),
    field: z.string(),
    delta: z.string(),
    seq: z.number().int(),
  }),
);
export const TokenResetEventSchema = z.object({ runId: z.string(), callId: z.string() });

// ---- sessions

export const SessionCreatedSchema = z.object({ sessionId: z.string(), threadId: z.string(), uiUrl: z.string() });
const SessionSummarySchema = describes<SessionSummary>()(
  z.object({ sessionId: z.string(), userId: z.string(), threadId: z.string(), status: z.enum(['running', 'closed']), startedAt: z.string(), closedAt: z.string().nullable() }),
);
export const SessionListSchema = z.object({ sessions: z.array(SessionSummarySchema) });
export const MessageOutcomeSchema = describes<MessageOutcome>()(
  z.object({ kind: z.enum(['command', 'reply', 'new_run', 'retry']), runId: z.string().optional(), reply: z.string().optional() }),
).extend({
  uiUrl: z.string().optional().meta({ description: 'With `runId`: the run in the Temporal Web UI' }),
});
const TurnSchema = describes<Turn>()(z.object({ role: z.enum(['user', 'assistant']), text: z.string(), at: z.string(), messageId: z.string().optional(), runId: z.string().optional() }));
const TaskStateSchema = describes<TaskState>()(
  z.object({ CurrentGoal: z.string(), ActiveFlow: z.string(), OpenLoops: z.array(z.string()), ImportantFacts: z.array(z.string()), LastDecision: z.string(), UpdatedAt: z.string() }),
);
const SessionRunSchema = describes<SessionRun>()(
  z.object({
    runId: z.string(),
    goal: z.string(),
    status: z.enum(SESSION_RUN_STATUSES),
    question: z.string().nullable(),
    finalAnswer: z.string().nullable(),
    lastError: z.string().nullable(),
    startedAt: z.string(),
    askedAt: z.string().nullable(),
    engine: z.enum(['tree', 'react']).optional(),
    approval: PendingApprovalSchema.nullable().optional(),
  }),
);
export const SessionViewSchema = describes<SessionView>()(
  z.object({
    sessionId: z.string(),
    userId: z.string(),
    threadId: z.string(),
    runs: z.array(SessionRunSchema),
    turns: z.number().int().meta({ description: 'Messages handled since the session began' }),
    version: z.number().int().meta({ description: 'Grows at every change of the session or its thread' }),
    chatHistory: z.array(TurnSchema),
    taskState: TaskStateSchema,
  }),
).meta({ id: 'Session', description: 'A session: its runs, chat history and task state (seed 000)' });
export const SessionEndedSchema = z.object({ sessionId: z.string(), status: z.literal('closed'), reply: z.string().nullable() });

// ---- memory threads

export const ThreadCreatedSchema = z.object({ threadId: z.string(), headStateId: z.string() });

/** A chunk of a thread's state (seed 001): immutable; an edit makes a new chunk whose `parentChunkId` is the old one. */
export const ChunkSchema = describes<Chunk>()(
  z.object({
    id: z.string(),
    type: z.enum(CHUNK_TYPES),
    content: ChunkContentSchema,
    priority: z.number().int(),
    retention: z.enum(RETENTION_CLASSES),
    agentModifiable: z.boolean(),
    parentChunkId: z.string().nullable(),
    provenance: ProvenanceSchema,
    messageId: z.string().nullable(),
    tokens: z.number().int(),
    createdAt: z.string(),
  }),
).meta({ id: 'Chunk' });
const ThreadSchema = z
  .object({
    threadId: z.string(),
    userId: z.string(),
    limits: z.object({ soft: z.number().int(), hard: z.number().int() }),
    forkedFrom: z.object({ threadId: z.string(), stateId: z.string() }).nullable(),
    headStateId: z.string(),
    createdAt: z.string(),
  })
  .meta({ id: 'Thread' });
const StateSchema = z
  .object({
    stateId: z.string(),
    parentStateId: z.string().nullable(),
    seq: z.number().int(),
    tokens: z.number().int(),
    chunkIds: z.array(z.string()),
    operationId: z.string().nullable(),
    at: z.string(),
  })
  .meta({ id: 'MemoryState' });
export const ThreadListSchema = z.object({ threads: z.array(ThreadSchema) });
export const CheckpointListSchema = z.object({
  checkpoints: z.array(describes<Checkpoint>()(z.object({ name: z.string(), stateId: z.string(), at: z.string() }))),
});
export const StateDiffSchema = describes<StateDiff>()(
  z.object({
    from: z.string(),
    to: z.string(),
    added: z.array(ChunkSchema),
    removed: z.array(ChunkSchema),
    reordered: z.boolean().meta({ description: 'Chunks in both states changed their relative order' }),
  }),
);
export const ThreadViewSchema = ThreadSchema.extend({ state: StateSchema, chunks: z.array(ChunkSchema) });
export const StateViewSchema = z.object({ state: StateSchema, chunks: z.array(ChunkSchema) });
export const StateListSchema = z.object({
  states: z.array(
    z.object({
      stateId: z.string(),
      parentStateId: z.string().nullable(),
      seq: z.number().int(),
      operation: z
        .object({ id: z.string(), kind: z.string(), origin: z.enum(ORIGINS), reason: z.string() })
        .nullable()
        .meta({ description: 'The operation that made the state; null for the first' }),
      at: z.string(),
    }),
  ),
});
export const OperationAppliedSchema = z.object({ stateId: z.string(), operationId: z.string() });
export const CheckpointCreatedSchema = z.object({ name: z.string(), stateId: z.string() });

// ---- admin, usage

const ApiKeyInfoSchema = describes<ApiKeyInfo>()(
  z.object({ keyId: z.string(), userId: z.string(), role: z.enum(ROLES), createdAt: z.string(), expiresAt: z.string().nullable(), revokedAt: z.string().nullable() }),
);
export const KeyCreatedSchema = z.object({
  keyId: z.string(),
  key: z.string().meta({ description: 'The key (`tl_<keyId>_<secret>`), shown this once' }),
  userId: z.string(),
  role: z.enum(ROLES),
  expiresAt: z.string().nullable(),
});
export const KeyListSchema = z.object({ keys: z.array(ApiKeyInfoSchema) });

const usage = { promptTokens: z.number().int(), completionTokens: z.number().int(), cachedTokens: z.number().int(), calls: z.number().int() };
export const UsageSummarySchema = describes<UsageSummary>()(
  z.object({
    userId: z.string(),
    since: z.string().nullable(),
    total: z.object(usage),
    runs: z.array(z.object({ ...usage, runId: z.string(), sessionId: z.string().nullable() })),
    sessions: z.array(z.object({ ...usage, sessionId: z.string() })),
  }),
);
