/**
 * Tool results past MAX_TOOL_RESULT_BYTES: the whole result goes to the blob store (sealed first
 * when payload encryption is on, like claim-checked payloads), and the step's journal and memory
 * record keep a head of it with a reference to the whole. MCP tools' binaries (images, audio) are
 * stored the same way. Without the bound a 20 MB result would
 * be journaled, tokenized and compacted whole — seconds of CPU with the event loop blocked, past
 * the step's heartbeat timeout — only for compaction to cut it to a few thousand tokens anyway.
 */
import { createHash } from 'node:crypto';
import type { Payload, PayloadCodec } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { z } from 'zod';
import type { BlobStore } from '../store/blobs/blob-store';

/** What of a bounded result its record keeps, in characters (the memory's compaction shortens it further as needed). */
export const TOOL_RESULT_HEAD_CHARS = 16_000;

const REF_PREFIX = 'blob:';
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** What a step records instead of a result past the bound: its head and where the whole is. */
export const BoundedResult = z.object({
  truncated: z.literal(true),
  bytes: z.number().int(),
  ref: z.string().nullable(),
  note: z.string(),
  head: z.string(),
});
export type BoundedResult = z.infer<typeof BoundedResult>;

export class ToolResultStore {
  constructor(
    private readonly blobs: BlobStore,
    /** Encryption only (no claim check): what seals a result before it is stored. */
    private readonly codecs: PayloadCodec[],
  ) {}

  /** Stores `text`; returns its reference (`blob:<sha256 of the stored bytes>`). */
  put(text: string): Promise<string> {
    return this.#store({ metadata: { encoding: encoder.encode('text/plain') }, data: encoder.encode(text) });
  }

  /** Stores a binary a tool returned (an MCP image, audio or blob), sealed and swept like a result; returns its reference. */
  putMedia(bytes: Uint8Array, mimeType: string): Promise<string> {
    return this.#store({ metadata: { encoding: encoder.encode('binary/plain'), 'media-type': encoder.encode(mimeType) }, data: bytes });
  }

  /** The whole result `ref` names, or null when it is not there (swept after CLAIM_CHECK_RETENTION_DAYS, or another deployment's). */
  async get(ref: string): Promise<string | null> {
    const payload = await this.#load(ref);
    return payload ? decoder.decode(payload.data ?? new Uint8Array()) : null;
  }

  /** The binary `ref` names and its type, or null when it is not there. */
  async getMedia(ref: string): Promise<{ bytes: Uint8Array; mimeType: string } | null> {
    const payload = await this.#load(ref);
    return payload ? { bytes: payload.data ?? new Uint8Array(), mimeType: decoder.decode(payload.metadata?.['media-type'] ?? new Uint8Array()) } : null;
  }

  async #store(plain: Payload): Promise<string> {
    let payload = plain;
    for (const codec of this.codecs) [payload] = (await codec.encode([payload])) as [Payload];
    const whole = temporal.api.common.v1.Payload.encode(payload).finish();
    const key = createHash('sha256').update(whole).digest('hex');
    await this.blobs.put(key, whole);
    return `${REF_PREFIX}${key}`;
  }

  async #load(ref: string): Promise<Payload | null> {
    if (!ref.startsWith(REF_PREFIX)) return null;
    const whole = await this.blobs.get(ref.slice(REF_PREFIX.length));
    if (!whole) return null;
    let payload: Payload = temporal.api.common.v1.Payload.decode(whole);
    for (const codec of [...this.codecs].reverse()) [payload] = (await codec.decode([payload])) as [Payload];
    return payload;
  }

  end(): Promise<void> {
    return this.blobs.end();
  }
}

/**
 * `content` (a tool's result as JSON text) when it is within `maxBytes`; otherwise the JSON of a
 * BoundedResult: its head, its size and a reference to the whole, stored in `store` (without a
 * store the record says the rest is gone). Never splits a UTF-16 surrogate pair.
 */
export async function boundToolResult(content: string, maxBytes: number, store: ToolResultStore | undefined): Promise<string> {
  if (content.length <= maxBytes / 3 || Buffer.byteLength(content, 'utf8') <= maxBytes) return content;
  const bytes = Buffer.byteLength(content, 'utf8');
  const ref = store ? await store.put(content) : null;
  let cut = Math.min(TOOL_RESULT_HEAD_CHARS, content.length);
  if (/[\uD800-\uDBFF]/.test(content.charAt(cut - 1))) cut--;
  const note = ref
    ? `result of ${bytes} bytes is over MAX_TOOL_RESULT_BYTES (${maxBytes}): only its first ${cut} characters are here; the whole result is stored as ${ref}`
    : `result of ${bytes} bytes is over MAX_TOOL_RESULT_BYTES (${maxBytes}): only its first ${cut} characters were kept`;
  const bounded: BoundedResult = { truncated: true, bytes, ref, note, head: content.slice(0, cut) };
  return JSON.stringify(bounded);
}
