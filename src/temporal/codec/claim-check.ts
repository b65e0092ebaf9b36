/**
 * Claim check: a payload larger than the threshold goes to the blob store, and history keeps only
 * a reference (its SHA-256 and size), so no run fails on Temporal's 2 MB payload limit and history
 * stays small. It runs after encryption when both are on, so blobs hold only sealed bytes.
 */
import { createHash } from 'node:crypto';
import { ValueError, type Payload, type PayloadCodec } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import type { BlobStore } from '../../store/blobs/blob-store';

export const CLAIM_CHECK_ENCODING = 'binary/claim-check';
const encoder = new TextEncoder();
const decoder = new TextDecoder();

export class ClaimCheckCodec implements PayloadCodec {
  constructor(
    private readonly blobs: BlobStore,
    /** Payloads whose data is larger than this many bytes are claim-checked. */
    private readonly threshold: number,
  ) {}

  async encode(payloads: Payload[]): Promise<Payload[]> {
    return Promise.all(
      payloads.map(async (payload) => {
        if ((payload.data?.length ?? 0) <= this.threshold) return payload;
        const whole = temporal.api.common.v1.Payload.encode(payload).finish();
        const key = createHash('sha256').update(whole).digest('hex');
        await this.blobs.put(key, whole);
        return {
          metadata: { encoding: encoder.encode(CLAIM_CHECK_ENCODING), 'claim-check-size': encoder.encode(String(whole.length)) },
          data: encoder.encode(key),
        };
      }),
    );
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    return Promise.all(
      payloads.map(async (payload) => {
        const encoding = payload.metadata?.encoding;
        if (!encoding || decoder.decode(encoding) !== CLAIM_CHECK_ENCODING) return payload;
        const key = decoder.decode(payload.data ?? new Uint8Array());
        const whole = await this.blobs.get(key);
        if (!whole) throw new ValueError(`claim-checked payload ${key} is not in the blob store (swept after CLAIM_CHECK_RETENTION_DAYS, or stored by another deployment)`);
        if (createHash('sha256').update(whole).digest('hex') !== key) throw new ValueError(`claim-checked payload ${key} does not match its hash`);
        return temporal.api.common.v1.Payload.decode(whole);
      }),
    );
  }
}
