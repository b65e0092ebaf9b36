/** The tool registry and the built-in tools, run the way a plan step runs them. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { z } from 'zod';
import { MemoryKeyValueStore } from '../../src/store/kv';
import { BUILTIN_TOOLS, liveToolsOf, ToolRegistry, type ToolOutcome } from '../../src/tools/registry';
import { defineTool } from '../../src/tools/tool';
import { toolContext as context } from '../helpers/tool-context';

const registry = new ToolRegistry();

function ok(outcome: ToolOutcome): unknown {
  assert.ok(outcome.ok, `expected success, got ${outcome.ok ? '' : outcome.error}`);
  return outcome.result;
}

function error(outcome: ToolOutcome): string {
  assert.equal(outcome.ok, false, `expected failure, got ${JSON.stringify(outcome)}`);
  return outcome.ok ? '' : outcome.error;
}

test('calculator evaluates expressions', async () => {
  assert.deepEqual(ok(await registry.run('calculator', { expression: '(12 + 30) * 2' }, context())), { value: 84 });
  assert.deepEqual(ok(await registry.run('calculator', { expression: 'sqrt(16) / 4' }, context())), { value: 1 });
  assert.deepEqual(ok(await registry.run('calculator', { expression: '2^10 - 0.5' }, context())), { value: 1023.5 });
});

test('calculator refuses what is not plain arithmetic, as mathjs security guidance advises, and leaves the shared mathjs untouched', async () => {
  const hostile = [
    'import({x: 1}, {override: true})',
    'createUnit("foo")',
    'evaluate("1+1")',
    'parse("1+1")',
    'simplify("x+x")',
    'a = 5',
    'f(x) = x^2',
    'ones(10000, 10000)',
    'range(1, 1e9)',
    '[1, 2, 3]',
    '{a: 1}',
    '5 cm',
    'x + 1',
    'sqrt(4) ? 1 : 2',
    'max(' + Array.from({ length: 30 }, () => '1').join(',') + ')',
    'cos.constructor("return process")()',
  ];
  for (const expression of hostile) {
    const message = error(await registry.run('calculator', { expression }, context()));
    assert.match(message, /^calculator failed: /, `${expression}: ${message}`);
  }
  assert.deepEqual(ok(await registry.run('calculator', { expression: 'max(1, 2, 3) + round(pi, 2) + 5!' }, context())), { value: 126.14 });
  assert.deepEqual(ok(await registry.run('calculator', { expression: '17 % 5 + -(2^3)' }, context())), { value: -6 });
  // The shared instance still evaluates and parses as before.
  const shared = await import('mathjs');
  assert.equal(shared.evaluate('1 + 1'), 2);
  assert.equal(shared.parse('x + 1').type, 'OperatorNode');
});

test('calculator turns an invalid or non-finite expression into a failed outcome the planner can read', async () => {
  assert.match(error(await registry.run('calculator', { expression: '2 +' }, context())), /^calculator failed: /);
  assert.match(error(await registry.run('calculator', { expression: '1/0' }, context())), /"1\/0" does not evaluate to a finite number/);
  assert.match(error(await registry.run('calculator', { expression: '"hello"' }, context())), /not plain arithmetic: only numbers/);
});

test('current_time gives the current time as ISO 8601 with the timezone offset', async () => {
  const before = Date.now();
  const { iso } = ok(await registry.run('current_time', { timezone: 'Asia/Kolkata' }, context())) as { iso: string };
  assert.match(iso, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+05:30$/);
  const t = Date.parse(iso);
  assert.ok(t >= before - 1 && t <= Date.now() + 1, `${iso} is not now`);

  const { iso: utc } = ok(await registry.run('current_time', {}, context())) as { iso: string };
  assert.match(utc, /Z$|\+00:00$/, 'UTC by default');
});

test('current_time with an unknown timezone fails, naming it', async () => {
  assert.equal(error(await registry.run('current_time', { timezone: 'Mars/Olympus' }, context())), 'current_time failed: unknown timezone "Mars/Olympus"');
});

test('notes are kept per user: a user reads back their own note, another user sees none', async () => {
  const store = new MemoryKeyValueStore();
  assert.deepEqual(ok(await registry.run('notes_write', { key: 'color', value: 'green' }, context({ store }))), { ok: true });
  assert.deepEqual(ok(await registry.run('notes_read', { key: 'color' }, context({ store }))), { value: 'green' });
  assert.deepEqual(ok(await registry.run('notes_read', { key: 'color' }, context({ store, userId: 'bob' }))), { value: null });
  assert.deepEqual(ok(await registry.run('notes_read', { key: 'shoe size' }, context({ store }))), { value: null });

  await registry.run('notes_write', { key: 'color', value: 'blue' }, context({ store }));
  assert.deepEqual(ok(await registry.run('notes_read', { key: 'color' }, context({ store }))), { value: 'blue' }, 'a write replaces');
  // A user id that looks like a path must not reach another user's notes.
  assert.deepEqual(ok(await registry.run('notes_read', { key: 'color' }, context({ store, userId: 'ada/../bob' }))), { value: null });
});

test('wait waits the given seconds and heartbeats while it waits', async () => {
  let beats = 0;
  const started = Date.now();
  const result = ok(await registry.run('wait', { seconds: 0.1 }, context({ heartbeat: () => void beats++ })));
  assert.deepEqual(result, { waited: 0.1 });
  assert.ok(Date.now() - started >= 95, `returned after ${Date.now() - started} ms`);
  assert.ok(beats >= 1);
  assert.deepEqual(ok(await registry.run('wait', { seconds: 0 }, context())), { waited: 0 });
});

test('wait stops promptly when its step is cancelled, and the cancellation propagates (it is not a tool failure)', async () => {
  const controller = new AbortController();
  const started = Date.now();
  setTimeout(() => controller.abort(), 50);
  await assert.rejects(registry.run('wait', { seconds: 30 }, context({ signal: controller.signal })), { name: 'AbortError' });
  assert.ok(Date.now() - started < 2000, `took ${Date.now() - started} ms to notice the abort`);
});

test('wait refuses more than 300 seconds or a negative time', async () => {
  assert.match(error(await registry.run('wait', { seconds: 301 }, context())), /invalid arguments for wait: .*seconds/);
  assert.match(error(await registry.run('wait', { seconds: -1 }, context())), /seconds/);
});

test('an unknown tool is a failed outcome naming the available tools', async () => {
  const message = error(await registry.run('web_search', { q: 'x' }, context()));
  assert.match(message, /unknown tool "web_search"/);
  for (const name of ['calculator', 'current_time', 'notes_write', 'notes_read', 'wait']) assert.ok(message.includes(name), name);
});

test('bad arguments are a failed outcome that names the offending field', async () => {
  assert.match(error(await registry.run('calculator', { expr: '1+1' }, context())), /^invalid arguments for calculator: .*expression/);
  assert.match(error(await registry.run('calculator', { expression: 42 }, context())), /expression/);
  assert.match(error(await registry.run('notes_write', { key: 'color' }, context())), /value/);
  assert.match(error(await registry.run('calculator', undefined, context())), /expression/);
});

test('describe() lists every tool with its JSON Schema parameters', () => {
  const described = registry.describe();
  assert.deepEqual(
    described.map((t) => t.name),
    ['calculator', 'current_time', 'notes_write', 'notes_read', 'wait'],
  );
  assert.deepEqual(
    registry.names(),
    described.map((t) => t.name),
  );
  for (const tool of described) {
    assert.ok(tool.description.length > 10, tool.name);
    assert.equal(tool.parameters.type, 'object', tool.name);
    assert.equal('$schema' in tool.parameters, false, tool.name);
  }
  const calc = described.find((t) => t.name === 'calculator');
  assert.deepEqual(calc?.parameters.required, ['expression']);
  assert.deepEqual(Object.keys((described.find((t) => t.name === 'notes_write')?.parameters.properties ?? {}) as object), ['key', 'value']);
  assert.equal(described.find((t) => t.name === 'current_time')?.parameters.required, undefined, 'timezone is optional');
});

test('extra tools can be registered next to the built-ins; a duplicate name is refused', async () => {
  const echo = defineTool({
    name: 'echo',
    description: 'Echoes the text back.',
    input: z.object({ text: z.string() }),
    async handler({ text }, ctx) {
      return { text, userId: ctx.userId };
    },
  });
  const withEcho = new ToolRegistry([...BUILTIN_TOOLS, echo]);
  assert.deepEqual(ok(await withEcho.run('echo', { text: 'hi' }, context())), { text: 'hi', userId: 'ada' });
  assert.ok(withEcho.describe().some((t) => t.name === 'echo'));
  assert.throws(() => new ToolRegistry([...BUILTIN_TOOLS, { ...echo, name: 'calculator' }]), /duplicate tool "calculator"/);
});

test('a tool that throws becomes a failed outcome, not a crash', async () => {
  const broken = defineTool({
    name: 'broken',
    description: 'Always fails.',
    input: z.object({}),
    async handler() {
      throw new Error('disk full');
    },
  });
  assert.equal(error(await new ToolRegistry([broken]).run('broken', {}, context())), 'broken failed: disk full');
});

test('LIVE_TOOLS: configured names and * patterns make tools live (and say so to the planner); others stay as they are', () => {
  const bankBalance = defineTool({ name: 'bank.balance', description: 'x', input: z.object({}), handler: async () => ({}) });
  const registry = new ToolRegistry([...BUILTIN_TOOLS, bankBalance], [], { live: liveToolsOf(' current_time , bank.* ') });
  assert.deepEqual(
    registry
      .liveTools()
      .map((t) => t.name)
      .sort(),
    ['bank.balance', 'current_time'],
  );
  assert.equal(registry.describe().find((d) => d.name === 'current_time')?.live, true);
  assert.equal(registry.describe().find((d) => d.name === 'calculator')?.live, undefined);
  assert.deepEqual(liveToolsOf(undefined), []);
});
