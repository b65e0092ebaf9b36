/**
 * Memory observers (seed 001): in-process components that see every operation
 * before it is applied and may allow, veto or transform it.
 * STUB — to be implemented.
 */
import type { Operation, OperationMeta } from './model';

export type ObserverVerdict = { action: 'allow' } | { action: 'veto'; reason: string } | { action: 'transform'; operation: Operation; note: string };

export interface MemoryObserver {
  name: string;
  observe(operation: Operation, meta: OperationMeta, ctx: { threadId: string }): ObserverVerdict;
}

export type ObserversOutcome =
  | { ok: true; operation: Operation; notes: string[] }
  | { ok: false; vetoedBy: string; reason: string };

export function runObservers(observers: readonly MemoryObserver[], operation: Operation, meta: OperationMeta, ctx: { threadId: string }): ObserversOutcome {
  void observers; void operation; void meta; void ctx;
  throw new Error('not implemented');
}

/** Replaces secrets (API keys, tokens, passwords in key=value form) with "[REDACTED:kind]" before they enter memory. */
export const redactSecrets: MemoryObserver = {
  name: 'redact-secrets',
  observe() {
    throw new Error('not implemented');
  },
};
