/**
 * Sub-agents as tools (pure, safe for workflow code): an agent profile is offered to the planner
 * as the tool `agent.<name>`; calling it starts a child run that carries the agent.
 */

export const AGENT_TOOL_PREFIX = 'agent.';

/** The tool name an agent is called by. */
export const agentToolName = (name: string): string => `${AGENT_TOOL_PREFIX}${name}`;

/** The agent a tool name calls, or null when it names an ordinary tool. */
export function agentNameOf(tool: string | undefined): string | null {
  return tool?.startsWith(AGENT_TOOL_PREFIX) && tool.length > AGENT_TOOL_PREFIX.length ? tool.slice(AGENT_TOOL_PREFIX.length) : null;
}

/** What a run of an agent carries (PlanExecutionInput.agent, ExecutionState.agent): who it is, what it may use. */
export interface RunAgent {
  name: string;
  instructions: string;
  /** Tool names (or `<prefix>.*` patterns) it may call; absent: every tool and every other agent. */
  tools?: string[];
  /** The model its calls ask the provider for; absent: the worker's model. */
  model?: string;
}

/** An agent call resolved by an activity: the agent, the engine its run uses, and the task (its goal). */
export interface AgentInvocation {
  agent: RunAgent;
  engine: 'plan' | 'tree' | 'react';
  task: string;
}

/** Whether a run of `agent` (none: an ordinary run) may call `tool`. An agent never calls itself. */
export function toolAllowed(agent: Pick<RunAgent, 'name' | 'tools'> | null | undefined, tool: string): boolean {
  if (!agent) return true;
  if (tool === agentToolName(agent.name)) return false;
  if (!agent.tools) return true;
  return agent.tools.some((allowed) => allowed === tool || (allowed.endsWith('.*') && tool.startsWith(allowed.slice(0, -1))));
}

/** The refusal a run of `agent` gets for a tool it may not call (an error observation). */
export const notAllowedMessage = (agent: Pick<RunAgent, 'name' | 'tools'>, tool: string): string =>
  `tool "${tool}" is not allowed for agent "${agent.name}"; its tools are: ${agent.tools ? agent.tools.join(', ') || 'none' : 'all but itself'}`;

/** How a run of `agent` is told what it is (its thread's system chunk). */
export const agentFrame = (agent: RunAgent): string => `You are acting as the sub-agent "${agent.name}": another run delegated a task to you; your final answer goes back to it.`;

/** The agent's profile as its run's thread holds it (its agent chunk): the instructions and what it may call. */
export const agentProfileText = (agent: RunAgent): string => `Instructions of this agent:\n${agent.instructions}${agent.tools ? `\nTools it may call: ${agent.tools.join(', ') || 'none'}` : ''}`;

/** The agent's instructions as the system text its run's prompts carry. */
export const agentInstructions = (agent: RunAgent): string => `${agentFrame(agent)}\n${agentProfileText(agent)}`;

/**
 * The system message a run's prompt adds for its agent: none when the run's working memory
 * (rendered into the same prompt) already holds the agent's profile, so it is said once.
 */
export function agentMessages(agent: RunAgent | undefined, memory: { messages: readonly { role: string; content: string }[] } | undefined): { role: 'system'; content: string }[] {
  if (!agent) return [];
  const inMemory = memory?.messages.some((m) => m.role === 'system' && m.content.includes(agentProfileText(agent))) ?? false;
  return inMemory ? [] : [{ role: 'system', content: agentInstructions(agent) }];
}
