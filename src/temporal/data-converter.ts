/**
 * How Threadline's payloads are written into Temporal: the same codecs for every client and worker
 * (the API, the worker, tests, the benchmark) and for the codec endpoint the Web UI decodes through.
 */
import type { DataConverter, PayloadCodec } from '@temporalio/common';
import type { Config } from '../config';
import { createBlobStore } from '../store/blobs/blob-store';
import { ClaimCheckCodec } from './codec/claim-check';
import { configuredKeys } from '../store/sealing/keys';
import { EncryptionCodec } from './codec/encryption';

/** Encryption keys; with a data location (`dataDir`, and the memory backend) also the claim check. */
export type CodecConfig = Pick<Config, 'THREADLINE_ENCRYPTION_KEY' | 'THREADLINE_ENCRYPTION_OLD_KEYS'> & Partial<Pick<Config, 'dataDir' | 'MEMORY_STORE' | 'DATABASE_URL' | 'CLAIM_CHECK_THRESHOLD'>>;

/**
 * The codecs `config` asks for, in encoding order (none: payloads are plain JSON). Encryption comes
 * first, so the claim check stores sealed bytes only (decoding runs the list backwards).
 */
export function payloadCodecs(config: CodecConfig): PayloadCodec[] {
  const codecs: PayloadCodec[] = [];
  const keys = configuredKeys(config);
  if (keys) codecs.push(new EncryptionCodec(keys.current, keys.older));
  if (config.dataDir && config.CLAIM_CHECK_THRESHOLD) {
    codecs.push(new ClaimCheckCodec(createBlobStore({ ...config, dataDir: config.dataDir }), config.CLAIM_CHECK_THRESHOLD));
  }
  return codecs;
}

export function dataConverterFor(config: CodecConfig): DataConverter {
  return { payloadCodecs: payloadCodecs(config) };
}
