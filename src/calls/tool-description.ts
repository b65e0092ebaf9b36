/** What a model is told about a tool (the `Tools:` list of the planner's and the tree engine's prompts). */
export interface ToolDescription {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
  /** Present (true) on tools whose truth changes outside the conversation. */
  live?: true;
}
