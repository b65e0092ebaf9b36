/**
 * Blueprints (seed 003 §9): plan templates kept as data — a name, a description, a JSON Schema of
 * parameters and a task tree with `{{param}}` placeholders. Pure: the file's shape, parameter
 * validation against the schema, and expansion into a task tree.
 */
import { z } from 'zod';
import { TaskSpecSchema } from '../planning/task-spec';
import type { TaskSpec } from '../planning/task-tree';

export const BlueprintSchema = z.object({
  name: z.string().regex(/^[a-z0-9][a-z0-9-]{0,63}$/, 'a blueprint name is lowercase letters, digits and dashes'),
  description: z.string().min(1).max(2000),
  /** A JSON Schema (an object schema) of the parameters. */
  params: z.object({ type: z.literal('object') }).loose(),
  tree: z.object({ name: z.string().min(1), goal: z.string().min(1), subtasks: z.array(TaskSpecSchema).min(1) }),
});
export type Blueprint = z.infer<typeof BlueprintSchema>;

/** What clients and the model see of a blueprint. */
export const describeBlueprint = (b: Blueprint) => ({ name: b.name, description: b.description, params: b.params });

/** Why `params` do not fit the blueprint's schema (one line), or null when they do. */
export function paramsProblem(blueprint: Blueprint, params: unknown): string | null {
  const parsed = z.fromJSONSchema(blueprint.params).safeParse(params);
  return parsed.success ? null : z.prettifyError(parsed.error).replace(/\n/g, '; ');
}

const PLACEHOLDER = /\{\{\s*([A-Za-z_][\w]*)\s*\}\}/g;

/** The blueprint's tree with every `{{param}}` replaced by its value (unknown ones stay as they are). */
export function expandBlueprint(blueprint: Blueprint, params: Record<string, unknown>): TaskSpec {
  const fill = (text: string) => text.replace(PLACEHOLDER, (whole, key: string) => (key in params ? String(params[key]) : whole));
  const expand = (node: TaskSpec): TaskSpec => ({ name: fill(node.name), goal: fill(node.goal), ...(node.subtasks ? { subtasks: node.subtasks.map(expand) } : {}) });
  return expand(blueprint.tree);
}
