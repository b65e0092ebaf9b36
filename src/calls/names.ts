/**
 * The names of the model calls (DESIGN.md "Model wire protocol"), grouped by the context each is
 * made from. A leaf: the call files and the engine name calls without importing the registry.
 */

/** The calls the planner makes from a PlannerContext (src/calls/planner.ts). */
export const PLANNER_CALLS = ['live_state_check', 'execution_plan', 'replan_decision', 'reasoning', 'final_answer'] as const;
export type PlannerCallName = (typeof PLANNER_CALLS)[number];

/** The calls seed 003's tree engine makes (with `final_answer`), each from a TreeContext (src/calls/tree.ts). */
export const TREE_CALLS = ['task_tree', 'react_action', 'spin_check', 'reflection', 'task_summary', 'blueprint_params'] as const;
export type TreeCallName = (typeof TREE_CALLS)[number];

/** Long-term memory's passes after an invocation and at a conversation's end (seed 002). */
export type MemoryPassName = 'memory_extraction' | 'memory_promotion';
