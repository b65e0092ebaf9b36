/** Loads the skills kept as folders in SKILLS_DIR (the repository's `skills/` by default). */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { parseSkillMarkdown, type Skill } from './skill';

/** The repository's own skills. */
export const DEFAULT_SKILLS_DIR = path.resolve(__dirname, '..', '..', 'skills');

/** Files of a skill folder besides SKILL.md (one level of subfolders), relative and sorted. */
function filesBeside(dir: string): string[] {
  const out: string[] = [];
  const walk = (rel: string, depth: number) => {
    for (const entry of readdirSync(path.join(dir, rel), { withFileTypes: true })) {
      const child = rel ? `${rel}/${entry.name}` : entry.name;
      if (entry.isDirectory() && depth < 2) walk(child, depth + 1);
      else if (entry.isFile() && child !== 'SKILL.md') out.push(child);
    }
  };
  walk('', 0);
  return out.sort();
}

/** Every folder of `dir` holding a SKILL.md, validated; a bad skill stops start-up with its path and what is wrong. */
export function loadSkills(dir: string = DEFAULT_SKILLS_DIR): Skill[] {
  let entries: string[];
  try {
    entries = readdirSync(dir).sort();
  } catch {
    return []; // no folder, no skills
  }
  const skills: Skill[] = [];
  for (const entry of entries) {
    const skillDir = path.join(dir, entry);
    const file = path.join(skillDir, 'SKILL.md');
    if (!statSync(skillDir).isDirectory() || !statSync(file, { throwIfNoEntry: false })?.isFile()) continue;
    let parsed: ReturnType<typeof parseSkillMarkdown>;
    try {
      parsed = parseSkillMarkdown(readFileSync(file, 'utf8'));
    } catch (err) {
      throw new Error(`skill ${file} is invalid: ${err instanceof Error ? err.message : String(err)}`);
    }
    if (skills.some((s) => s.name === parsed.name)) throw new Error(`two skills in ${dir} are named "${parsed.name}"`);
    skills.push({ ...parsed, dir: skillDir, files: filesBeside(skillDir) });
  }
  return skills;
}

/** A file beside a skill's SKILL.md, by its relative path; anything outside the skill's folder is refused. */
export function readSkillFile(skill: Skill, file: string, maxBytes = 64 * 1024): string {
  if (!skill.files.includes(file)) {
    throw new Error(`skill "${skill.name}" has no file "${file}"${skill.files.length ? `; its files: ${skill.files.join(', ')}` : ''}`);
  }
  const text = readFileSync(path.join(skill.dir, file), 'utf8');
  return text.length > maxBytes ? `${text.slice(0, maxBytes)}\n… (${text.length - maxBytes} more characters)` : text;
}
