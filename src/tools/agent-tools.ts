/**
 * Agents as tools, on the activity side: what a run's prompts list (its allowed tools and agents)
 * and how an `agent.<name>` call becomes an AgentInvocation the engine starts as a child run.
 */
import { z } from 'zod';
import type { ToolDescription } from '../calls/tool-description';
import { agentNameOf, agentToolName, notAllowedMessage, toolAllowed, type AgentInvocation, type RunAgent } from '../agents/names';
import type { AgentProfile } from '../agents/profile';

const AgentArgs = z.object({ task: z.string().trim().min(1, 'the task for the agent is required') });

/** Each profile's description, made once: prompts list the same objects call after call (renderTools). */
const agentTools = new WeakMap<AgentProfile, ToolDescription>();

/** An agent's tool description: its description, and one argument, the task. */
export function describeAgentTool(p: AgentProfile): ToolDescription {
  let described = agentTools.get(p);
  if (!described) {
    described = {
      name: agentToolName(p.name),
      description: `Sub-agent: ${p.description} It runs as a separate run on the task you give and returns its final answer.`,
      parameters: { type: 'object', properties: { task: { type: 'string', description: 'what the agent should do, self-contained' } }, required: ['task'], additionalProperties: false },
    };
    agentTools.set(p, described);
  }
  return described;
}

/** The tools a run's prompts list: the worker's tools and the agents, less what the run's agent may not call. */
export function toolsForRun(tools: ToolDescription[], agents: readonly AgentProfile[], agent: RunAgent | null | undefined): ToolDescription[] {
  return [...tools, ...agents.map(describeAgentTool)].filter((t) => toolAllowed(agent, t.name));
}

/** What a run carries of a profile. */
export const runAgentOf = (p: AgentProfile): RunAgent => ({
  name: p.name,
  instructions: p.instructions,
  ...(p.tools ? { tools: p.tools } : {}),
  ...(p.model ? { model: p.model } : {}),
});

/** Resolves a call of `agent.<name>` by a run (of `caller`, if an agent's): the invocation, or the error its step observes. */
export function resolveAgentCall(
  agents: readonly AgentProfile[],
  caller: RunAgent | null | undefined,
  tool: string,
  args: unknown,
): { ok: true; invocation: AgentInvocation } | { ok: false; error: string } {
  const name = agentNameOf(tool);
  const profile = agents.find((a) => a.name === name);
  if (!name || !profile) return { ok: false, error: `unknown agent "${name ?? tool}"; the agents are: ${agents.map((a) => agentToolName(a.name)).join(', ') || 'none'}` };
  if (caller && !toolAllowed(caller, tool)) return { ok: false, error: notAllowedMessage(caller, tool) };
  const parsed = AgentArgs.safeParse(args ?? {});
  if (!parsed.success) return { ok: false, error: `invalid arguments for ${tool}: ${z.prettifyError(parsed.error).replace(/\n/g, '; ')}` };
  return { ok: true, invocation: { agent: runAgentOf(profile), engine: profile.engine, task: parsed.data.task } };
}
