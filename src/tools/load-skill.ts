/**
 * `load_skill`: the planner sees each skill's name and description (in this tool's description);
 * loading one puts its instructions into the run's working memory as a chunk of their own, so
 * every later prompt of the run shows them — the skill's body never sits in the tool list.
 */
import { z } from 'zod';
import type { ChunkInput } from '../memory/model';
import { readSkillFile } from '../skills/load';
import type { Skill } from '../skills/skill';
import { operationIdFor } from '../store/memory-service';
import { defineTool, type ToolDefinition } from './tool';

/**
 * Instructions the model chose to follow: kept whole while the thread has room (priority just
 * under the run's goal), summarized alone rather than dropped when it must shrink (COMPRESSIBLE).
 */
export function skillChunk(skill: Skill, runId: string, stepId: string): ChunkInput {
  return {
    type: 'system',
    content: { kind: 'text', text: `Skill "${skill.name}" (loaded by step ${stepId}):\n${skill.body}` },
    priority: 85,
    retention: 'COMPRESSIBLE',
    agentModifiable: true,
    provenance: { runId, stepId },
  };
}

/** The `load_skill` tool over these skills; none when there are no skills. */
export function loadSkillTool(skills: readonly Skill[]): ToolDefinition[] {
  if (skills.length === 0) return [];
  const names = skills.map((s) => s.name);
  const catalogue = skills.map((s) => `- ${s.name}: ${s.description}${s.files.length ? ` (files: ${s.files.join(', ')})` : ''}`).join('\n');
  return [
    defineTool({
      name: 'load_skill',
      quick: true,
      description: `Loads a skill's instructions into your memory (or, with "file", reads one of its files). Load a skill before a task it fits, then follow it. Skills:\n${catalogue}`,
      input: z.object({ name: z.string().min(1).max(64), file: z.string().min(1).max(200).optional() }),
      async handler({ name, file }, ctx) {
        const skill = skills.find((s) => s.name === name);
        if (!skill) throw new Error(`no skill "${name}"; skills: ${names.join(', ')}`);
        if (file) return { skill: name, file, content: readSkillFile(skill, file) };
        // Without a memory thread (a worker with no memory) the instructions come back as the result.
        if (!ctx.memory || !ctx.runThread) return { skill: name, instructions: skill.body };
        await ctx.memory.apply(
          ctx.runThread,
          { op: 'add', chunks: [skillChunk(skill, ctx.runId, ctx.stepId)] },
          { origin: 'agent', reason: `skill ${name} loaded`, trigger: `tool step ${ctx.stepId}`, runId: ctx.runId, stepId: ctx.stepId },
          { operationId: operationIdFor(`${ctx.idempotencyKey}:skill`) },
        );
        return { skill: name, loaded: true, note: 'its instructions are now in your memory; follow them' };
      },
    }),
  ];
}
