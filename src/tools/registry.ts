/**
 * The tool registry: one place that knows every tool, validates arguments
 * and describes the tools to the planner. Its tools are a fixed list (the
 * built-in ones) plus whatever its sources offer now (src/tools/source.ts):
 * every method works on the current set, so a source changing its tools
 * changes what the planner sees, what a step may call and the fingerprint.
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { calculator } from './calculator';
import { currentTime } from './current-time';
import { notesRead, notesWrite } from './notes';
import type { ToolSource } from './source';
import type { ToolContext, ToolDefinition } from './tool';
import { wait } from './wait';
import type { ToolDescription } from '../calls/tool-description';

export const BUILTIN_TOOLS: readonly ToolDefinition[] = [calculator, currentTime, notesWrite, notesRead, wait];

export type ToolOutcome = { ok: true; result: unknown } | { ok: false; error: string };

function describeTool(t: ToolDefinition): ToolDescription {
  const parameters = { ...(t.parameters ?? (z.toJSONSchema(t.input, { unrepresentable: 'any' }) as Record<string, unknown>)) };
  delete parameters.$schema;
  return { name: t.name, description: t.description, parameters, ...(t.live ? { live: true as const } : {}) };
}

interface Snapshot {
  tools: Map<string, ToolDefinition>;
  descriptions: ToolDescription[];
  /** `fingerprint()`, once asked: every call of a run asks it (its code version). */
  fingerprint?: string;
}

/** A tool name or a pattern with `*` (any characters), as LIVE_TOOLS lists them. */
const namePattern = (pattern: string): RegExp =>
  new RegExp(
    `^${pattern
      .split('*')
      .map((part) => part.replace(/[.+?^${}()|[\]\\-]/g, '\\$&'))
      .join('.*')}$`,
  );

/** LIVE_TOOLS as a list (empty when unset). */
export const liveToolsOf = (setting: string | undefined): string[] =>
  (setting ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

export class ToolRegistry {
  private readonly fixed = new Map<string, ToolDefinition>();
  private readonly sources: { source: ToolSource; unsubscribe: () => void }[] = [];
  private readonly listeners = new Set<() => void>();
  /** The current set, rebuilt after a source changed. */
  private snapshot: Snapshot | null = null;

  /** Tools configured live (LIVE_TOOLS) besides those that declare it, by name or `*` pattern. */
  private readonly configuredLive: readonly RegExp[];

  constructor(tools: readonly ToolDefinition[] = BUILTIN_TOOLS, sources: readonly ToolSource[] = [], options: { live?: readonly string[] } = {}) {
    this.configuredLive = (options.live ?? []).map(namePattern);
    for (const tool of tools) {
      if (this.fixed.has(tool.name)) throw new Error(`duplicate tool "${tool.name}"`);
      this.fixed.set(tool.name, tool);
    }
    for (const source of sources) this.addSource(source);
  }

  /**
   * Adds a source: its tools join the set now and follow its changes. A source's tool whose name
   * is taken (by a fixed tool or an earlier source) is left out, with a warning. Returns what
   * removes the source again.
   */
  addSource(source: ToolSource): () => void {
    const entry = { source, unsubscribe: source.subscribe(() => this.changed()) };
    this.sources.push(entry);
    this.changed();
    return () => {
      entry.unsubscribe();
      this.sources.splice(this.sources.indexOf(entry), 1);
      this.changed();
    };
  }

  /** Calls `listener` after every change of the tool set; returns what unsubscribes. */
  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private changed(): void {
    this.snapshot = null;
    for (const listener of this.listeners) listener();
  }

  private current(): Snapshot {
    if (this.snapshot) return this.snapshot;
    const tools = new Map(this.fixed);
    for (const { source } of this.sources) {
      for (const tool of source.tools()) {
        if (tools.has(tool.name)) console.warn(`tool "${tool.name}" of source ${source.name} left out: the name is taken`);
        else tools.set(tool.name, tool);
      }
    }
    // A tool configured live is live for the prompt (its description says so) and for the preflight.
    for (const [name, tool] of tools) if (!tool.live && this.configuredLive.some((p) => p.test(name))) tools.set(name, { ...tool, live: true });
    this.snapshot = { tools, descriptions: [...tools.values()].map(describeTool) };
    return this.snapshot;
  }

  names(): string[] {
    return [...this.current().tools.keys()];
  }

  /** Whether `name` is a tool declared quick (an unknown name is not). */
  isQuick(name: string): boolean {
    return this.current().tools.get(name)?.quick === true;
  }

  /** The live tools and the arguments of their preflight snapshot call. */
  liveTools(): { name: string; snapshotArgs: Record<string, unknown> }[] {
    return [...this.current().tools.values()].filter((t) => t.live).map((t) => ({ name: t.name, snapshotArgs: t.snapshotArgs ?? {} }));
  }

  /** One tool's description (its parameters as JSON Schema), or null for a name no tool has. */
  describeTool(name: string): ToolDescription | null {
    return this.current().descriptions.find((d) => d.name === name) ?? null;
  }

  /** Why `args` do not fit the tool `name`'s schema (one line), or null when they do or no tool has that name (its call says so). */
  argsProblem(name: string, args: unknown): string | null {
    const tool = this.current().tools.get(name);
    if (!tool) return null;
    const parsed = tool.input.safeParse(args ?? {});
    return parsed.success ? null : z.prettifyError(parsed.error).replace(/\n/g, '; ');
  }

  describe(): ToolDescription[] {
    return [...this.current().descriptions];
  }

  /** The tool set as a fingerprint: the tools' names and parameter schemas, hashed. */
  fingerprint(): string {
    const snapshot = this.current();
    if (snapshot.fingerprint === undefined) {
      const described = [...snapshot.descriptions].sort((a, b) => a.name.localeCompare(b.name));
      snapshot.fingerprint = createHash('sha256').update(JSON.stringify(described)).digest('hex').slice(0, 16);
    }
    return snapshot.fingerprint;
  }

  /**
   * Runs a tool. An unknown tool, bad arguments or a failing handler become an
   * `{ok: false}` outcome for the planner to see, never a thrown error —
   * except cancellation, which must propagate.
   */
  async run(name: string, args: unknown, ctx: ToolContext): Promise<ToolOutcome> {
    const tool = this.current().tools.get(name);
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
