/**
 * Where the payload codecs' time goes in the orchestration benchmark ((g) encryption, (h) claim
 * check): every worker and client of the bench runs in one process and on its main thread, so
 * wrapping the codec classes' methods there counts all of their work. Differences of two
 * snapshots taken around one run give that run's share (the cases run one after another).
 */
import { performance } from 'node:perf_hooks';
import type { Payload } from '@temporalio/common';
import { FileBlobStore } from '../src/store/blobs/blob-store';
import { ClaimCheckCodec } from '../src/temporal/codec/claim-check';
import { EncryptionCodec } from '../src/temporal/codec/encryption';

export interface CodecCounter {
  calls: number;
  /** Payloads the codec changed: sealed/opened, or stored in/read from the blob store. */
  payloads: number;
  /** Their encoded size, bytes. */
  bytes: number;
  /** Wall time inside the codec method (its awaits included), summed over calls. */
  ms: number;
}

const OPS = ['encryptionEncode', 'encryptionDecode', 'claimCheckEncode', 'claimCheckDecode', 'blobPut', 'blobGet'] as const;
export type CodecOp = (typeof OPS)[number];
export type CodecProfile = Record<CodecOp, CodecCounter>;

const zero = (): CodecProfile => Object.fromEntries(OPS.map((op) => [op, { calls: 0, payloads: 0, bytes: 0, ms: 0 }])) as CodecProfile;
const totals = zero();

const encodingOf = (p: Payload): string => Buffer.from(p.metadata?.encoding ?? []).toString();

type Method<A extends unknown[], R> = (this: unknown, ...args: A) => Promise<R>;

function wrap<A extends unknown[], R>(original: Method<A, R>, op: CodecOp, count: (args: A, result: R) => { payloads: number; bytes: number }): Method<A, R> {
  return async function (this: unknown, ...args: A): Promise<R> {
    const started = performance.now();
    const result = await original.apply(this, args);
    const c = totals[op];
    c.ms += performance.now() - started;
    c.calls++;
    const { payloads, bytes } = count(args, result);
    c.payloads += payloads;
    c.bytes += bytes;
    return result;
  };
}

let installed = false;

/** Wraps the codec and file blob store methods (once per process). */
export function installCodecProfile(): void {
  if (installed) return;
  installed = true;
  // Payloads whose encoding the codec changed (sealed or opened, stored or fetched) and the larger of their two sizes.
  const changed = (args: [Payload[]], out: Payload[]) => {
    let payloads = 0;
    let bytes = 0;
    out.forEach((p, i) => {
      const before = args[0][i] ?? {};
      if (encodingOf(p) === encodingOf(before)) return;
      payloads++;
      bytes += Math.max(p.data?.length ?? 0, before.data?.length ?? 0);
    });
    return { payloads, bytes };
  };
  EncryptionCodec.prototype.encode = wrap(EncryptionCodec.prototype.encode, 'encryptionEncode', changed);
  EncryptionCodec.prototype.decode = wrap(EncryptionCodec.prototype.decode, 'encryptionDecode', changed);
  ClaimCheckCodec.prototype.encode = wrap(ClaimCheckCodec.prototype.encode, 'claimCheckEncode', changed);
  ClaimCheckCodec.prototype.decode = wrap(ClaimCheckCodec.prototype.decode, 'claimCheckDecode', changed);
  FileBlobStore.prototype.put = wrap(FileBlobStore.prototype.put, 'blobPut', (args: [string, Uint8Array]) => ({ payloads: 1, bytes: args[1].length }));
  FileBlobStore.prototype.get = wrap(FileBlobStore.prototype.get, 'blobGet', (_args: [string], out: Uint8Array | null) => ({ payloads: out ? 1 : 0, bytes: out?.length ?? 0 }));
}

/** A copy of the counters so far. */
export function codecSnapshot(): CodecProfile {
  return Object.fromEntries(OPS.map((op) => [op, { ...totals[op] }])) as CodecProfile;
}

/** `later − earlier`, op by op. */
export function codecDelta(earlier: CodecProfile, later: CodecProfile): CodecProfile {
  return Object.fromEntries(
    OPS.map((op) => [
      op,
      { calls: later[op].calls - earlier[op].calls, payloads: later[op].payloads - earlier[op].payloads, bytes: later[op].bytes - earlier[op].bytes, ms: later[op].ms - earlier[op].ms },
    ]),
  ) as CodecProfile;
}

/** The sum of several profiles (one per rep). */
export function codecSum(profiles: CodecProfile[]): CodecProfile {
  return profiles.reduce(addInto, zero());
}

function addInto(acc: CodecProfile, p: CodecProfile): CodecProfile {
  for (const op of OPS) {
    acc[op].calls += p[op].calls;
    acc[op].payloads += p[op].payloads;
    acc[op].bytes += p[op].bytes;
    acc[op].ms += p[op].ms;
  }
  return acc;
}
