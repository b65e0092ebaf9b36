/**
 * Seed 003's task tree (§2, §7, §8), pure: nodes with hierarchical indices (`1`, `1-2`,
 * `1-2-3`, assigned from the root), lookup by index, the task state machine, DFS scheduling
 * (only leaves execute; groups aggregate their children), limits on depth and width, and the
 * seed's progress rendering. Every function returns a new tree; nothing is changed in place.
 */

import { aggregateProgress, progressMark, type Progress } from './progress-marks';

export const TASK_STATUSES = ['created', 'queueing', 'processing', 'completed', 'aborted', 'skipped'] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];
/** A task in one of these is done with (the seed's `executed()`): it is not scheduled again. */
export const FINISHED_TASK_STATUSES: readonly TaskStatus[] = ['completed', 'aborted', 'skipped'];
export const isFinishedTask = (status: TaskStatus): boolean => FINISHED_TASK_STATUSES.includes(status);

/** The seed's state machine: which status may follow which. Redo re-queues a finished task. */
const TRANSITIONS: Record<TaskStatus, readonly TaskStatus[]> = {
  created: ['queueing', 'processing', 'skipped', 'aborted'],
  queueing: ['processing', 'skipped', 'aborted'],
  processing: ['completed', 'aborted', 'skipped'],
  completed: ['queueing'],
  aborted: ['queueing'],
  skipped: ['queueing'],
};
export const canMove = (from: TaskStatus, to: TaskStatus): boolean => TRANSITIONS[from].includes(to);

/** A task as the model proposes it (wire name `task_tree`). */
export interface TaskSpec {
  name: string;
  goal: string;
  /** The goal can be met without it: if it cannot be done (aborted), the others go on instead of the plan failing. @default false */
  optional?: boolean;
  subtasks?: TaskSpec[];
}

export interface TaskNode {
  index: string;
  name: string;
  goal: string;
  status: TaskStatus;
  /** One line on how it ended (shown in the progress tree), or its live status while it runs. */
  summary?: string;
  /** What the task produced, for its parent and later siblings. */
  result?: string;
  /** ReAct iterations spent on it. */
  iterations: number;
  /** The child run that executes this task's subtree, when it has one. */
  childRunId?: string;
  /** What a person said about this task (a redo's reason and the previous result), shown to its next attempt. */
  note?: string;
  /** Confirmed spins so far (seed §5.2): the first is a warning, the second aborts the task. */
  spins?: number;
  /** The plan marks it optional (TaskSpec.optional): aborted, it does not fail the plan. */
  optional?: true;
  subtasks: TaskNode[];
}

export interface TreeLimits {
  /** Levels, the root counting as 1. */
  maxDepth: number;
  /** Subtasks of one task. */
  maxFanout: number;
}

/** A tree from the model's proposal, every node `created`, indices assigned from `rootIndex`. */
export function buildTree(spec: TaskSpec, rootIndex = '1'): TaskNode {
  return {
    index: rootIndex,
    name: spec.name,
    goal: spec.goal,
    status: 'created',
    iterations: 0,
    ...(spec.optional ? { optional: true as const } : {}),
    subtasks: (spec.subtasks ?? []).map((child, i) => buildTree(child, `${rootIndex}-${i + 1}`)),
  };
}

/** Why a proposed tree breaks the limits; empty when it fits. */
export function treeProblems(spec: TaskSpec, limits: TreeLimits, depth = 1, path = '1'): string[] {
  const problems: string[] = [];
  const children = spec.subtasks ?? [];
  if (depth > limits.maxDepth) problems.push(`task ${path} is at level ${depth}; at most ${limits.maxDepth} levels are allowed`);
  if (children.length > limits.maxFanout) problems.push(`task ${path} has ${children.length} subtasks; at most ${limits.maxFanout} are allowed`);
  children.forEach((child, i) => problems.push(...treeProblems(child, limits, depth + 1, `${path}-${i + 1}`)));
  return problems;
}

/** Every node, parents before children, left to right (the seed's DFSOrderAiTask). */
export function dfs(root: TaskNode): TaskNode[] {
  const out: TaskNode[] = [];
  const stack = [root];
  while (stack.length > 0) {
    const node = stack.pop() as TaskNode;
    out.push(node);
    for (let i = node.subtasks.length - 1; i >= 0; i--) stack.push(node.subtasks[i] as TaskNode);
  }
  return out;
}

export function findTask(root: TaskNode, index: string): TaskNode | undefined {
  return dfs(root).find((n) => n.index === index);
}

/** The chain from the root down to `index` (both included); empty when there is no such task. */
export function pathTo(root: TaskNode, index: string): TaskNode[] {
  if (root.index === index) return [root];
  for (const child of root.subtasks) {
    const below = pathTo(child, index);
    if (below.length) return [root, ...below];
  }
  return [];
}

/** `f` applied to the node at `index`; groups above it re-aggregate. Unknown index: the same tree. */
export function updateTask(root: TaskNode, index: string, f: (node: TaskNode) => TaskNode): TaskNode {
  if (root.index === index) return f(root);
  if (!index.startsWith(`${root.index}-`)) return root;
  const subtasks = root.subtasks.map((child) => updateTask(child, index, f));
  return aggregate({ ...root, subtasks });
}

/** Applies `f` to a node and everything under it. */
export function updateSubtree(node: TaskNode, f: (node: TaskNode) => TaskNode): TaskNode {
  return f({ ...node, subtasks: node.subtasks.map((child) => updateSubtree(child, f)) });
}

/**
 * A group's status from its children (only leaves execute): processing while any child is under
 * way, completed once every child is done with (aborted if one was aborted), else as it was.
 */
export function aggregate(group: TaskNode): TaskNode {
  if (group.subtasks.length === 0) return group;
  const statuses = group.subtasks.map((c) => c.status);
  let status: TaskStatus = group.status;
  if (statuses.every(isFinishedTask)) status = statuses.every((s) => s === 'skipped') ? 'skipped' : statuses.includes('aborted') ? 'aborted' : 'completed';
  else if (statuses.some((s) => s === 'processing' || isFinishedTask(s))) status = 'processing';
  else status = group.status === 'processing' ? 'queueing' : group.status;
  return status === group.status ? group : { ...group, status };
}

/**
 * What a run scoped to the task at `scopeIndex` does next: the first of that task's subtasks not
 * yet done with — a leaf it executes itself, or a group it hands to a child run (which scopes to
 * it in turn), so every run executes at most one level of leaves. A scope without subtasks is
 * itself the leaf. A leaf already under way comes first, so a task re-queued by a redo waits for
 * it rather than cutting into its loop. None when the scope is done with.
 */
export function nextInScope(root: TaskNode, scopeIndex: string): TaskNode | undefined {
  const scope = findTask(root, scopeIndex);
  if (!scope) return undefined;
  if (scope.subtasks.length === 0) return isFinishedTask(scope.status) ? undefined : scope;
  return scope.subtasks.find((child) => child.status === 'processing' && child.subtasks.length === 0) ?? scope.subtasks.find((child) => !isFinishedTask(child.status));
}

/** A person skipped the task: it and whatever of it is not done with are `skipped`, with the reason. */
export function skipSubtree(node: TaskNode, reason: string): TaskNode {
  const summary = `skipped by the user${reason ? `: ${reason}` : ''}`;
  return updateSubtree(node, (n) => (isFinishedTask(n.status) ? n : { ...n, status: 'skipped', summary }));
}

/**
 * A person asked for the task again: it and its subtree are queued afresh (results, summaries and
 * child runs cleared, iterations reset), and the task notes the reason and what it produced before.
 */
export function requeueSubtree(node: TaskNode, reason: string): TaskNode {
  const previous = node.result ?? node.summary;
  const note = `redo requested${reason ? `: ${reason}` : ''}${previous ? `; previous result: ${previous}` : ''}`;
  const fresh = updateSubtree(node, (n) => {
    const { result: _result, summary: _summary, childRunId: _child, ...rest } = n;
    return { ...rest, status: 'queueing', iterations: 0 };
  });
  return { ...fresh, note };
}

/**
 * The group of `root` below `scopeIndex` that is being executed by a child run and holds the task at
 * `index` strictly inside it: a skip or redo there belongs to that child run.
 */
export function delegatedOwner(root: TaskNode, scopeIndex: string, index: string): TaskNode | undefined {
  return pathTo(root, index).find((n) => n.index !== index && n.index !== scopeIndex && n.index.startsWith(`${scopeIndex}-`) && n.status === 'processing' && n.childRunId !== undefined);
}

/** Attaches a planned subtree under a leaf (planning as an action): `1-2` gains `1-2-1`, `1-2-2`, … */
export function attachSubtasks(root: TaskNode, index: string, specs: TaskSpec[]): TaskNode {
  return updateTask(root, index, (node) => ({ ...node, status: 'processing', subtasks: specs.map((s, i) => buildTree(s, `${index}-${i + 1}`)) }));
}

/** Depth of the task at `index` (the root is 1): `1-2-3` is at level 3. */
export const levelOf = (index: string): number => index.split('-').length;

// ---------------------------------------------------------------- progress (seed §8.1)

/** A task's own progress, as its parent counts it. */
const taskProgress = (status: TaskStatus): Progress => (isFinishedTask(status) ? 'finished' : status === 'processing' ? 'executing' : 'notStarted');

function progressLine(node: TaskNode, depth: number): string {
  // Only a leaf executes; a group's mark is its children's aggregate.
  const progress = node.subtasks.length ? aggregateProgress(node.subtasks.map((c) => taskProgress(c.status))) : taskProgress(node.status);
  const notes: Record<Progress, () => string> = {
    executing: () => `(executing)${node.summary ? ` (status: ${node.summary})` : ''}`,
    finished: () => `(${node.status === 'skipped' ? 'skipped' : node.status === 'aborted' ? 'aborted' : 'finished'}${node.summary ? `: ${node.summary}` : ''})`,
    partial: () => '(partly done)',
    notStarted: () => '(not started)',
  };
  return `${' '.repeat(depth)}-${progressMark(progress)} ${node.index}. ${JSON.stringify(node.name)} ${notes[progress]()}`;
}

/** The whole tree as the seed renders it: one line per task, indented by level. */
export function renderTaskProgress(root: TaskNode): string {
  const lines: string[] = [];
  const walk = (node: TaskNode, depth: number) => {
    lines.push(progressLine(node, depth));
    for (const child of node.subtasks) walk(child, depth + 1);
  };
  walk(root, 0);
  return lines.join('\n');
}
