/** The claim-check codec over the blob stores (the stores themselves: test/store/blob-store.conformance.ts). */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import type { Payload } from '@temporalio/common';
import { FileBlobStore, MemoryBlobStore, type BlobStore } from '../../src/store/blobs/blob-store';
import { CLAIM_CHECK_ENCODING, ClaimCheckCodec } from '../../src/temporal/codec/claim-check';
import { payloadCodecs } from '../../src/temporal/data-converter';

const json = (value: unknown): Payload => ({ metadata: { encoding: Buffer.from('json/plain') }, data: Buffer.from(JSON.stringify(value)) });
const encodingOf = (p: Payload) => Buffer.from(p.metadata?.encoding ?? []).toString();

async function roundTrip(blobs: BlobStore): Promise<void> {
  const codec = new ClaimCheckCodec(blobs, 1024);
  const small = json({ small: true });
  const big = json({ text: 'B'.repeat(300_000) });
  const [keptSmall, checked] = await codec.encode([small, big]);
  assert.deepEqual(keptSmall, small, 'payloads under the threshold pass unchanged');
  assert.equal(encodingOf(checked!), CLAIM_CHECK_ENCODING);
  assert.ok((checked!.data?.length ?? 0) < 100, 'history keeps a reference of a few bytes');
  const [a, b] = await codec.decode([keptSmall!, checked!]);
  assert.deepEqual(a, small);
  assert.equal(Buffer.from(b!.data ?? []).toString(), Buffer.from(big.data ?? []).toString());
  // The same payload twice is one blob.
  const [again] = await codec.encode([big]);
  assert.deepEqual(again, checked);
  // A reference whose blob is gone says so.
  const gone = { ...checked!, data: Buffer.from('0'.repeat(64)) };
  await assert.rejects(codec.decode([gone]), /not in the blob store/);
}

test('payloads over the threshold go to the blob store and come back whole (memory and file stores)', async () => {
  await roundTrip(new MemoryBlobStore());
  await roundTrip(new FileBlobStore(mkdtempSync(path.join(os.tmpdir(), 'blobs-'))));
});

test('with encryption on, blobs hold only sealed bytes: the claim check runs after encryption', async () => {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'blobs-'));
  const codecs = payloadCodecs({ THREADLINE_ENCRYPTION_KEY: randomBytes(32).toString('base64'), THREADLINE_ENCRYPTION_OLD_KEYS: undefined, dataDir, CLAIM_CHECK_THRESHOLD: 1024 });
  assert.equal(codecs.length, 2);
  let payloads = [json({ secret: `TOP-SECRET-${'s'.repeat(200_000)}` })];
  for (const codec of codecs) payloads = await codec.encode(payloads);
  assert.equal(encodingOf(payloads[0]!), CLAIM_CHECK_ENCODING);
  const dir = path.join(dataDir, 'blobs');
  const files = readdirSync(dir).flatMap((shard) => readdirSync(path.join(dir, shard)).map((f) => path.join(dir, shard, f)));
  assert.equal(files.length, 1);
  assert.ok(!readFileSync(files[0]!).includes('TOP-SECRET'), 'the blob holds no plaintext');
  for (const codec of [...codecs].reverse()) payloads = await codec.decode(payloads);
  assert.match(Buffer.from(payloads[0]!.data ?? []).toString(), /TOP-SECRET/);
  // Off when the threshold is 0 or there is no data location.
  assert.equal(payloadCodecs({ THREADLINE_ENCRYPTION_KEY: undefined, THREADLINE_ENCRYPTION_OLD_KEYS: undefined, dataDir, CLAIM_CHECK_THRESHOLD: 0 }).length, 0);
});
