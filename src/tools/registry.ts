/**
 * The tool registry: one place that knows every tool, validates arguments
 * and describes the tools to the planner.
 */
import { z } from 'zod';
import { calculator } from './calculator';
import { currentTime } from './current-time';
import { notesRead, notesWrite } from './notes';
import type { ToolContext, ToolDefinition } from './tool';
import { wait } from './wait';

export const BUILTIN_TOOLS: readonly ToolDefinition[] = [calculator, currentTime, notesWrite, notesRead, wait];

/** What the planner is told about a tool. */
export interface ToolDescription {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
  /** Present (true) on tools whose truth changes outside the conversation. */
  live?: true;
}

export type ToolOutcome = { ok: true; result: unknown } | { ok: false; error: string };

export class ToolRegistry {
  private readonly tools = new Map<string, ToolDefinition>();

  constructor(tools: readonly ToolDefinition[] = BUILTIN_TOOLS) {
    for (const tool of tools) {
      if (this.tools.has(tool.name)) throw new Error(`duplicate tool "${tool.name}"`);
      this.tools.set(tool.name, tool);
    }
  }

  names(): string[] {
    return [...this.tools.keys()];
  }

  /** The live tools and the arguments of their preflight snapshot call. */
  liveTools(): { name: string; snapshotArgs: Record<string, unknown> }[] {
    return [...this.tools.values()].filter((t) => t.live).map((t) => ({ name: t.name, snapshotArgs: t.snapshotArgs ?? {} }));
  }

  describe(): ToolDescription[] {
    return [...this.tools.values()].map((t) => {
      const parameters = z.toJSONSchema(t.input, { unrepresentable: 'any' }) as Record<string, unknown>;
      delete parameters.$schema;
      return { name: t.name, description: t.description, parameters, ...(t.live ? { live: true as const } : {}) };
    });
  }

  /**
   * Runs a tool. An unknown tool, bad arguments or a failing handler become an
   * `{ok: false}` outcome for the planner to see, never a thrown error —
   * except cancellation, which must propagate.
   */
  async run(name: string, args: unknown, ctx: ToolContext): Promise<ToolOutcome> {
    const tool = this.tools.get(name);
    if (!tool) return { ok: false, error: `unknown tool "${name}"; available tools: ${this.names().join(', ')}` };
    const parsed = tool.input.safeParse(args ?? {});
    if (!parsed.success) {
      return { ok: false, error: `invalid arguments for ${name}: ${z.prettifyError(parsed.error).replace(/\n/g, '; ')}` };
    }
    try {
      return { ok: true, result: await tool.handler(parsed.data, ctx) };
    } catch (err) {
      if (ctx.signal.aborted) throw err;
      return { ok: false, error: `${name} failed: ${err instanceof Error ? err.message : String(err)}` };
    }
  }
}
