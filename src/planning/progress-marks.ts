/**
 * Seed 003's progress marks (§8.1), shared by the tree engine's progress tree and the
 * planner's step list so both speak one language: `[x]` done with, `[-]` executing,
 * `[~]` partly done, `[ ]` not started. Pure.
 */

export type Progress = 'finished' | 'executing' | 'partial' | 'notStarted';

const FILL: Record<Progress, string> = { finished: 'x', executing: '-', partial: '~', notStarted: ' ' };

/** The mark of one line: `[x]`, `[-]`, `[~]` or `[ ]`. */
export const progressMark = (progress: Progress): string => `[${FILL[progress]}]`;

/**
 * A parent's progress from its children's (the seed's aggregate for non-leaf tasks): finished
 * when every child is, partly done when any has started, else not started. No children: not started.
 */
export function aggregateProgress(children: readonly Progress[]): Progress {
  if (children.length === 0) return 'notStarted';
  if (children.every((c) => c === 'finished')) return 'finished';
  return children.some((c) => c !== 'notStarted') ? 'partial' : 'notStarted';
}
