/** The prompts' `Tools:` list: rendered once per tool set, and always as the tools are now. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { renderTools, type ToolDescription } from '../../src/calls/tool-description';
import { describeAgentTool, toolsForRun } from '../../src/tools/agent-tools';
import type { AgentProfile } from '../../src/agents/profile';

const tool = (name: string): ToolDescription => ({ name, description: `the ${name} tool`, parameters: { type: 'object', properties: {} } });

test('the list renders as its JSON, and a list of other tools (or the same names anew) renders anew', () => {
  const a = tool('a');
  const b = tool('b');
  assert.equal(renderTools([a, b]), JSON.stringify([a, b], null, 1));
  assert.equal(renderTools([a, b]), JSON.stringify([a, b], null, 1));
  assert.equal(renderTools([a]), JSON.stringify([a], null, 1));
  const changed = { ...b, description: 'changed' };
  assert.equal(renderTools([a, changed]), JSON.stringify([a, changed], null, 1));
  assert.equal(renderTools([]), '[]');
});

test('an agent profile is described by the same object every time, so a run’s tool list stays the same list', () => {
  const profile = { name: 'researcher', description: 'Looks things up.', instructions: 'Be brief.' } as AgentProfile;
  assert.equal(describeAgentTool(profile), describeAgentTool(profile));
  const first = toolsForRun([tool('a')], [profile], null);
  const second = toolsForRun([first[0]!], [profile], null);
  assert.deepEqual(first, second);
  assert.ok(first.every((t, i) => t === second[i]));
});
