/** Tool results past MAX_TOOL_RESULT_BYTES: kept as a head and a reference to the whole, sealed when encryption is on. */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { loadConfig } from '../../src/config';
import { MemoryBlobStore } from '../../src/store/blobs/blob-store';
import { EncryptionCodec, parseKey } from '../../src/temporal/codec/encryption';
import { BoundedResult, boundToolResult, TOOL_RESULT_HEAD_CHARS, ToolResultStore } from '../../src/tools/large-results';

const KB = 1024;

test('a result within the bound passes unchanged; past it the record holds its head, size and a reference that gives the whole back', async () => {
  const store = new ToolResultStore(new MemoryBlobStore(), []);
  const small = JSON.stringify({ text: 'a'.repeat(10 * KB) });
  assert.equal(await boundToolResult(small, 16 * KB, store), small);
  // Multi-byte text: counted in UTF-8 bytes, not characters (20 kB of "é" is 40 kB).
  const accented = JSON.stringify('é'.repeat(10 * KB));
  const bounded = BoundedResult.parse(JSON.parse(await boundToolResult(accented, 16 * KB, store)));
  assert.equal(bounded.bytes, Buffer.byteLength(accented));
  assert.equal(bounded.head, accented.slice(0, TOOL_RESULT_HEAD_CHARS));
  assert.match(bounded.note, /over MAX_TOOL_RESULT_BYTES \(16384\).*stored as blob:[0-9a-f]{64}$/);
  assert.equal(await store.get(bounded.ref ?? ''), accented);
  assert.equal(await store.get('blob:' + '0'.repeat(64)), null, 'an unknown reference is null');
});

test('a head never ends in half a surrogate pair; without a store the record says the rest is gone', async () => {
  const text = `${'x'.repeat(TOOL_RESULT_HEAD_CHARS - 1)}${'😀'.repeat(20 * KB)}`;
  const bounded = BoundedResult.parse(JSON.parse(await boundToolResult(text, 16 * KB, undefined)));
  assert.equal(bounded.ref, null);
  assert.equal(bounded.head.length, TOOL_RESULT_HEAD_CHARS - 1);
  assert.match(bounded.note, /only its first \d+ characters were kept$/);
});

test('with encryption the blob holds sealed bytes only, and the same key opens it', async () => {
  const blobs = new MemoryBlobStore();
  const key = parseKey(randomBytes(32).toString('base64'));
  const store = new ToolResultStore(blobs, [new EncryptionCodec(key)]);
  const text = `PLAINTEXT-MARK ${'y'.repeat(64 * KB)}`;
  const ref = await store.put(text);
  const stored = await blobs.get(ref.slice('blob:'.length));
  assert.ok(stored && !Buffer.from(stored).includes('PLAINTEXT-MARK'));
  assert.equal(await store.get(ref), text);
  assert.equal(await new ToolResultStore(blobs, [new EncryptionCodec(parseKey(randomBytes(32).toString('base64')))]).get(ref).catch(() => 'refused'), 'refused');
});

test('MAX_TOOL_RESULT_BYTES: 1 MiB by default, 16 KiB to 4 MiB', () => {
  assert.equal(loadConfig({}).MAX_TOOL_RESULT_BYTES, 1024 * KB);
  assert.throws(() => loadConfig({ MAX_TOOL_RESULT_BYTES: String(5 * 1024 * KB) }), /MAX_TOOL_RESULT_BYTES/);
});
