/**
 * How Threadline's payloads are written into Temporal: the same codecs for every client and worker
 * (the API, the worker, tests, the benchmark) and for the codec endpoint the Web UI decodes through.
 */
import type { DataConverter, PayloadCodec } from '@temporalio/common';
import type { Config } from '../config';
import { EncryptionCodec, parseKey } from './codec/encryption';

export type CodecConfig = Pick<Config, 'THREADLINE_ENCRYPTION_KEY' | 'THREADLINE_ENCRYPTION_OLD_KEYS'>;

/** The codecs `config` asks for, in encoding order (none: payloads are plain JSON). */
export function payloadCodecs(config: CodecConfig): PayloadCodec[] {
  if (!config.THREADLINE_ENCRYPTION_KEY) return [];
  const older = (config.THREADLINE_ENCRYPTION_OLD_KEYS ?? '').split(',').filter((k) => k.trim() !== '');
  return [new EncryptionCodec(parseKey(config.THREADLINE_ENCRYPTION_KEY), older.map(parseKey))];
}

export function dataConverterFor(config: CodecConfig): DataConverter {
  return { payloadCodecs: payloadCodecs(config) };
}
