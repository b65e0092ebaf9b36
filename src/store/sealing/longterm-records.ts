/**
 * What of long-term memory is sealed at rest (./sealer.ts), in the file and PostgreSQL stores: every
 * record whole (messages, facts, entities, episodes, summaries), dense vectors, and an audit entry's
 * reason, notes, targets and details. Kept plain beside the sealed record, for the queries that
 * filter on them: a fact's `validTo`, a message's `sessionId` and `at`; an audit entry's `kind`,
 * `action`, `runId` and `at`. The full-text index holds keyed hashes of the analyzed terms.
 */
import type { LongTermAuditEntry, LongTermRecord } from '../longterm/store';
import type { Sealer } from './sealer';

/** A record's JSON as stored in PostgreSQL's `data` column. */
export function sealRecordData(sealer: Sealer, item: LongTermRecord): unknown {
  if (!sealer.on) return item.record;
  switch (item.kind) {
    case 'fact':
      return sealer.seal(item.record, ['validTo']);
    case 'message':
      return sealer.seal(item.record, ['sessionId', 'at']);
    default:
      return sealer.seal(item.record);
  }
}

/** An audit entry as stored: what a query filters on plain, the rest sealed. */
export function sealAuditEntry(sealer: Sealer, entry: LongTermAuditEntry): unknown {
  return sealer.seal(entry, ['kind', 'action', 'runId', 'at']);
}

/** Analyzed terms as the index stores them: keyed hashes when sealing is on, in their order. */
export function indexTerms(sealer: Sealer, terms: readonly string[]): string[] {
  return sealer.on ? terms.map((t) => sealer.indexTerm(t)) : [...terms];
}
