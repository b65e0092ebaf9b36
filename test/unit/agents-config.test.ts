/** The agent profiles file (AGENTS_CONFIG): validation, errors naming the file and field, and agents as tools. */
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { agentsConfigPath, AgentsConfigError, loadAgents, parseAgents } from '../../src/agents/load';
import { agentNameOf, toolAllowed } from '../../src/agents/names';
import { summarizeAgent } from '../../src/agents/profile';
import { resolveAgentCall, toolsForRun } from '../../src/tools/agent-tools';
import type { ToolDescription } from '../../src/calls/tool-description';

const FILE = '/etc/threadline/agents.json';
const researcher = { name: 'researcher', description: 'Looks things up.', instructions: 'Be brief.', tools: ['calculator'] };

/** The message parseAgents throws for `json`. */
function problem(json: unknown): string {
  try {
    parseAgents(typeof json === 'string' ? json : JSON.stringify(json), FILE);
  } catch (err) {
    assert.ok(err instanceof AgentsConfigError);
    return err.message;
  }
  return assert.fail(`accepted ${JSON.stringify(json)}`);
}

test('a valid file gives its profiles with defaults (engine plan, all tools)', () => {
  const agents = parseAgents(JSON.stringify({ agents: [researcher, { name: 'writer', description: 'Writes.', instructions: 'Write well.', engine: 'tree', model: 'gpt-x' }] }), FILE);
  assert.deepEqual(agents, [
    { ...researcher, engine: 'plan' },
    { name: 'writer', description: 'Writes.', instructions: 'Write well.', engine: 'tree', model: 'gpt-x' },
  ]);
  assert.deepEqual(agents.map(summarizeAgent), [
    { name: 'researcher', description: 'Looks things up.', tools: ['calculator'], engine: 'plan' },
    { name: 'writer', description: 'Writes.', tools: null, engine: 'tree', model: 'gpt-x' },
  ]);
});

test('errors name the file and the field at fault', () => {
  assert.match(problem('{"agents": ['), /^\/etc\/threadline\/agents\.json is not valid JSON/);
  assert.match(problem({ agents: [{ ...researcher, name: 'no spaces' }] }), /agents\.json is not a valid agents file:\n {2}agents\.0\.name: an agent name is 1–40 letters/);
  assert.match(problem({ agents: [{ ...researcher, description: ' ' }] }), /agents\.0\.description: a description is required/);
  assert.match(problem({ agents: [{ name: 'x', description: 'd' }] }), /agents\.0\.instructions: /);
  assert.match(problem({ agents: [{ ...researcher, engine: 'graph' }] }), /agents\.0\.engine: /);
  assert.match(problem({ agents: [{ ...researcher, tools: 'calculator' }] }), /agents\.0\.tools: /);
  assert.match(problem({ agents: [{ ...researcher, instruction: 'typo' }] }), /agents\.0: Unrecognized key: "instruction"/);
  assert.match(problem({ agents: [researcher, { ...researcher, description: 'again' }] }), /agents\.1\.name: "researcher" is used by an earlier agent/);
  assert.match(problem([researcher]), /\(top level\): /);
});

test('no file, no agents; the path is AGENTS_CONFIG or DATA_DIR/agents.json', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'agents-'));
  assert.equal(agentsConfigPath({ dataDir: dir }), path.join(dir, 'agents.json'));
  assert.equal(agentsConfigPath({ dataDir: dir, AGENTS_CONFIG: 'x/a.json' }), path.resolve('x/a.json'));
  assert.deepEqual(loadAgents(path.join(dir, 'agents.json')), []);
  writeFileSync(path.join(dir, 'agents.json'), JSON.stringify({ agents: [researcher] }));
  assert.deepEqual(
    loadAgents(path.join(dir, 'agents.json')).map((a) => a.name),
    ['researcher'],
  );
  writeFileSync(path.join(dir, 'bad.json'), JSON.stringify({ agents: [{ name: 'x' }] }));
  assert.throws(
    () => loadAgents(path.join(dir, 'bad.json')),
    (err: Error) => err.message.startsWith(`${path.join(dir, 'bad.json')} is not a valid agents file`),
  );
});

test('the example file shipped with the repository is valid', () => {
  const agents = loadAgents(path.join(__dirname, '../../examples/agents.json'));
  assert.deepEqual(
    agents.map((a) => [a.name, a.engine]),
    [
      ['researcher', 'plan'],
      ['planner', 'tree'],
    ],
  );
});

test('agents are tools agent.<name>; an agent run lists only its allowed tools and never itself', () => {
  const agents = parseAgents(JSON.stringify({ agents: [researcher, { name: 'helper', description: 'Helps.', instructions: 'Help.' }] }), FILE);
  const tools: ToolDescription[] = ['calculator', 'notes_write', 'github.search'].map((name) => ({ name, description: name, parameters: {} }));
  assert.deepEqual(
    toolsForRun(tools, agents, null).map((t) => t.name),
    ['calculator', 'notes_write', 'github.search', 'agent.researcher', 'agent.helper'],
  );
  const agentTool = toolsForRun(tools, agents, null).find((t) => t.name === 'agent.researcher');
  assert.match(agentTool?.description ?? '', /Looks things up\./);
  assert.deepEqual(agentTool?.parameters.required, ['task']);
  assert.deepEqual(
    toolsForRun(tools, agents, { name: 'researcher', instructions: 'i', tools: ['calculator'] }).map((t) => t.name),
    ['calculator'],
  );
  assert.deepEqual(
    toolsForRun(tools, agents, { name: 'helper', instructions: 'i' }).map((t) => t.name),
    ['calculator', 'notes_write', 'github.search', 'agent.researcher'],
  );
  assert.equal(toolAllowed({ name: 'a', tools: ['github.*'] }, 'github.search'), true);
  assert.equal(toolAllowed({ name: 'a', tools: ['github.*'] }, 'githubx'), false);
  assert.equal(agentNameOf('agent.researcher'), 'researcher');
  assert.equal(agentNameOf('agent.'), null);
  assert.equal(agentNameOf('calculator'), null);
});

test('a call of agent.<name> resolves to the agent and its task, or to the error its step observes', () => {
  const agents = parseAgents(
    JSON.stringify({
      agents: [
        { ...researcher, model: 'small' },
        { name: 'helper', description: 'Helps.', instructions: 'Help.', engine: 'tree' },
      ],
    }),
    FILE,
  );
  assert.deepEqual(resolveAgentCall(agents, null, 'agent.researcher', { task: 'find x' }), {
    ok: true,
    invocation: { agent: { name: 'researcher', instructions: 'Be brief.', tools: ['calculator'], model: 'small' }, engine: 'plan', task: 'find x' },
  });
  assert.equal(resolveAgentCall(agents, null, 'agent.helper', { task: 't' }).ok && 'tree', 'tree');
  const unknown = resolveAgentCall(agents, null, 'agent.nobody', { task: 't' });
  assert.deepEqual(unknown, { ok: false, error: 'unknown agent "nobody"; the agents are: agent.researcher, agent.helper' });
  const noTask = resolveAgentCall(agents, null, 'agent.researcher', {});
  assert.ok(!noTask.ok && /invalid arguments for agent\.researcher: .*task/.test(noTask.error), JSON.stringify(noTask));
  const refused = resolveAgentCall(agents, { name: 'researcher', instructions: 'i', tools: ['calculator'] }, 'agent.helper', { task: 't' });
  assert.deepEqual(refused, { ok: false, error: 'tool "agent.helper" is not allowed for agent "researcher"; its tools are: calculator' });
});
