/**
 * Long-term writes pass the memory observers (src/memory/observers.ts) as thread operations do:
 * the texts of a write go through them as one `add` of text chunks, so secret redaction and any
 * other observer apply unchanged, and their notes reach the audit.
 */
import type { Operation } from '../memory/model';
import { runObservers, type MemoryObserver } from '../memory/observers';
import type { WriteMeta } from './contract';

/** An observer vetoed a long-term write. */
export class LongTermVetoError extends Error {
  constructor(
    readonly vetoedBy: string,
    readonly reason: string,
  ) {
    super(`long-term write vetoed by ${vetoedBy}: ${reason}`);
    this.name = 'LongTermVetoError';
  }
}

/** The texts as the observers leave them (same order; empty strings pass untouched), and their notes. */
export function screenTexts(observers: readonly MemoryObserver[], userId: string, texts: readonly string[], meta: WriteMeta): { texts: string[]; notes: string[] } {
  const present = texts.map((text, i) => ({ text, i })).filter((t) => t.text !== '');
  if (observers.length === 0 || present.length === 0) return { texts: [...texts], notes: [] };
  const operation: Operation = { op: 'add', chunks: present.map(({ text }) => ({ type: 'user', content: { kind: 'text', text } })) };
  const outcome = runObservers(
    observers,
    operation,
    { origin: meta.origin === 'person' ? 'user' : meta.origin, reason: meta.reason, trigger: 'long-term memory write', ...(meta.runId ? { runId: meta.runId } : {}) },
    { threadId: `longterm:${userId}` },
  );
  if (!outcome.ok) throw new LongTermVetoError(outcome.vetoedBy, outcome.reason);
  const out = [...texts];
  if (outcome.operation.op !== 'add' || outcome.operation.chunks.length !== present.length) throw new LongTermVetoError('observers', 'an observer changed the shape of a long-term write');
  outcome.operation.chunks.forEach((chunk, n) => {
    const at = present[n];
    if (at) out[at.i] = chunk.content.kind === 'text' ? chunk.content.text : '';
  });
  return { texts: out, notes: outcome.notes };
}
