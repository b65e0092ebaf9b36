/**
 * Forks (time travel, issue 28 §2), pure: where in a run's history a fork starts (a version, the
 * moment before a step ran, the moment before a task's first iteration), and the fork's first state —
 * the source's state there, with a person's edits. Steps done before the fork point keep their
 * observations (content and time) and are not run again; a step under way there runs again.
 */
import { replaceRemaining, type ExecutionState } from './execution-state';
import type { StepSpec } from './step-spec';
import { findTask } from './task-tree';

export type ForkPoint = { version: number } | { stepId: string } | { taskIndex: string };

export interface ForkEdits {
  goal?: string;
  /** New content for a step's observations (the model sees it instead). */
  observations?: { stepId: string; content: string }[];
  /** New arguments for a step that has not run yet at the fork point. */
  args?: { stepId: string; args: Record<string, unknown> }[];
  /** Plan runs: the steps after the fork point, instead of the ones planned. */
  remainingSteps?: StepSpec[];
}

export type ForkRefusal = { kind: 'unknown' | 'never_reached' | 'invalid'; message: string };

/** The version a fork starts from, or why there is none. `states`: the run's versions, oldest first. */
export function forkVersion(states: readonly ExecutionState[], point: ForkPoint): number | ForkRefusal {
  const last = states.at(-1);
  if (!last) return { kind: 'unknown', message: 'the run has no history' };
  if ('version' in point)
    return states.some((s) => s.version === point.version) ? point.version : { kind: 'never_reached', message: `the run never had version ${point.version} (its last is ${last.version})` };
  const started = (s: ExecutionState, ok: (stepTask: { id: string; task?: string; status: string }) => boolean) => s.steps.some((x) => ok(x) && x.status !== 'pending' && x.status !== 'replaced');
  if ('stepId' in point) {
    if (!states.some((s) => s.steps.some((x) => x.id === point.stepId))) return { kind: 'unknown', message: `the run has no step ${point.stepId}` };
    const first = states.findIndex((s) => started(s, (x) => x.id === point.stepId));
    if (first < 0) return { kind: 'never_reached', message: `step ${point.stepId} never ran` };
    if (first === 0) return { kind: 'never_reached', message: `step ${point.stepId} ran before the run's first version` };
    return states[first - 1]?.version ?? 1;
  }
  const mine = (x: { task?: string }) => x.task === point.taskIndex || (x.task ?? '').startsWith(`${point.taskIndex}-`);
  if (!states.some((s) => s.tree && findTask(s.tree, point.taskIndex))) return { kind: 'unknown', message: `the run has no task ${point.taskIndex}` };
  const first = states.findIndex((s) => started(s, mine));
  if (first <= 0) return { kind: 'never_reached', message: `task ${point.taskIndex} never ran` };
  return states[first - 1]?.version ?? 1;
}

/** Why `edits` cannot be made on `state`, or null. */
export function editsProblem(state: ExecutionState, edits: ForkEdits): string | null {
  for (const { stepId } of edits.observations ?? []) {
    if (!state.observations.some((o) => o.stepId === stepId)) return `step ${stepId} has no observation at the fork point`;
  }
  for (const { stepId } of edits.args ?? []) {
    const step = state.steps.find((s) => s.id === stepId);
    if (!step) return `no step ${stepId} at the fork point`;
    if (step.type !== 'tool') return `step ${stepId} is not a tool step`;
    if (step.status !== 'pending' && step.status !== 'running') return `step ${stepId} ran before the fork point: edit its observation instead`;
  }
  if (edits.remainingSteps && state.engine === 'tree') return 'remainingSteps are for plan runs; a tree run forks with its tree';
  return null;
}

/**
 * The fork's first state: the source's at the fork point under a new run id, with the edits. A step
 * under way there (or a call waiting for approval) runs again; a question waiting there is asked
 * again; the fork starts without a memory thread (its prompts show its observations as they are).
 */
export function forkState(source: ExecutionState, runId: string, edits: ForkEdits, now: Date): ExecutionState {
  const rerun = (status: string) => status === 'running';
  const observations = source.observations.map((o) => {
    const edit = edits.observations?.find((e) => e.stepId === o.stepId);
    return edit ? { ...o, content: edit.content } : o;
  });
  const steps = source.steps.map((s) => {
    const args = edits.args?.find((e) => e.stepId === s.id)?.args;
    const waitsForReply = source.status === 'waiting_user' && s.id === source.currentStepId && s.type === 'ask_user';
    return { ...s, ...(args ? { args } : {}), ...(rerun(s.status) && !waitsForReply ? { status: 'pending' as const } : {}) };
  });
  const { codeVersion: _planned, pendingApproval: _held, threadId: _thread, tree, ...rest } = source;
  const waiting = source.status === 'waiting_user';
  const fork: ExecutionState = {
    ...rest,
    runId,
    goal: edits.goal ?? source.goal,
    status: waiting ? 'waiting_user' : 'running',
    steps,
    observations,
    currentStepId: waiting ? source.currentStepId : null,
    finalAnswer: null,
    lastError: null,
    parentRunId: null,
    sessionId: null,
    threadId: null,
    version: 1,
    updatedAt: now.toISOString(),
    forkedFrom: { runId: source.runId, version: source.version },
    // A tree's tasks under way there run again.
    ...(tree !== undefined ? { tree: tree ? reopenTasks(tree) : tree } : {}),
  };
  return edits.remainingSteps ? { ...replaceRemaining(fork, edits.remainingSteps, now), version: 1 } : fork;
}

type Task = NonNullable<ExecutionState['tree']>;
function reopenTasks(node: Task): Task {
  const { childRunId: _child, ...rest } = node;
  const open = node.status === 'processing' && node.subtasks.length === 0;
  return { ...(node.status === 'processing' ? rest : node), ...(open ? { status: 'queueing' as const } : {}), subtasks: node.subtasks.map(reopenTasks) };
}
