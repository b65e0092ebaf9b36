/**
 * What of a memory thread is sealed at rest (./sealer.ts), the same in the file and PostgreSQL
 * stores: a chunk's content, and an operation record's operation (which carries the chunks and
 * edits it applied) and details. Ids, types, retention, token counts, provenance, times and the
 * state lists stay readable: they are what the stores look things up by, and hold no one's words.
 */
import type { Chunk, OperationRecord } from '../../memory/model';
import type { Sealer } from './sealer';

/** A chunk as stored: its content sealed. */
export function sealChunk(sealer: Sealer, chunk: Chunk): Chunk {
  return sealer.on ? { ...chunk, content: sealer.seal(chunk.content) as Chunk['content'] } : chunk;
}

/** A stored chunk opened (one written before encryption was on is returned as it is). */
export function openChunk(sealer: Sealer, stored: Chunk): Chunk {
  return { ...stored, content: sealer.open<Chunk['content']>(stored.content) };
}

/** An operation record as stored: its operation and details sealed. */
export function sealOperation<R extends Pick<OperationRecord, 'operation' | 'details'>>(sealer: Sealer, record: R): R {
  if (!sealer.on) return record;
  return {
    ...record,
    operation: record.operation === null ? null : (sealer.seal(record.operation) as R['operation']),
    details: record.details === null ? null : (sealer.seal(record.details) as R['details']),
  };
}

/** A stored operation record opened. */
export function openOperation<R extends Pick<OperationRecord, 'operation' | 'details'>>(sealer: Sealer, stored: R): R {
  return {
    ...stored,
    operation: stored.operation === null ? null : sealer.open<R['operation']>(stored.operation),
    details: stored.details === null ? null : sealer.open<R['details']>(stored.details),
  };
}
