/** MCP tool results as observations (src/mcp/results.ts): structured content first, text as text, binaries as references. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { externalizeMedia, resultText, resultValue, type SaveMedia } from '../../src/mcp/results';

const saved: { base64: string; mimeType: string }[] = [];
const save: SaveMedia = async (base64, mimeType) => {
  saved.push({ base64, mimeType });
  return `blob:${saved.length}`;
};
const B64 = Buffer.from('0123456789').toString('base64'); // 10 bytes, "MDEyMzQ1Njc4OQ=="

test('one text block is its text; structured content wins over the text that repeats it', async () => {
  assert.equal(await resultValue({ content: [{ type: 'text', text: 'hello' }] }, save), 'hello');
  assert.deepEqual(await resultValue({ content: [{ type: 'text', text: '{"a":1}' }], structuredContent: { a: 1 } }, save), { a: 1 });
  assert.deepEqual(await resultValue({ content: [] }, save), []);
});

test('several blocks are kept in order; images, audio and blobs become references, annotations are dropped', async () => {
  saved.length = 0;
  const value = await resultValue(
    {
      content: [
        { type: 'text', text: 'a chart:' },
        { type: 'image', data: B64, mimeType: 'image/png', annotations: { audience: ['user'] } },
        { type: 'audio', data: B64, mimeType: 'audio/wav' },
        { type: 'resource', resource: { uri: 'file:///x.bin', mimeType: 'application/pdf', blob: B64 } },
        { type: 'resource', resource: { uri: 'file:///x.txt', text: 'plain' } },
        { type: 'resource_link', uri: 'file:///y', name: 'y' },
      ],
    },
    save,
  );
  assert.deepEqual(value, [
    'a chart:',
    { type: 'image', url: 'blob:1', mimeType: 'image/png', bytes: 10 },
    { type: 'audio', url: 'blob:2', mimeType: 'audio/wav', bytes: 10 },
    { type: 'resource', resource: { uri: 'file:///x.bin', mimeType: 'application/pdf', blob: { type: 'blob', url: 'blob:3', mimeType: 'application/pdf', bytes: 10 } } },
    { type: 'resource', resource: { uri: 'file:///x.txt', text: 'plain' } },
    { type: 'resource_link', uri: 'file:///y', name: 'y' },
  ]);
  assert.deepEqual(
    saved.map((s) => s.mimeType),
    ['image/png', 'audio/wav', 'application/pdf'],
  );
  assert.doesNotMatch(JSON.stringify(value), new RegExp(B64));
});

test('binaries inside structured content are replaced too', async () => {
  const value = await externalizeMedia({ content: [{ type: 'image', data: B64, mimeType: 'image/gif' }], note: 'x' }, save);
  assert.doesNotMatch(JSON.stringify(value), new RegExp(B64));
  assert.match(JSON.stringify(value), /"type":"image","url":"blob:\d+","mimeType":"image\/gif","bytes":10/);
});

test("an error result's message is its text blocks", () => {
  assert.equal(
    resultText({
      content: [
        { type: 'text', text: 'no such file' },
        { type: 'image', data: B64, mimeType: 'image/png' },
        { type: 'text', text: 'try again' },
      ],
    }),
    'no such file\ntry again',
  );
});
