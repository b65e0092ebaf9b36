/**
 * The activities of a plan execution: every model call and tool call of a run.
 * Built by a factory so the model provider, tools and store are handed in
 * (the worker passes real ones; tests and the benchmark pass their own).
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import {
  answer as answeredState,
  applyPlan,
  complete,
  finishStep,
  findStep,
  headForHistory,
  makeObservation,
  nextPendingStep,
  startStep,
  type ExecutionState,
  type Observation,
  type RunEnding,
} from '../planning/execution-state';
import type { PlannerCallName } from '../calls/names';
import type { ReplanDecisionReply } from '../calls/replan-decision';
import type { StepSpec } from '../planning/step-spec';
import type { PlannerContext } from '../calls/planner';
import { ModelUnavailableError, type ModelProvider } from '../llm/provider';
import { callModel, InvalidModelReplyError } from '../llm/structured';
import { agentChunks, endingChunk, goalChunk, lastStepEvent, runThreadId, snapshotChunk, stepChunks, type StepOutcome } from '../memory/run-chunks';
import type { ChunkInput } from '../memory/model';
import { JOURNALS, type KeyValueStore } from '../store/kv';
import { operationIdFor, ThreadNotFoundError, type MemoryService, type Reader } from '../store/memory-service';
import { runReport } from '../engine/report';
import type { ToolRegistry } from '../tools/registry';
import type { ToolContext } from '../tools/tool';
import { boundToolResult, type ToolResultStore } from '../tools/large-results';
import type { LongTermMemory, ReadMeta } from '../longterm/contract';
import { longTermChunks } from '../longterm/context-chunks';
import { allows } from '../planning/capabilities';
import { readConversation } from '../sessions/session-chunks';
import type { SessionContext } from '../sessions/session-state';
import { assertCurrent, codeVersionOf } from './code-version';
import { handOverUnlessQuick, idempotencyKey, withHeartbeats } from './heartbeat';
import { sendMemoryJob } from './memory-jobs';
import { notifyParent } from './run-starts';
import { scheduledRunChunk } from './scheduled-runs';
import { recordEnding } from './session-turns';
import type { MemoryWorkflowSettings } from '../workflows/memory-definitions';
import { agentNameOf, notAllowedMessage, toolAllowed, type AgentInvocation } from '../agents/names';
import type { AgentProfile } from '../agents/profile';
import { resolveAgentCall, toolsForRun } from '../tools/agent-tools';
import type { CloseOnAnswer, CloseRunCall, CloseRunInput, ClosedRun, ParentNotice, PlanAnswer, PlanCalls, PlannedRun, RespondResult, StepObservation, StepResult } from '../engine/contract';

export interface PlanActivityDeps {
  /** Workers run under Worker Deployment Versioning: runs are pinned to their version, so none is stale. @default false */
  versioned?: boolean;
  provider: ModelProvider;
  tools: ToolRegistry;
  store: KeyValueStore;
  /** Model replies failing validation are sent back this many times in total. @default 3 */
  repairAttempts?: number;
  maxSteps: number;
  maxDepth: number;
  /** The memory threads runs keep their working memory in; without it prompts show raw observations. */
  memory?: MemoryService;
  /** Long-term memory (MEMORY_MANAGER=react_mem): recalled into a run's thread when it starts. */
  longterm?: LongTermMemory;
  /** react_mem's passes: a top-level run's end hands its extraction to the user's memory workflow (absent: off). */
  memoryPasses?: MemoryWorkflowSettings;
  /** Token budget of a run's working memory in each prompt (capped by the thread's hard limit). */
  contextBudget?: number;
  /** MEMORY_COMPRESS_EVERY: a run's older steps are summarized once this many have gathered (seed 002's option A). @default 0 (off) */
  compressEvery?: number;
  /** Sub-agent profiles (AGENTS_CONFIG), offered to planners as tools `agent.<name>`. @default none */
  agents?: readonly AgentProfile[];
  /** Tool results past `maxBytes` are kept as a head and a reference to the whole in `store` (absent: kept whole). */
  toolResults?: { maxBytes: number; store?: ToolResultStore };
}

/** Error types the workflow's retry policy treats as final. */
export const NON_RETRYABLE_ERRORS = ['InvalidModelReply', 'ModelRequestRefused'];
const JOURNAL = JOURNALS.steps;

/** The most recent turns of its session a run's prompt shows (the session keeps fewer once it compresses). */
const SESSION_TURNS_IN_PROMPT = 20;

/** Maps provider errors onto Temporal failures: bad replies and refusals are final, outages are retried. */
export function asFailure(err: unknown): unknown {
  // Already a Temporal failure (a call refused past the user's token budget): its type and message stand.
  if (err instanceof ApplicationFailure) return err;
  if (err instanceof InvalidModelReplyError) return ApplicationFailure.nonRetryable(err.message, 'InvalidModelReply');
  if (err instanceof ModelUnavailableError) return ApplicationFailure.retryable(err.message, 'ModelUnavailable');
  if (err instanceof Error && (err as { nonRetryable?: boolean }).nonRetryable) {
    return ApplicationFailure.nonRetryable(err.message, 'ModelRequestRefused');
  }
  return err;
}

/**
 * Writes chunks to the run's thread, idempotently (the operation id comes from the activity's
 * idempotency key), then compacts the thread if it grew past its soft limit.
 */
export async function rememberInRun(deps: Pick<PlanActivityDeps, 'memory' | 'compressEvery'>, state: ExecutionState, chunks: ChunkInput[], trigger: string, key: string): Promise<void> {
  if (!deps.memory || !state.threadId || chunks.length === 0) return;
  const meta = { origin: 'agent' as const, reason: 'working memory of the run', trigger, runId: state.runId, ...(state.currentStepId ? { stepId: state.currentStepId } : {}) };
  await deps.memory.apply(state.threadId, { op: 'add', chunks }, meta, { operationId: operationIdFor(`${key}:memory`) });
  await deps.memory.compactIfNeeded(state.threadId, { reason: 'soft token limit exceeded', trigger, runId: state.runId }, deps.compressEvery ? { compressEvery: deps.compressEvery } : {});
}

/** Who reads long-term memory for a run's prompts: the agent, for this run (recorded in the long-term audit). */
export const recallReader = (state: ExecutionState, reason: string): ReadMeta => ({ origin: 'agent', reason, runId: state.runId, ...(state.sessionId ? { sessionId: state.sessionId } : {}) });

/** Who reads a run's memory to render a prompt: the agent, for this model call of the run (recorded in the thread's audit). */
export function promptReader(state: ExecutionState, call: string, stepId?: string): Reader {
  const step = stepId ?? state.currentStepId;
  return { origin: 'agent', reason: `prompt of ${call}`, trigger: `model call ${call}`, runId: state.runId, ...(step ? { stepId: step } : {}) };
}

/** The conversation of the session a run belongs to, as its prompts show it (recent turns, TaskState); none outside a session. */
export async function sessionConversation(deps: Pick<PlanActivityDeps, 'memory'>, state: ExecutionState, reader: Reader): Promise<SessionContext | undefined> {
  if (!deps.memory || !state.sessionThreadId) return undefined;
  return readConversation((await deps.memory.view(state.sessionThreadId, reader)).chunks, SESSION_TURNS_IN_PROMPT);
}

/** The run's memory thread: created on the first attempt (with the goal chunk), found again on a retry. */
export async function ensureRunThread(deps: Pick<PlanActivityDeps, 'memory' | 'longterm'>, state: ExecutionState): Promise<string | null> {
  if (!deps.memory) return null;
  // react_mem (seed 002): a top-level run starts with what long-term memory holds for its goal; its sub-runs read its thread.
  const recalled =
    deps.longterm && !state.parentRunId && allows(state.allow, 'recall')
      ? longTermChunks(await deps.longterm.contextFor(state.userId, state.goal, state.sessionId ? { sessionId: state.sessionId } : {}, recallReader(state, 'recall at the start of the run')), {
          runId: state.runId,
          ...(state.sessionId ? { sessionId: state.sessionId } : {}),
        })
      : [];
  // A run a schedule started is told so, with what its previous occurrence answered (issue 33).
  const scheduled = await scheduledRunChunk(deps.memory, state);
  const thread = await deps.memory.ensureThread({
    threadId: runThreadId(state.runId),
    userId: state.userId,
    chunks: [...agentChunks(state), goalChunk(state), ...(scheduled ? [scheduled] : []), ...recalled],
    meta: { origin: 'system', reason: 'memory thread of a new run', trigger: 'run started', runId: state.runId },
  });
  return thread.id;
}

/**
 * A step's work, journaled under the activity's idempotency key with when it finished and how
 * long it took (its record in the run's memory): a retry after a crash or a model outage neither
 * repeats finished work nor changes that record.
 */
export function journaledWork(store: KeyValueStore, key: string, work: () => Promise<StepObservation>): Promise<StepOutcome & StepObservation> {
  return journaled(store, key, async () => {
    const started = Date.now();
    const observation = await work();
    const finished = new Date();
    return { ...observation, at: finished.toISOString(), seconds: (finished.getTime() - started) / 1000 };
  });
}

/** `make`'s result, journaled under `key` when `keep` says so: the call run again after a crash finds it instead of doing it again. */
async function journaled<T extends object>(store: KeyValueStore, key: string, make: () => Promise<T>, keep: (value: T) => boolean = () => true): Promise<T> {
  const done = await store.get<T>(JOURNAL, key);
  if (done) return done;
  const value = await make();
  if (keep(value)) await store.put(JOURNAL, key, value);
  return value;
}

/** The memory threads that are a run's own: its working memory, its parent run's, its session's (what `retrieve_message` may read). */
export const ownThreads = (state: ExecutionState): string[] =>
  [state.threadId, state.parentRunId ? runThreadId(state.parentRunId) : null, state.sessionThreadId ?? null].filter((t): t is string => t !== null);

/** What a tool of a run may read and write of memory: the run's own threads, and its working memory. */
const memoryOfTools = (deps: Pick<PlanActivityDeps, 'memory'>, state: ExecutionState): Pick<ToolContext, 'memory' | 'threads' | 'runThread'> =>
  deps.memory ? { memory: deps.memory, threads: ownThreads(state), ...(state.threadId ? { runThread: state.threadId } : {}) } : {};

/** One tool call of a run, as an observation (a failure is an `error` observation the model can react to). */
export async function runToolStep(
  deps: Pick<PlanActivityDeps, 'tools' | 'store' | 'memory' | 'toolResults'>,
  state: ExecutionState,
  call: { stepId: string; tool: string; args: Record<string, unknown> },
  key: string,
  signal: AbortSignal,
): Promise<StepObservation> {
  // An agent's run sees only its tools; a call of another one is refused, not run.
  if (state.agent && !toolAllowed(state.agent, call.tool)) return { kind: 'error', content: notAllowedMessage(state.agent, call.tool) };
  if (agentNameOf(call.tool) !== null) return { kind: 'error', content: `${call.tool} is an agent: it runs as a child run, not as a tool call` };
  const outcome = await deps.tools.run(call.tool, call.args, {
    userId: state.userId,
    runId: state.runId,
    stepId: call.stepId,
    ...(state.sessionId ? { sessionId: state.sessionId } : {}),
    idempotencyKey: key,
    store: deps.store,
    ...memoryOfTools(deps, state),
    heartbeat: () => undefined, // withHeartbeats already beats every second
    signal,
  });
  if (!outcome.ok) return { kind: 'error', content: outcome.error };
  const content = JSON.stringify(outcome.result) ?? 'null';
  return { kind: 'tool', content: deps.toolResults ? await boundToolResult(content, deps.toolResults.maxBytes, deps.toolResults.store) : content };
}

/**
 * A run ended, whichever way (seed 001: EPHEMERAL chunks leave when the session ends; the output
 * chunk marks the end of the task): an output chunk records how it ended, then the thread drops
 * its EPHEMERAL chunks. Shared by both engines; idempotent, so a retry writes nothing twice.
 * Meanwhile `notify`'s report goes to the run's parent (a retry may send it again; a session ignores
 * an ending it has), and once the thread is closed react_mem's memory job to the user's memory workflow.
 *
 * A run is closed once. An answering call may have closed it already (`CloseOnAnswer`) in a workflow task
 * that did not count (a cancellation arrived before that task completed, say, and the run went on to
 * close as cancelled): the run's end is then that answer — nothing is written, its report and memory job
 * go out again (both idempotent), and the workflow ends the run answered (`answeredBefore`).
 */
export async function closeRun(deps: Pick<PlanActivityDeps, 'memory' | 'longterm' | 'memoryPasses'>, { state, ending, notify }: CloseRunCall): Promise<ClosedRun> {
  const before = deps.memory && ending !== 'answered' && ending !== 'finished' ? await answeredEnding(deps.memory, state) : null;
  if (before !== null) {
    const answered = complete(state, before, new Date());
    await Promise.all([sendExtraction(deps, answered, 'answered'), reportEnd(deps, answered, notify && endNotice(answered, notify.parentId, notify.report.lastCallMs ?? null))]);
    return { answeredBefore: before };
  }
  // The parent's report does not wait for the run's thread to close; the memory job does (its pass reads that thread).
  const closing = deps.memory ? closeRunThread(deps.memory, state, ending) : Promise.resolve();
  await Promise.all([closing.then(() => sendExtraction(deps, state, ending)), reportEnd(deps, state, notify)]);
  return {};
}

/** The report of how `state` ended, for `parentId`, with how long the run's last call took. */
function endNotice(state: ExecutionState, parentId: string, lastCallMs: number | null): ParentNotice | undefined {
  const report = runReport(state);
  return report ? { parentId, report: { ...report, lastCallMs } } : undefined;
}

/** The answer of the ending the run's thread already holds (output chunks are endings; an answer is text), or null. */
async function answeredEnding(memory: MemoryService, state: ExecutionState): Promise<string | null> {
  try {
    const { chunks } = await memory.view(state.threadId ?? runThreadId(state.runId));
    const ending = chunks.filter((c) => c.type === 'output').at(-1);
    return ending?.content.kind === 'text' ? ending.content.text : null;
  } catch (err) {
    if (err instanceof ThreadNotFoundError) return null; // it failed before its thread was made
    throw err;
  }
}

/** react_mem (seed 002): the invocation is over; extraction happens later, in the user's memory workflow. */
async function sendExtraction(deps: Pick<PlanActivityDeps, 'memory' | 'longterm' | 'memoryPasses'>, state: ExecutionState, ending: RunEnding): Promise<void> {
  if (!deps.memory || !deps.longterm || !deps.memoryPasses || state.parentRunId || ending === 'cancelled') return;
  const job = { kind: 'extract' as const, key: `extract:${state.runId}`, runId: state.runId, sessionId: state.sessionId ?? null, goal: state.goal, at: new Date().toISOString() };
  await sendMemoryJob(state.userId, job, deps.memoryPasses);
}

/** The run's end reported to its parent (a session's run adds its turn to the session's thread first). */
async function reportEnd(deps: Pick<PlanActivityDeps, 'memory' | 'longterm'>, state: ExecutionState, notify: ParentNotice | undefined): Promise<void> {
  if (notify) await notifyParent(deps.memory ? await withEndingTurn(deps.memory, deps.longterm, state, notify) : notify);
}

/** A session's run adds its ending's turn to the session's thread itself (`recordEnding`); other parents get the report as it is. */
async function withEndingTurn(memory: MemoryService, longterm: LongTermMemory | undefined, state: ExecutionState, notify: ParentNotice): Promise<ParentNotice> {
  const { sessionId, sessionThreadId } = state;
  if (!sessionId || !sessionThreadId || state.parentRunId || notify.parentId !== sessionId) return notify;
  const report = await recordEnding({ memory, ...(longterm ? { longterm } : {}) }, { sessionId, threadId: sessionThreadId, report: notify.report });
  return { ...notify, report };
}

async function closeRunThread(memory: MemoryService, state: ExecutionState, ending: CloseRunInput['ending']): Promise<void> {
  // A run that failed while planning has a thread its state does not name yet.
  const threadId = state.threadId ?? runThreadId(state.runId);
  const meta = { reason: `run ended: ${ending}`, trigger: `run ${state.runId} ${ending}`, runId: state.runId };
  const origin = ending === 'answered' || ending === 'finished' ? ('agent' as const) : ('system' as const);
  try {
    await memory.apply(threadId, { op: 'add', chunks: [endingChunk(state, ending)] }, { ...meta, origin }, { operationId: operationIdFor(`${idempotencyKey()}:ending`) });
  } catch (err) {
    if (err instanceof ThreadNotFoundError) return; // it failed before its thread was made
    throw err;
  }
  await memory.endSession(threadId, meta);
}

export function createPlanActivities(deps: PlanActivityDeps) {
  const attempts = deps.repairAttempts ?? 3;
  /** Stops a run planned on other code (model, prompts, tools) before its next step. */
  const current = (state: ExecutionState) => assertCurrent(state, codeVersionOf(deps.provider, deps.tools), deps.versioned);

  async function context<N extends PlannerCallName>(call: N, state: ExecutionState, stepId?: string): Promise<PlannerContext & { call: N }> {
    const step = stepId ? findStep(state, stepId) : undefined;
    const reader = promptReader(state, call, stepId);
    const memory = deps.memory && state.threadId ? await deps.memory.context(state.threadId, deps.contextBudget, reader) : undefined;
    // A run of a session sees that conversation: its recent turns and TaskState (seed 000).
    const session = await sessionConversation(deps, state, reader);
    return {
      call,
      state,
      tools: toolsForRun(deps.tools.describe(), deps.agents ?? [], state.agent),
      maxSteps: deps.maxSteps,
      maxDepth: deps.maxDepth,
      ...(step ? { step } : {}),
      ...(memory ? { memory: { messages: memory.messages, tokens: memory.tokens } } : {}),
      ...(session ? { session } : {}),
    };
  }

  const remember = (state: ExecutionState, chunks: ChunkInput[], trigger: string, key: string) => rememberInRun(deps, state, chunks, trigger, key);

  /**
   * Seed 000's dynamic state refresh, made explicit: the model names the live tools the goal
   * concerns; each is called for a fresh snapshot, which goes into the observations (and the
   * run's memory) before the plan is made. No live tools, no extra call.
   */
  async function preflight(state: ExecutionState, signal: AbortSignal): Promise<Observation[]> {
    const live = deps.tools.liveTools().filter((t) => toolAllowed(state.agent, t.name));
    if (live.length === 0) return [];
    const { tools } = await model('live_state_check', state, signal);
    const key = idempotencyKey();
    const snapshots: Observation[] = [];
    for (const tool of live.filter((t) => tools.includes(t.name))) {
      const outcome = await deps.tools.run(tool.name, tool.snapshotArgs, {
        userId: state.userId,
        runId: state.runId,
        stepId: 'preflight',
        idempotencyKey: `${key}:preflight:${tool.name}`,
        store: deps.store,
        ...memoryOfTools(deps, state),
        heartbeat: () => undefined,
        signal,
      });
      const content = outcome.ok ? `${tool.name} (live snapshot before planning): ${JSON.stringify(outcome.result)}` : outcome.error;
      snapshots.push(makeObservation(null, { kind: outcome.ok ? 'snapshot' : 'error', content }, new Date()));
    }
    await remember(
      state,
      snapshots.map((o) => snapshotChunk(state, o)),
      'live state preflight',
      `${key}:preflight`,
    );
    return snapshots;
  }

  async function model<N extends PlannerCallName>(call: N, state: ExecutionState, signal: AbortSignal, stepId?: string) {
    try {
      return await callModel(deps.provider, await context(call, state, stepId), attempts, signal);
    } catch (err) {
      throw asFailure(err);
    }
  }

  /**
   * A plan that begins with its respond step is answered in the same call (`final_answer` with the run's
   * state as the engine will have it: planned, that step started): one call fewer per run, the common one
   * of a conversation. The engine takes the answer only where it would have asked for it.
   */
  async function answerAtOnce(state: ExecutionState, steps: StepSpec[], signal: AbortSignal): Promise<PlanAnswer | undefined> {
    const now = new Date();
    const withPlan = applyPlan(state, steps, now);
    const first = nextPendingStep(withPlan);
    if (first?.type !== 'respond') return undefined;
    const { answer } = await model('final_answer', startStep(withPlan, first.id, now), signal, first.id);
    return { stepId: first.id, text: answer };
  }

  /**
   * A call that may close the run is waited for when cancelled (policy `answer`): whatever stops it once it
   * was cancelled (a model call aborted mid-way fails as it can) is its cancellation, so the run ends cancelled, not failed.
   */
  async function stopsWhenCancelled<T>(signal: AbortSignal | null, work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (err) {
      if (signal?.aborted && !(err instanceof CancelledFailure)) throw new CancelledFailure('cancelled', undefined, err instanceof Error ? err : undefined);
      throw err;
    }
  }

  /** Whether this call closes the run once it answers: asked to, and local (a regular call's cancellation does not wait for it). */
  const closesHere = (close: CloseOnAnswer | undefined): close is CloseOnAnswer => close !== undefined && Context.current().info.isLocal;

  /**
   * Closes the run that `state` (before the answer) ends with `text`, as the `close` command and the final
   * report would (`CloseOnAnswer`). A cancellation that came first stops it: the run then closes as
   * cancelled. Once begun it is finished: the workflow waits for a local call it cancels (policy `answer`).
   */
  async function closeAnswered(state: ExecutionState, stepId: string | null, text: string, close: CloseOnAnswer, signal: AbortSignal, startedAt: number): Promise<void> {
    if (signal.aborted) throw signal.reason instanceof CancelledFailure ? signal.reason : new CancelledFailure('cancelled before the run was closed');
    const final = answeredState(state, stepId, text, new Date());
    const notify = close.reportTo ? endNotice(final, close.reportTo, Math.round(performance.now() - startedAt)) : undefined;
    await closeRun(deps, { state: final, ending: 'answered', ...(notify ? { notify } : {}) });
  }

  /** The step's own work: a tool call or a reasoning call. */
  async function work(state: ExecutionState, stepId: string, key: string, signal: AbortSignal): Promise<StepObservation> {
    const step = findStep(state, stepId);
    if (!step) throw ApplicationFailure.nonRetryable(`no step ${stepId} in run ${state.runId}`, 'UnknownStep');
    if (step.type === 'reason') {
      const { thought } = await model('reasoning', state, signal, stepId);
      return { kind: 'reason', content: thought };
    }
    if (step.type !== 'tool') throw ApplicationFailure.nonRetryable(`step ${stepId} is a ${step.type} step`, 'UnknownStep');
    return runToolStep(deps, state, { stepId, tool: step.tool ?? '', args: step.args ?? {} }, key, signal);
  }

  return {
    /** `execution_plan`: the first plan of a run. */
    async planRun({ state, close }: { state: ExecutionState; close?: CloseOnAnswer }): Promise<PlannedRun> {
      // Live tools are called before planning.
      handOverUnlessQuick(
        deps.tools,
        deps.tools.liveTools().map((t) => t.name),
      );
      const startedAt = performance.now();
      const closes = closesHere(close);
      // Taken before the prompt lists the tools: a tool set that changes during the call is never credited to this plan.
      const codeVersion = codeVersionOf(deps.provider, deps.tools);
      return withHeartbeats((signal) =>
        stopsWhenCancelled(closes ? signal : null, async () => {
          let planned = state;
          const threadId = await ensureRunThread(deps, state);
          if (threadId) planned = { ...state, threadId };
          const snapshots = await preflight(planned, signal);
          if (snapshots.length > 0) planned = { ...planned, observations: [...planned.observations, ...snapshots] };
          const plan = async () => {
            const { steps } = await model('execution_plan', planned, signal);
            const given = await answerAtOnce(planned, steps, signal);
            return { steps, ...(given ? { given } : {}) };
          };
          const made = (steps: StepSpec[], answer: PlanAnswer | undefined): PlannedRun => ({
            steps,
            ...(answer ? { answer } : {}),
            model: deps.provider.label,
            codeVersion,
            ...(planned.threadId ? { threadId: planned.threadId } : {}),
            ...(snapshots.length > 0 ? { snapshots } : {}),
          });
          if (!closes) {
            const { steps, given } = await plan();
            return made(steps, given);
          }
          // A plan that closes the run is journaled first: the call run again closes it with the same answer.
          const { steps, given } = await journaled(deps.store, `${idempotencyKey()}:answered`, plan, (p) => p.given !== undefined);
          if (!given) return made(steps, undefined);
          const now = new Date();
          await closeAnswered(startStep(applyPlan(planned, steps, now), given.stepId, now), given.stepId, given.text, close, signal, startedAt);
          return made(steps, { ...given, closed: true });
        }),
      );
    },

    /**
     * One tool or reason step, then `replan_decision` — one activity per step keeps a
     * step to ~6 history events. The step's result is journaled (`journaledWork`) before
     * replanning, so a retry never runs a finished tool or reasoning call again.
     */
    async executeStep({ state, stepId }: { state: ExecutionState; stepId: string }): Promise<StepResult> {
      current(state);
      const step = findStep(state, stepId);
      if (step?.type === 'tool') handOverUnlessQuick(deps.tools, [step.tool ?? '']);
      return withHeartbeats(async (signal) => {
        const key = idempotencyKey();
        const done = await journaledWork(deps.store, key, () => work(state, stepId, key, signal));
        const observation: StepObservation = { kind: done.kind, content: done.content };
        const outcome = observation.kind === 'error' ? 'failed' : 'completed';
        const after = finishStep(state, stepId, outcome, observation, new Date(state.updatedAt));
        if (step) await remember(state, stepChunks(state, step, done), `step ${stepId} ${outcome}`, key);
        const decision = await model('replan_decision', after, signal);
        return { observation: headForHistory(observation), outcome, decision };
      });
    },

    /** `replan_decision` alone: after a person's reply or a sub-plan. */
    async replan({ state }: { state: ExecutionState }): Promise<ReplanDecisionReply> {
      current(state);
      return withHeartbeats(async (signal) => {
        // What happened since the last activity (a person's reply, a sub-plan's answer) enters memory first.
        const event = lastStepEvent(state);
        if (event) await remember(state, stepChunks(state, event.step, event.observation), `step ${event.step.id} ${event.observation.kind}`, idempotencyKey());
        return model('replan_decision', state, signal);
      });
    },

    /**
     * A step calls `agent.<name>`: its profile, checked against what this run may call, with the
     * step's task — or the error the step observes (unknown agent, not allowed, no task).
     */
    async resolveAgent({ state, stepId }: { state: ExecutionState; stepId: string }): Promise<{ ok: true; invocation: AgentInvocation } | { ok: false; error: string }> {
      current(state);
      const step = findStep(state, stepId);
      if (!step || step.type !== 'tool') throw ApplicationFailure.nonRetryable(`step ${stepId} of run ${state.runId} is not a tool step`, 'UnknownStep');
      return resolveAgentCall(deps.agents ?? [], state.agent, step.tool ?? '', step.args ?? {});
    },

    /** `final_answer` for a respond step (the answer enters the thread when the run closes, here when `close` asks). */
    async respond({ state, stepId, close }: { state: ExecutionState; stepId: string; close?: CloseOnAnswer }): Promise<RespondResult> {
      current(state);
      const startedAt = performance.now();
      return withHeartbeats(async (signal) => {
        if (!closesHere(close)) return model('final_answer', state, signal, stepId);
        return stopsWhenCancelled(signal, async () => {
          const { answer } = await journaled(deps.store, `${idempotencyKey()}:answered`, () => model('final_answer', state, signal, stepId));
          await closeAnswered(state, findStep(state, stepId)?.type === 'respond' ? stepId : null, answer, close, signal, startedAt);
          return { answer, closed: true as const };
        });
      });
    },

    closeRun: (input: CloseRunCall) => withHeartbeats(() => closeRun(deps, input)),
  } satisfies PlanCalls;
}

/** The plan run's calls, as the engine's contract names them (`PlanCalls`). */
export type PlanActivities = PlanCalls;
