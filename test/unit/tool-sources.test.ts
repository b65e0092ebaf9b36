/**
 * Tool sources (src/tools/source.ts): tools that come and go at run time. The registry's
 * description, its calls and the tools fingerprint follow the current set; a tool defined by a
 * JSON Schema (as MCP tools are) is shown with that schema and validated against it with Ajv.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { z } from 'zod';
import { jsonSchemaInput } from '../../src/tools/json-schema-input';
import { ToolRegistry } from '../../src/tools/registry';
import { ToolSet } from '../../src/tools/source';
import { defineTool } from '../../src/tools/tool';
import { toolContext } from '../helpers/tool-context';

const SCHEMA = {
  $schema: 'http://json-schema.org/draft-07/schema#',
  type: 'object',
  properties: { path: { type: 'string', minLength: 1 }, lines: { type: 'integer', minimum: 1 }, when: { type: 'string', format: 'date' } },
  required: ['path'],
  additionalProperties: false,
};
const readFile = defineTool({
  name: 'files.read',
  description: 'Reads a file.',
  input: jsonSchemaInput(SCHEMA),
  parameters: SCHEMA,
  handler: async (args) => ({ read: args.path }),
});
const echo = defineTool({ name: 'echo', description: 'Echoes.', input: z.object({ text: z.string() }), handler: async ({ text }) => text });

test("a source's tools join the registry, and its changes reach describe, run, names and the fingerprint", async () => {
  const source = new ToolSet('files');
  const registry = new ToolRegistry(undefined, [source]);
  let changes = 0;
  registry.onChange(() => changes++);
  const before = registry.fingerprint();
  assert.match((await registry.run('files.read', { path: 'a' }, toolContext())).ok ? '' : 'unknown', /unknown/);

  source.set([readFile]);
  assert.equal(changes, 1);
  assert.ok(registry.names().includes('files.read') && registry.names().includes('calculator'));
  assert.deepEqual(await registry.run('files.read', { path: 'a.txt' }, toolContext()), { ok: true, result: { read: 'a.txt' } });
  const described = registry.describe().find((t) => t.name === 'files.read');
  // Shown as the source gave it (without $schema, like the built-in tools).
  const { $schema: _, ...shown } = SCHEMA;
  assert.deepEqual(described?.parameters, shown);
  const during = registry.fingerprint();
  assert.notEqual(during, before);

  source.set([]);
  assert.equal(registry.fingerprint(), before, 'the same tools, the same fingerprint');
  assert.ok(!registry.names().includes('files.read'));
});

test("a source cannot take a name already taken: the fixed tool stays, the source's is left out", async () => {
  const registry = new ToolRegistry([echo], [new ToolSet('a', [{ ...readFile, name: 'echo' }]), new ToolSet('b', [readFile])]);
  assert.deepEqual(registry.names(), ['echo', 'files.read']);
  assert.deepEqual(await registry.run('echo', { text: 'hi' }, toolContext()), { ok: true, result: 'hi' });
});

test('a source added later joins, and removing it takes its tools away', () => {
  const registry = new ToolRegistry([echo]);
  const remove = registry.addSource(new ToolSet('b', [readFile]));
  assert.deepEqual(registry.names(), ['echo', 'files.read']);
  remove();
  assert.deepEqual(registry.names(), ['echo']);
});

test('arguments of a JSON-Schema tool are checked by Ajv, every problem reported with its path', async () => {
  const registry = new ToolRegistry([readFile]);
  const outcome = await registry.run('files.read', { path: '', lines: 0, when: 'yesterday', extra: true }, toolContext());
  assert.equal(outcome.ok, false);
  const message = outcome.ok ? '' : outcome.error;
  assert.match(message, /^invalid arguments for files\.read: /);
  assert.match(message, /must NOT have fewer than 1 characters.*→ at path/);
  assert.match(message, /must be >= 1.*→ at lines/);
  assert.match(message, /must match format "date".*→ at when/);
  assert.match(message, /must NOT have additional properties \("extra"\)/);
  assert.deepEqual(await registry.run('files.read', { path: 'ok', lines: 3, when: '2026-01-31' }, toolContext()), { ok: true, result: { read: 'ok' } });
});

test('a 2020-12 schema is compiled as 2020-12; a schema that does not compile throws', () => {
  const tuple = jsonSchemaInput({
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    type: 'object',
    properties: { pair: { type: 'array', prefixItems: [{ type: 'number' }, { type: 'string' }], items: false } },
  });
  assert.equal(tuple.safeParse({ pair: [1, 'a'] }).success, true);
  assert.equal(tuple.safeParse({ pair: ['a', 1] }).success, false);
  assert.equal(tuple.safeParse({ pair: [1, 'a', 2] }).success, false);
  assert.throws(() => jsonSchemaInput({ type: 'object', properties: { a: { type: 'no-such-type' } } }));
});
