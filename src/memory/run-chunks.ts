/**
 * How a run's events become chunks of its memory thread (seed 004's working
 * memory as seed 001 working-flow chunks). Pure.
 */
import type { ExecutionState, Observation, PlanStep, RunEnding } from '../planning/execution-state';
import { agentFrame, agentProfileText } from '../agents/names';
import type { ChunkInput } from './model';

const provenance = (state: ExecutionState, stepId: string | null) => ({
  runId: state.runId,
  ...(stepId ? { stepId } : {}),
  ...(state.sessionId ? { sessionId: state.sessionId } : {}),
});

/**
 * A sub-agent run's thread starts from its agent profile (seed 001's initial state): a system chunk
 * saying what the run is and an agent chunk with the profile's instructions and tools. Prompts then
 * take the agent from the thread (rendered with the rest of its system chunks) and not again.
 */
export function agentChunks(state: ExecutionState): ChunkInput[] {
  if (!state.agent) return [];
  const fixed = { priority: 100, retention: 'CRITICAL', agentModifiable: false, provenance: provenance(state, null) } as const;
  return [
    { type: 'system', content: { kind: 'text', text: agentFrame(state.agent) }, ...fixed },
    { type: 'agent', content: { kind: 'text', text: agentProfileText(state.agent) }, ...fixed },
  ];
}

/** The first chunk of a run's thread: its goal, the core objective it was delegated. */
export function goalChunk(state: ExecutionState): ChunkInput {
  return {
    type: 'delegation',
    content: { kind: 'json', data: { goal: state.goal, runId: state.runId, ...(state.parentRunId ? { parentRunId: state.parentRunId } : {}) } },
    priority: 95,
    retention: 'CRITICAL',
    agentModifiable: false,
    provenance: provenance(state, null),
  };
}

function parse(content: string): unknown {
  try {
    return JSON.parse(content);
  } catch {
    return content;
  }
}

/**
 * What a step's work produced, as its record needs it: the observation and, when known, when it
 * finished (`at`, ISO) and how long it took (`seconds`, seed 004's execution time).
 */
export type StepOutcome = Pick<Observation, 'kind' | 'content'> & { at?: string; seconds?: number };

/** The result half of a step record: the result (or error), seed 004's execution status, and its time. */
function responseData(step: PlanStep, observation: StepOutcome, result: Record<string, unknown>) {
  const failed = observation.kind === 'error';
  // A call the person rejected never ran: what they said is its record.
  const rejected = observation.kind === 'rejected';
  return {
    step: step.id,
    ...(failed ? { error: observation.content } : rejected ? { rejected: observation.content } : result),
    status: failed ? 'error' : rejected ? 'rejected' : 'success',
    ...(observation.at ? { at: observation.at } : {}),
    ...(observation.seconds !== undefined ? { seconds: observation.seconds } : {}),
  };
}

/**
 * A failed step's result ranks just under a person's words (60) and above the agent's own replies
 * and actions (45, 40): a prompt short of room drops it after them, so the model sees what failed
 * and does not try it again blindly (compaction keeps it verbatim longest too, see `isPreserved`).
 */
export const FAILED_RESULT_PRIORITY = 55;
const failedPriority = (observation: StepOutcome) => (observation.kind === 'error' || observation.kind === 'rejected' ? { priority: FAILED_RESULT_PRIORITY } : {});

/**
 * The chunks a finished step adds. A tool step (or a sub-plan) is seed 004's step record: the
 * `action` holds its thought (the planned step's description — the planner's steps have no
 * separate thought) and what it did; the `action_response` its result or error, status and
 * time. A reason step adds a thought, an ask_user step the question and its reply.
 */
export function stepChunks(state: ExecutionState, step: PlanStep, observation: StepOutcome): ChunkInput[] {
  const prov = provenance(state, step.id);
  switch (step.type) {
    case 'tool':
      return [
        { type: 'action', content: { kind: 'json', data: { step: step.id, thought: step.description, tool: step.tool, args: step.args ?? {} } }, provenance: prov },
        { type: 'action_response', content: { kind: 'json', data: responseData(step, observation, { result: parse(observation.content) }) }, ...failedPriority(observation), provenance: prov },
      ];
    case 'reason':
      return [{ type: 'thinking', content: { kind: 'text', text: observation.content }, provenance: prov }];
    case 'ask_user':
      return [
        { type: 'response', content: { kind: 'text', text: step.question ?? '' }, provenance: prov },
        { type: 'user', content: { kind: 'text', text: observation.content }, provenance: prov },
      ];
    case 'subplan':
      return [
        { type: 'action', content: { kind: 'json', data: { step: step.id, thought: step.description, subplan: step.goal, childRunId: step.childRunId } }, provenance: prov },
        { type: 'action_response', content: { kind: 'json', data: responseData(step, observation, { answer: observation.content }) }, ...failedPriority(observation), provenance: prov },
      ];
    case 'respond':
      return [];
  }
}

/** A tree run's plan as it is executed: a workflow chunk (seed 001's running plan) with the progress tree. */
export function planChunk(state: ExecutionState): ChunkInput {
  return {
    type: 'workflow',
    content: { kind: 'json', data: { kind: 'task_tree', planId: state.planId, progress: state.progress ?? '' } },
    priority: 80,
    provenance: provenance(state, null),
  };
}

/**
 * What happened in a run since observation `from` that no call wrote as it happened — a person's reply,
 * a task's result, a skip, a child run's answer — as its step records; first the plan when it is new.
 */
export function eventChunks(state: ExecutionState, from: number, plan: boolean): ChunkInput[] {
  const chunks = plan && state.tree ? [planChunk(state)] : [];
  for (const observation of state.observations.slice(from)) {
    const step = observation.stepId ? state.steps.find((s) => s.id === observation.stepId) : undefined;
    if (step) chunks.push(...stepChunks(state, step, observation));
  }
  return chunks;
}

/** A live snapshot taken before planning: environment state, gone when the run ends (EPHEMERAL). */
export function snapshotChunk(state: ExecutionState, observation: Pick<Observation, 'kind' | 'content'>): ChunkInput {
  return { type: 'environment', content: { kind: 'text', text: observation.content }, priority: 85, retention: 'EPHEMERAL', provenance: provenance(state, null) };
}

/** The final answer: an output chunk, marking the end of the task. */
export function outputChunk(state: ExecutionState, answer: string): ChunkInput {
  return { type: 'output', content: { kind: 'text', text: answer }, provenance: provenance(state, state.currentStepId) };
}

/**
 * The last chunk of an ended run's thread, an output chunk saying how it ended: the answer when
 * it gave one, otherwise how and why it stopped (`{ending, status, reason}`).
 */
export function endingChunk(state: ExecutionState, ending: RunEnding): ChunkInput {
  if (ending === 'answered' || ending === 'finished') return outputChunk(state, state.finalAnswer ?? '');
  const data = { ending, status: state.status, ...(state.lastError ? { reason: state.lastError } : {}) };
  return { type: 'output', content: { kind: 'json', data }, provenance: provenance(state, null) };
}

/** The step the latest observation belongs to, with it — what a replan after a reply or a sub-plan must record. */
export function lastStepEvent(state: ExecutionState): { step: PlanStep; observation: Observation } | null {
  const observation = state.observations[state.observations.length - 1];
  const step = observation?.stepId ? state.steps.find((s) => s.id === observation.stepId) : undefined;
  return observation && step ? { step, observation } : null;
}

/** A run's thread id: derived from the run id, so a retried activity finds the same thread. */
export const runThreadId = (runId: string) => `thread_${runId}`;
