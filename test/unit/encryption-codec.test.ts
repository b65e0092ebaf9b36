import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { ValueError, type Payload } from '@temporalio/common';
import { EncryptionCodec, ENCRYPTED_ENCODING, parseKey } from '../../src/temporal/codec/encryption';
import { payloadCodecs } from '../../src/temporal/data-converter';

const plain = (text: string): Payload => ({ metadata: { encoding: new TextEncoder().encode('json/plain') }, data: new TextEncoder().encode(JSON.stringify(text)) });
const text = (p: Payload | undefined) => new TextDecoder().decode(p?.data ?? new Uint8Array());
const meta = (p: Payload | undefined, key: string) => new TextDecoder().decode(p?.metadata?.[key] ?? new Uint8Array());

test('a sealed payload hides its content and metadata, names its key, and opens to exactly what went in', async () => {
  const codec = new EncryptionCodec(parseKey(randomBytes(32).toString('base64')));
  const [sealed] = await codec.encode([plain('the secret tool result')]);
  assert.ok(sealed);
  assert.equal(meta(sealed, 'encoding'), ENCRYPTED_ENCODING);
  assert.match(meta(sealed, 'encryption-key-id'), /^[0-9a-f]{12}$/);
  assert.ok(!Buffer.from(sealed.data ?? []).includes('secret'), 'ciphertext carries the plaintext');
  assert.ok(!Buffer.from(sealed.data ?? []).includes('json/plain'), 'ciphertext carries the inner metadata');
  const [opened] = await codec.decode([sealed]);
  assert.equal(text(opened), JSON.stringify('the secret tool result'));
  assert.equal(meta(opened, 'encoding'), 'json/plain');
});

test('the same payload sealed twice differs (a fresh nonce each time)', async () => {
  const codec = new EncryptionCodec(parseKey('a passphrase that is long enough'));
  const [a] = await codec.encode([plain('x')]);
  const [b] = await codec.encode([plain('x')]);
  assert.notDeepEqual(Buffer.from(a?.data ?? []), Buffer.from(b?.data ?? []));
});

test('after a rotation the old key still opens what it sealed; a key nobody configured is a clear error, not garbage', async () => {
  const oldKey = parseKey(randomBytes(32).toString('hex'));
  const newKey = parseKey(randomBytes(32).toString('base64'));
  const [sealedBefore] = await new EncryptionCodec(oldKey).encode([plain('from last year')]);
  assert.ok(sealedBefore);
  const rotated = new EncryptionCodec(newKey, [oldKey]);
  assert.equal(text((await rotated.decode([sealedBefore]))[0]), JSON.stringify('from last year'));
  const [sealedNow] = await rotated.encode([plain('new')]);
  assert.equal(meta(sealedNow, 'encryption-key-id'), newKey.id);
  await assert.rejects(new EncryptionCodec(newKey).decode([sealedBefore]), (err: unknown) => err instanceof ValueError && /not configured/.test(err.message));
});

test('a sealed payload changed after sealing is refused (GCM integrity)', async () => {
  const codec = new EncryptionCodec(parseKey(randomBytes(32).toString('base64')));
  const [sealed] = await codec.encode([plain('balance: 100')]);
  const data = Buffer.from(sealed?.data ?? []);
  data[20] = (data[20] ?? 0) ^ 1;
  await assert.rejects(codec.decode([{ ...sealed, data }]), (err: unknown) => err instanceof ValueError && /could not be opened/.test(err.message));
});

test('payloads written before encryption was on pass through; keys parse from hex, base64 or a passphrase with stable ids', async () => {
  const codec = new EncryptionCodec(parseKey('passphrase'));
  assert.equal(text((await codec.decode([plain('old')]))[0]), JSON.stringify('old'));
  const hex = randomBytes(32).toString('hex');
  assert.equal(parseKey(hex).id, parseKey(Buffer.from(hex, 'hex').toString('base64')).id);
  assert.equal(parseKey('passphrase').id, parseKey(' passphrase ').id);
  assert.notEqual(parseKey('passphrase').id, parseKey('passphrase2').id);
  assert.throws(() => parseKey('  '), /empty/);
  assert.deepEqual(payloadCodecs({ THREADLINE_ENCRYPTION_KEY: undefined, THREADLINE_ENCRYPTION_OLD_KEYS: undefined }), []);
  assert.equal(payloadCodecs({ THREADLINE_ENCRYPTION_KEY: 'k', THREADLINE_ENCRYPTION_OLD_KEYS: 'a, b' }).length, 1);
});
