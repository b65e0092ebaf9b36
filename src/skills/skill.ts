/**
 * A skill (the Agent Skills convention): a folder holding `SKILL.md`, whose YAML front matter
 * names and describes it and whose body is instructions for the model; files beside it are
 * material the instructions may refer to. Pure: parsing and validation only.
 */
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';

export const SkillFrontMatterSchema = z.object({
  name: z.string().regex(/^[a-z0-9][a-z0-9-]{0,63}$/, 'lowercase letters, digits and hyphens, at most 64 characters'),
  description: z.string().trim().min(1).max(1024),
});

export interface Skill {
  name: string;
  description: string;
  /** The instructions: SKILL.md without its front matter. */
  body: string;
  /** The skill's folder. */
  dir: string;
  /** Files beside SKILL.md, relative to `dir`. */
  files: string[];
}

const FRONT_MATTER = /^---\r?\n([\s\S]*?)\r?\n---\r?\n?([\s\S]*)$/;

/** Splits and validates a SKILL.md; throws a readable error naming what is wrong. */
export function parseSkillMarkdown(markdown: string): { name: string; description: string; body: string } {
  const match = FRONT_MATTER.exec(markdown.replace(/^\uFEFF/, ''));
  if (!match) throw new Error('SKILL.md must start with a front matter block between "---" lines (name, description)');
  let data: unknown;
  try {
    data = parseYaml(match[1] ?? '');
  } catch (err) {
    throw new Error(`front matter is not valid YAML: ${err instanceof Error ? err.message : String(err)}`);
  }
  const parsed = SkillFrontMatterSchema.safeParse(data);
  if (!parsed.success) throw new Error(`front matter: ${z.prettifyError(parsed.error).replace(/\n/g, '; ')}`);
  const body = (match[2] ?? '').trim();
  if (!body) throw new Error('SKILL.md has no instructions after its front matter');
  return { ...parsed.data, body };
}
