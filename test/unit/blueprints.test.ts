/** Blueprints (seed 003 §9): the shipped files load, their parameters are validated, their trees expand and work with the built-in tools. */
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { expandBlueprint, paramsProblem } from '../../src/blueprints/blueprint';
import { loadBlueprints } from '../../src/blueprints/load';
import { demoIntents } from '../../src/calls/demo-intents';
import { dfs, buildTree, treeProblems } from '../../src/planning/task-tree';

const shipped = loadBlueprints();
const byName = (name: string) => {
  const b = shipped.find((x) => x.name === name);
  assert.ok(b, `blueprint ${name} is shipped`);
  return b;
};

test('the shipped blueprints load, and every leaf of their expanded trees is something the built-in tools do', () => {
  assert.deepEqual(
    shipped.map((b) => b.name),
    ['budget-split', 'time-check'],
  );
  const examples: Record<string, Record<string, unknown>> = {
    'budget-split': { total: 120, people: 4, label: 'dinner' },
    'time-check': { home: 'Europe/Paris', away: 'America/New_York' },
  };
  for (const b of shipped) {
    const params = examples[b.name] ?? {};
    assert.equal(paramsProblem(b, params), null, b.name);
    const tree = expandBlueprint(b, params);
    assert.deepEqual(treeProblems(tree, { maxDepth: 3, maxFanout: 8 }), [], b.name);
    assert.doesNotMatch(JSON.stringify(tree), /\{\{/, `${b.name}: every placeholder filled`);
    for (const leaf of dfs(buildTree(tree)).filter((n) => n.subtasks.length === 0)) {
      assert.equal(demoIntents(leaf.goal).length, 1, `${b.name} ${leaf.index} "${leaf.goal}" maps to one built-in tool call`);
    }
  }
  assert.equal(expandBlueprint(byName('budget-split'), examples['budget-split'] ?? {}).subtasks?.[0]?.goal, 'Calculate 120/4');
});

test('parameters are checked against the blueprint’s JSON Schema, field by field', () => {
  const b = byName('budget-split');
  const problem = paramsProblem(b, { total: -5, people: 2.5, extra: true }) ?? '';
  assert.match(problem, /total/);
  assert.match(problem, /people/);
  assert.match(problem, /label/);
  assert.match(paramsProblem(byName('time-check'), { home: 'Paris', away: 'America/New_York' }) ?? '', /home/);
});

test('a folder with an invalid or duplicate blueprint stops loading with the file named; no folder means no blueprints', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'threadline-blueprints-'));
  writeFileSync(path.join(dir, 'bad.json'), JSON.stringify({ name: 'Bad Name', description: 'x', params: { type: 'object' }, tree: { name: 'a', goal: 'b', subtasks: [] } }));
  assert.throws(() => loadBlueprints(dir), /bad\.json is invalid/);
  assert.deepEqual(loadBlueprints(path.join(dir, 'missing')), []);
});
