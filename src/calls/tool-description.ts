/** What a model is told about a tool (the `Tools:` list of the planner's and the tree engine's prompts). */
export interface ToolDescription {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
  /** Present (true) on tools whose truth changes outside the conversation. */
  live?: true;
}

/** The last list rendered and its text: a run's calls list the same tools, the same objects, call after call. */
let last: { tools: readonly ToolDescription[]; text: string } | undefined;

/**
 * The `Tools:` list as prompts show it. Rendered once per tool set rather than at every model call: with
 * the skills' tools a worker's list is several kilobytes, and stringifying it took ≈ 0.25 ms a call.
 */
export function renderTools(tools: readonly ToolDescription[]): string {
  if (last && last.tools.length === tools.length && last.tools.every((t, i) => t === tools[i])) return last.text;
  const text = JSON.stringify(tools, null, 1);
  last = { tools: [...tools], text };
  return text;
}
