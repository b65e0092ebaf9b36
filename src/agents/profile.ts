/** The agent profiles file (AGENTS_CONFIG): its schema, validated with zod. */
import { z } from 'zod';

/** An agent's name is the suffix of its tool's name (`agent.<name>`). */
const AgentName = z.string().regex(/^[A-Za-z0-9_-]{1,40}$/, 'an agent name is 1–40 letters, digits, "_" or "-" (its tool is agent.<name>)');

export const AgentProfileSchema = z.strictObject({
  name: AgentName,
  /** What the planner is told the agent does (the description of its tool). */
  description: z.string().trim().min(1, 'a description is required: it is what planners see'),
  /** What the agent's runs are told, in every prompt. */
  instructions: z.string().trim().min(1, 'instructions are required'),
  /** Tool names (or `<prefix>.*` patterns, e.g. `github.*`) the agent may call; absent: all. */
  tools: z.array(z.string().min(1)).optional(),
  /** The engine its runs use. @default 'plan' */
  engine: z.enum(['plan', 'tree', 'react']).default('plan'),
  /** The model name sent to the provider for its runs' calls; absent: AGENT_MODEL. */
  model: z.string().min(1).optional(),
});

export const AgentsFileSchema = z.strictObject({ agents: z.array(AgentProfileSchema) });

export type AgentProfile = z.output<typeof AgentProfileSchema>;

/** What `GET /v1/agents` shows of a profile (`tools: null`: every tool). */
export interface AgentSummary {
  name: string;
  description: string;
  tools: string[] | null;
  engine: 'plan' | 'tree' | 'react';
  model?: string;
}

export const summarizeAgent = (p: AgentProfile): AgentSummary => ({
  name: p.name,
  description: p.description,
  tools: p.tools ?? null,
  engine: p.engine,
  ...(p.model ? { model: p.model } : {}),
});
