/** Skills: SKILL.md parsing, loading a folder of skills, and reading only a skill's own files. */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { loadSkills, readSkillFile } from '../../src/skills/load';
import { parseSkillMarkdown } from '../../src/skills/skill';
import { loadSkillTool } from '../../src/tools/load-skill';

const md = (front: string, body = 'Do the thing.') => `---\n${front}\n---\n${body}\n`;

test('a SKILL.md splits into its front matter (name, description) and its instructions', () => {
  assert.deepEqual(parseSkillMarkdown(md('name: tidy-up\ndescription: Tidies things.', '# Steps\n1. tidy')), {
    name: 'tidy-up',
    description: 'Tidies things.',
    body: '# Steps\n1. tidy',
  });
});

test('a bad SKILL.md is refused with what is wrong', () => {
  assert.throws(() => parseSkillMarkdown('no front matter'), /front matter block/);
  assert.throws(() => parseSkillMarkdown(md('name: [unclosed')), /not valid YAML/);
  assert.throws(() => parseSkillMarkdown(md('name: Bad Name\ndescription: x')), /lowercase letters.*at name/s);
  assert.throws(() => parseSkillMarkdown(md('name: ok')), /description/);
  assert.throws(() => parseSkillMarkdown(md('name: ok\ndescription: fine', '  ')), /no instructions/);
});

test("the repository's skills load, with the files beside them", () => {
  const skills = loadSkills();
  assert.deepEqual(skills.map((s) => s.name).sort(), ['daily-note', 'unit-convert']);
  const convert = skills.find((s) => s.name === 'unit-convert')!;
  assert.deepEqual(convert.files, ['factors.md']);
  assert.match(readSkillFile(convert, 'factors.md'), /1\.609344/);
});

test('only files listed in the skill folder can be read: no path tricks', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'skills-'));
  mkdirSync(path.join(dir, 'one'));
  writeFileSync(path.join(dir, 'one', 'SKILL.md'), md('name: one\ndescription: First.'));
  writeFileSync(path.join(dir, 'secret.txt'), 'top secret');
  const [one] = loadSkills(dir);
  assert.ok(one);
  for (const file of ['../secret.txt', '/etc/passwd', 'SKILL.md', 'one/../../secret.txt']) assert.throws(() => readSkillFile(one, file), /has no file/);
});

test('two skills of one name, or a broken one, stop loading with the path; a missing folder is no skills', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'skills-'));
  for (const sub of ['a', 'b']) {
    mkdirSync(path.join(dir, sub));
    writeFileSync(path.join(dir, sub, 'SKILL.md'), md('name: same\ndescription: Twice.'));
  }
  assert.throws(() => loadSkills(dir), /two skills .* "same"/);
  writeFileSync(path.join(dir, 'b', 'SKILL.md'), 'broken');
  assert.throws(() => loadSkills(dir), new RegExp(`skill ${path.join(dir, 'b', 'SKILL.md').replace(/[/\\.]/g, '\\$&')} is invalid`));
  assert.deepEqual(loadSkills(path.join(dir, 'nope')), []);
});

test('load_skill tells the planner every skill by name and description only, and is absent without skills', () => {
  assert.deepEqual(loadSkillTool([]), []);
  const [tool] = loadSkillTool(loadSkills());
  assert.ok(tool);
  assert.match(tool.description, /- daily-note: Keeps a dated daily log/);
  assert.match(tool.description, /- unit-convert: .*\(files: factors\.md\)/);
  assert.doesNotMatch(tool.description, /Never overwrite/, 'bodies stay out of the tool list');
});
