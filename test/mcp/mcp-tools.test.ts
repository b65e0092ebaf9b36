/**
 * MCP tool servers as tools, end to end: the official filesystem and memory servers over stdio,
 * a test server over stdio that can be killed mid-call, and a Streamable HTTP server built with
 * the SDK — all named in one mcp.json (MCP_CONFIG) that the real worker reads. Plan and tree runs
 * on the real Temporal server, the stub model scripting the tool steps.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { z } from 'zod';
import type { Chunk } from '../../src/memory/model';
import type { ExecutionState } from '../../src/planning/execution-state';
import { openMemory } from '../../src/store/open-memory';
import { Runs } from '../../src/temporal/runs';
import { toolResultStoreFor } from '../../src/temporal/tool-results';
import { filesystemServer, memoryServer, sleepyServer, startHttpMcpServer, writeMcpConfig, type HttpMcpServer } from '../helpers/mcp-servers';
import { answer, askStep, cont, respondStep, toolStep } from '../helpers/scenarios';
import { lastMessage, StubModelServer, type StubRequest } from '../helpers/stub-model-server';
import { startTestEnv, stubProvider, testConfig, waitFor, type TestEnv } from '../helpers/temporal-env';

const stub = new StubModelServer();
const dir = mkdtempSync(path.join(os.tmpdir(), 'threadline-mcp-'));
const files = path.join(dir, 'files');
const marker = path.join(dir, 'sleep-started');
// The smallest valid PNG: 1×1, transparent.
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==', 'base64');
let web: HttpMcpServer;
let env: TestEnv;
let runs: Runs;

before(async () => {
  await stub.start();
  mkdirSync(files);
  writeFileSync(path.join(files, 'notes.txt'), 'The meeting is on Thursday at 10.\n');
  writeFileSync(path.join(files, 'pixel.png'), PNG);
  web = await startHttpMcpServer((server) => {
    server.registerTool('echo', { description: 'Echoes a text.', inputSchema: { text: z.string() } }, async ({ text }) => ({
      content: [{ type: 'text', text }],
      structuredContent: { echo: text },
    }));
  });
  const mcpConfig = writeMcpConfig(dir, {
    filesystem: filesystemServer(files),
    memory: memoryServer(path.join(dir, 'graph.jsonl')),
    sleepy: sleepyServer(marker),
    web: { type: 'http', url: web.url },
  });
  env = await startTestEnv({ provider: stubProvider(stub.url), config: testConfig({ MCP_CONFIG: mcpConfig, THREADLINE_ENCRYPTION_KEY: randomBytes(32).toString('base64') }) });
  runs = new Runs(env.client, env.config);
});
after(async () => {
  await env?.stop();
  await web?.stop();
  await stub.stop();
});

const result = (runId: string) => env.client.workflow.getHandle(runId).result() as Promise<ExecutionState>;
async function run(goal: string, script: Parameters<StubModelServer['script']>[1]): Promise<ExecutionState> {
  stub.script(goal, script);
  return result((await runs.start({ userId: 'mcp-user', goal })).runId);
}
const observed = (state: ExecutionState) => state.observations.map((o) => [o.kind, o.content]);

async function chunksOf(state: ExecutionState): Promise<Chunk[]> {
  const { memory, close } = await openMemory(env.config);
  try {
    return (await memory.view(state.threadId ?? '')).chunks;
  } finally {
    await close();
  }
}

test('a plan run calls MCP tools over stdio beside a built-in one; their results are the observations and the memory chunks, an image only as a reference', async () => {
  const goal = 'read my notes and remember Ada';
  const steps = [
    toolStep('filesystem.read_text_file', { path: path.join(files, 'notes.txt') }),
    toolStep('memory.create_entities', { entities: [{ name: 'Ada', entityType: 'person', observations: ['likes tea'] }] }),
    toolStep('memory.search_nodes', { query: 'Ada' }),
    toolStep('filesystem.read_media_file', { path: path.join(files, 'pixel.png') }),
    toolStep('calculator', { expression: '6*7' }),
  ];
  const state = await run(goal, { execution_plan: [{ steps: [...steps, respondStep] }], replan_decision: steps.map(() => cont), final_answer: [answer('done')] });
  assert.equal(state.status, 'completed', state.lastError ?? '');
  const [read, created, found, image, calc] = state.observations;
  assert.deepEqual([read?.kind, JSON.parse(read?.content ?? 'null')], ['tool', { content: 'The meeting is on Thursday at 10.\n' }]);
  assert.equal(created?.kind, 'tool');
  assert.deepEqual(JSON.parse(found?.content ?? 'null').entities, [{ name: 'Ada', entityType: 'person', observations: ['likes tea'] }]);
  assert.deepEqual(observed(state).at(-1), calc && ['tool', '{"value":42}']);

  // The image is saved in the blob store and referenced; its base64 is nowhere in the state.
  assert.equal(image?.kind, 'tool');
  assert.doesNotMatch(JSON.stringify(state), new RegExp(PNG.toString('base64').slice(0, 40)));

  // The planner was offered the MCP tools, named <server>.<tool>, with their own JSON Schemas.
  const tools = stub.requestsFor(goal, 'execution_plan')[0]?.messages[0]?.content ?? '';
  assert.match(tools, /"name": "filesystem\.read_text_file"[\s\S]*"required": \[\s*"path"\s*\]/);
  assert.match(tools, /"name": "memory\.search_nodes"/);
  assert.match(tools, /"name": "web\.echo"/);
  assert.match(tools, /"name": "calculator"/);

  // Each result is the step's action_response chunk in the run's memory (whole: the state keeps heads only).
  const chunks = await chunksOf(state);
  const responses = chunks.filter((c) => c.type === 'action_response').map((c) => (c.content.kind === 'json' ? (c.content.data as { result?: unknown }).result : null));
  assert.deepEqual(responses[0], { content: 'The meeting is on Thursday at 10.\n' });
  const [block] = (responses[3] as { content: { type: string; url: string; mimeType: string; bytes: number }[] }).content;
  assert.deepEqual({ ...block, url: undefined }, { type: 'image', mimeType: 'image/png', bytes: PNG.length, url: undefined });
  // Sealed like every blob (payload encryption is on here), so swept with them too; the worker's key opens it.
  const ref = block?.url ?? '';
  assert.match(ref, /^blob:[0-9a-f]{64}$/);
  const stored = readFileSync(path.join(env.config.dataDir, 'blobs', ref.slice(5, 7), ref.slice(5)));
  assert.ok(!stored.includes(PNG.subarray(0, 16)) && !stored.includes('image/png'), 'the blob holds the image in plain');
  const store = toolResultStoreFor(env.config);
  try {
    const media = await store.getMedia(ref);
    assert.equal(media?.mimeType, 'image/png');
    assert.ok(PNG.equals(media.bytes));
  } finally {
    await store.end();
  }
  assert.doesNotMatch(JSON.stringify(chunks), new RegExp(PNG.toString('base64').slice(0, 40)));
});

test("bad arguments (checked against the tool's JSON Schema) and a tool's own error are error observations the planner sees", async () => {
  const goal = 'read a file badly';
  const steps = [toolStep('filesystem.read_text_file', { file: 'notes.txt' }), toolStep('filesystem.read_text_file', { path: '/etc/hostname' }), toolStep('memory.nope', {})];
  const state = await run(goal, { execution_plan: [{ steps: [...steps, respondStep] }], replan_decision: steps.map(() => cont), final_answer: [answer('sorry')] });
  assert.equal(state.status, 'completed', state.lastError ?? '');
  const [bad, denied, unknown] = state.observations;
  assert.equal(bad?.kind, 'error');
  assert.match(bad?.content ?? '', /^invalid arguments for filesystem\.read_text_file: .*must have required property 'path'/);
  assert.equal(denied?.kind, 'error');
  assert.match(denied?.content ?? '', /^filesystem\.read_text_file failed: .*Access denied/);
  assert.match(unknown?.content ?? '', /^unknown tool "memory\.nope"/);
  // The next replan saw the error.
  const replans = stub.requestsFor(goal, 'replan_decision').map((r) => r.messages.map((m) => m.content).join('\n'));
  assert.match(replans[0] ?? '', /must have required property 'path'/);
});

test('a server killed during a call is an error observation, and the next call finds it restarted', async () => {
  const goal = 'sleep, then say who you are';
  if (existsSync(marker)) writeFileSync(marker, '');
  stub.script(goal, {
    execution_plan: [{ steps: [toolStep('sleepy.sleep', { ms: 600_000 }), toolStep('sleepy.pid', {}), respondStep] }],
    replan_decision: [cont, cont],
    final_answer: [answer('back')],
  });
  const { runId } = await runs.start({ userId: 'mcp-user', goal });
  const pid = await waitFor('the sleep call to start', async () => (existsSync(marker) && Number(readFileSync(marker, 'utf8'))) || null);
  process.kill(pid, 'SIGKILL');
  const state = await result(runId);
  assert.equal(state.status, 'completed', state.lastError ?? '');
  const [died, after] = state.observations;
  assert.equal(died?.kind, 'error');
  assert.match(died?.content ?? '', /^sleepy\.sleep failed: MCP server "sleepy" failed during the call .*it is being restarted/);
  assert.equal(after?.kind, 'tool');
  const restarted = (JSON.parse(after?.content ?? '{}') as { pid: number }).pid;
  assert.ok(restarted > 0 && restarted !== pid, `a new process answers (${restarted} after ${pid})`);
});

test("a tree run's ReAct iteration calls an MCP tool over Streamable HTTP", async () => {
  const goal = 'echo through the web server';
  stub.script(goal, {
    task_tree: [{ name: 'Echo', goal, subtasks: [{ name: 'Say', goal: 'echo hello over HTTP' }] }],
    react_action: [
      { thought: 'echo it', action: 'tool', tool: 'web.echo', args: { text: 'hello over HTTP' } },
      (r: StubRequest) => ({ thought: 'done', action: 'finish', result: lastMessage(r).includes('hello over HTTP') ? 'echoed' : 'not seen' }),
    ],
    final_answer: [answer('echoed')],
  });
  const state = await result((await runs.start({ userId: 'mcp-user', goal, engine: 'tree' })).runId);
  assert.equal(state.status, 'completed', state.lastError ?? '');
  assert.deepEqual(observed(state)[0], ['tool', '{"echo":"hello over HTTP"}']);
  assert.equal(state.tree?.subtasks[0]?.result, 'echoed');
});

test('tools/list_changed updates the tool set: the fingerprint changes, a run waiting from before is stale, new runs get the new tool', async () => {
  const before = await run('what do you have before', { execution_plan: [{ steps: [respondStep] }], final_answer: [answer('tools')] });
  const fingerprint = before.codeVersion?.tools;
  assert.ok(fingerprint);
  const waitingGoal = 'ask first, then echo';
  stub.script(waitingGoal, { execution_plan: [{ steps: [askStep('which text?'), toolStep('web.echo', { text: 'x' }), respondStep] }], replan_decision: [cont, cont], final_answer: [answer('x')] });
  const { runId: waiting } = await runs.start({ userId: 'mcp-user', goal: waitingGoal });
  await waitFor('the question', async () => (await runs.get(waiting)).status === 'waiting_user');

  // The server gains a tool: the SDK sends notifications/tools/list_changed to the connected client.
  for (const server of web.sessions) {
    server.registerTool('shout', { description: 'Shouts a text.', inputSchema: { text: z.string() } }, async ({ text }) => ({ content: [{ type: 'text', text: text.toUpperCase() }] }));
  }
  let probes = 0;
  const changed = await waitFor('a run planned on the new tool set', async () => {
    const state = await run(`what do you have now #${++probes}`, { execution_plan: [{ steps: [respondStep] }], final_answer: [answer('tools')] });
    return state.codeVersion?.tools !== fingerprint ? state : null;
  });
  assert.match(stub.requestsFor(changed.goal, 'execution_plan')[0]?.messages[0]?.content ?? '', /"name": "web\.shout"/);

  await runs.reply(waiting, 'x please');
  const stale = await result(waiting);
  assert.equal(stale.status, 'failed');
  assert.match(stale.lastError ?? '', /stale run: the tools changed/);

  const shouted = await run('shout it', { execution_plan: [{ steps: [toolStep('web.shout', { text: 'quiet' }), respondStep] }], replan_decision: [cont], final_answer: [answer('QUIET')] });
  assert.deepEqual(observed(shouted)[0], ['tool', '"QUIET"']);
});
