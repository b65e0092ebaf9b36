/**
 * Tool sources: where tools come from besides the registry's fixed list (MCP servers, skills,
 * sub-agents, long-term memory). A source offers ToolDefinitions and may change them at run time;
 * the registry (src/tools/registry.ts) always works on the current union, so what the planner is
 * told, what a step may call and the capabilities fingerprint follow every change.
 */
import type { ToolDefinition } from './tool';

export interface ToolSource {
  /** Named in messages, e.g. `mcp` or `skills`. */
  readonly name: string;
  /** The tools it offers now. */
  tools(): readonly ToolDefinition[];
  /** Calls `listener` after every change of `tools()`; returns what unsubscribes. */
  subscribe(listener: () => void): () => void;
  /** Prepares the tools (e.g. connects to servers); the worker awaits it before it polls. */
  start?(): Promise<void>;
  /** Releases what `start` acquired; the worker calls it when it stops. */
  close?(): Promise<void>;
}

/** A source whose tools are set by its owner: for sources computed elsewhere, and tests. */
export class ToolSet implements ToolSource {
  private current: readonly ToolDefinition[];
  private readonly listeners = new Set<() => void>();

  constructor(
    readonly name: string,
    tools: readonly ToolDefinition[] = [],
  ) {
    this.current = tools;
  }

  tools(): readonly ToolDefinition[] {
    return this.current;
  }

  /** Replaces the tools and tells the subscribers. */
  set(tools: readonly ToolDefinition[]): void {
    this.current = tools;
    for (const listener of this.listeners) listener();
  }

  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
