/** Loads the agent profiles (AGENTS_CONFIG, else `DATA_DIR/agents.json`; no file, no agents). */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { AgentsFileSchema, type AgentProfile } from './profile';

export class AgentsConfigError extends Error {
  override readonly name = 'AgentsConfigError';
}

/** Where the profiles are: AGENTS_CONFIG, else `DATA_DIR/agents.json`. */
export const agentsConfigPath = (config: { AGENTS_CONFIG?: string | undefined; dataDir: string }): string => path.resolve(config.AGENTS_CONFIG ?? path.join(config.dataDir, 'agents.json'));

/** Parses the file's text; throws AgentsConfigError naming the file and every problem (with its field). */
export function parseAgents(text: string, file: string): AgentProfile[] {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new AgentsConfigError(`${file} is not valid JSON: ${err instanceof Error ? err.message : String(err)}`);
  }
  const parsed = AgentsFileSchema.safeParse(json);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.') || '(top level)'}: ${i.message}`);
    throw new AgentsConfigError(`${file} is not a valid agents file:\n${lines.join('\n')}`);
  }
  const seen = new Set<string>();
  parsed.data.agents.forEach((agent, i) => {
    if (seen.has(agent.name)) throw new AgentsConfigError(`${file} is not a valid agents file:\n  agents.${i}.name: "${agent.name}" is used by an earlier agent`);
    seen.add(agent.name);
  });
  return parsed.data.agents;
}

/** The profiles in `file`; none when it does not exist. */
export function loadAgents(file: string): AgentProfile[] {
  if (!existsSync(file)) return [];
  return parseAgents(readFileSync(file, 'utf8'), file);
}
