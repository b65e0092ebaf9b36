import assert from 'node:assert/strict';
import { createHash, hkdfSync, randomBytes, scryptSync } from 'node:crypto';
import { test } from 'node:test';
import { ValueError, type Payload } from '@temporalio/common';
import { DEFAULT_KEY_NAME, EncryptionCodec, ENCRYPTED_ENCODING, parseKey } from '../../src/temporal/codec/encryption';
import { payloadCodecs } from '../../src/temporal/data-converter';

const plain = (text: string): Payload => ({ metadata: { encoding: new TextEncoder().encode('json/plain') }, data: new TextEncoder().encode(JSON.stringify(text)) });
const text = (p: Payload | undefined) => new TextDecoder().decode(p?.data ?? new Uint8Array());
const meta = (p: Payload | undefined, key: string) => new TextDecoder().decode(p?.metadata?.[key] ?? new Uint8Array());

test('a sealed payload hides its content and metadata, names its key, and opens to exactly what went in', async () => {
  const codec = new EncryptionCodec(parseKey(randomBytes(32).toString('base64')));
  const [sealed] = await codec.encode([plain('the secret tool result')]);
  assert.ok(sealed);
  assert.equal(meta(sealed, 'encoding'), ENCRYPTED_ENCODING);
  assert.equal(meta(sealed, 'encryption-key-id'), DEFAULT_KEY_NAME);
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
  const oldKey = parseKey(`2025:${randomBytes(32).toString('hex')}`);
  const newKey = parseKey(`2026:${randomBytes(32).toString('base64')}`);
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

test('payloads written before encryption was on pass through; keys parse from hex, base64 or a passphrase', async () => {
  const codec = new EncryptionCodec(parseKey('passphrase'));
  assert.equal(text((await codec.decode([plain('old')]))[0]), JSON.stringify('old'));
  const hex = randomBytes(32).toString('hex');
  assert.deepEqual(await parseKey(hex).key, await parseKey(Buffer.from(hex, 'hex').toString('base64')).key);
  assert.deepEqual(await parseKey('passphrase').key, await parseKey(' passphrase ').key);
  assert.notDeepEqual(await parseKey('passphrase').key, await parseKey('passphrase2').key);
  assert.throws(() => parseKey('  '), /empty/);
  assert.throws(() => parseKey('k1: '), /empty/);
  assert.deepEqual(payloadCodecs({ THREADLINE_ENCRYPTION_KEY: undefined, THREADLINE_ENCRYPTION_OLD_KEYS: undefined }), []);
  assert.equal(payloadCodecs({ THREADLINE_ENCRYPTION_KEY: 'k', THREADLINE_ENCRYPTION_OLD_KEYS: 'a, b' }).length, 1);
});

test('a key id is the name the operator gave it, never derived from the secret', async () => {
  assert.equal(parseKey(randomBytes(32).toString('base64')).id, DEFAULT_KEY_NAME);
  assert.equal(parseKey(randomBytes(32).toString('hex')).id, DEFAULT_KEY_NAME);
  assert.equal(parseKey('2026-11:' + randomBytes(32).toString('base64')).id, '2026-11');
  const named = parseKey('ops.key_2:a long passphrase');
  assert.equal(named.id, 'ops.key_2');
  assert.deepEqual(await named.key, await parseKey('ops.key_2: a long passphrase ').key);
  const [sealed] = await new EncryptionCodec(named).encode([plain('x')]);
  assert.equal(meta(sealed, 'encryption-key-id'), 'ops.key_2');
  assert.ok(
    !Buffer.from(JSON.stringify(sealed?.metadata)).includes(
      createHash('sha256')
        .update(await named.key)
        .digest('hex')
        .slice(0, 8),
    ),
  );
});

test('a passphrase is stretched with scrypt, once per process, in well under a second', async () => {
  const passphrase = `fresh passphrase ${randomBytes(4).toString('hex')}`;
  const started = performance.now();
  const key = await parseKey(passphrase).key;
  assert.ok(performance.now() - started < 1000, `scrypt took ${Math.round(performance.now() - started)} ms`);
  assert.deepEqual(key, scryptSync(passphrase, `threadline payload encryption/${DEFAULT_KEY_NAME}`, 32, { N: 2 ** 16, r: 8, p: 1, maxmem: 128 * 1024 * 1024 }));
  assert.notDeepEqual(key, Buffer.from(hkdfSync('sha256', passphrase, 'threadline', 'payload encryption', 32)));
  // The same text again costs nothing: the derivation is shared, not repeated per codec or payload.
  assert.equal(parseKey(passphrase).key, parseKey(` ${passphrase}`).key);
});

/** Sealed by the release before named keys (HKDF-only passphrase, id a hash prefix of the key): fixed bytes, not regenerated. */
const LEGACY = [
  {
    key: 'correct horse battery staple',
    payload: {
      metadata: { encoding: 'binary/encrypted', 'encryption-cipher': 'AES-256-GCM', 'encryption-key-id': '06f648c1d271' },
      data: 'B+ZYJ8heVMtYgPPRzYvEAUFF4qFT5zd51FT9MOlSkVtWEvl7FEnx3NiWjDsVYNge6BrEOFfuHfM8IynVs4e/lgZdu0Yoz8/6RG01yFyYkKB0NuQJaRTxmWYDarksVTo=',
    },
  },
  {
    key: '6b2f0f6c0a1e4b9a8d3c7e5f1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d',
    payload: {
      metadata: { encoding: 'binary/encrypted', 'encryption-cipher': 'AES-256-GCM', 'encryption-key-id': 'fea652238a50' },
      data: '17VlcafR/8UDBHt6Nfxip6/rXq3fQIUbI61lFhv1vu8HyRbwoQQ7WlosZAHn1z5BbtxeMc8MqSOsAg9go19s81cSJHJfYcbj+xiLdnjYMJBSNqrSeOLopWvn75JLnAc=',
    },
  },
];
const asPayload = (p: (typeof LEGACY)[number]['payload']): Payload => ({
  metadata: Object.fromEntries(Object.entries(p.metadata).map(([k, v]) => [k, new TextEncoder().encode(v)])),
  data: Buffer.from(p.data, 'base64'),
});

test('payloads sealed before named keys still open, as the current key, an old key, or a key given a name since', async () => {
  const sealedBefore = JSON.stringify('sealed by the release before named keys');
  for (const { key, payload } of LEGACY) {
    const fresh = randomBytes(32).toString('base64');
    for (const codec of [new EncryptionCodec(parseKey(key)), new EncryptionCodec(parseKey(`new:${fresh}`), [parseKey(key)]), new EncryptionCodec(parseKey(`old-one:${key}`))]) {
      assert.equal(text((await codec.decode([asPayload(payload)]))[0]), sealedBefore, key);
      // …while what it seals now carries the name, not the hash.
      const [now] = await codec.encode([plain('new')]);
      assert.notEqual(meta(now, 'encryption-key-id'), payload.metadata['encryption-key-id']);
      assert.equal(meta(now, 'encryption-key-scheme'), 'named');
    }
    await assert.rejects(new EncryptionCodec(parseKey(fresh)).decode([asPayload(payload)]), /not configured/);
  }
});

test('keys sharing a name (unnamed ones share `default`) each open what they sealed; a key named differently is not configured', async () => {
  const first = parseKey(randomBytes(32).toString('base64'));
  const second = parseKey('another passphrase');
  const [byFirst] = await new EncryptionCodec(first).encode([plain('one')]);
  const [bySecond] = await new EncryptionCodec(second).encode([plain('two')]);
  assert.ok(byFirst && bySecond);
  const rotated = new EncryptionCodec(second, [first]);
  assert.deepEqual((await rotated.decode([byFirst, bySecond])).map(text), [JSON.stringify('one'), JSON.stringify('two')]);
  await assert.rejects(new EncryptionCodec(parseKey(`k2:${randomBytes(32).toString('hex')}`)).decode([byFirst]), /not configured/);
});
