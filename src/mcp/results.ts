/**
 * What an MCP tool call returns, as the value of a tool step's observation (and so of its memory
 * chunk): the structured content when the tool gives one, else its content blocks — text as text,
 * anything binary (images, audio, embedded blobs, also inside structured content) replaced by a
 * reference to where it was saved, so no base64 reaches a prompt, the journal or memory. The worker
 * saves them in its blob store, sealed when payload encryption is on and swept like every blob.
 */
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';

/** Saves binary content (base64) and returns a reference to it (`blob:<sha256>` in the worker's blob store). */
export type SaveMedia = (base64: string, mimeType: string) => Promise<string>;

/** What replaces a binary: where it is, its type and size. */
export interface MediaReference {
  type: 'image' | 'audio' | 'blob';
  url: string;
  mimeType: string;
  bytes: number;
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const base64Bytes = (data: string) => Math.floor((data.length * 3) / 4) - (data.endsWith('==') ? 2 : data.endsWith('=') ? 1 : 0);

/** `value` with every binary it holds (`{type: image|audio, data, mimeType}`, `{blob}`) replaced by a reference. */
export async function externalizeMedia(value: unknown, save: SaveMedia): Promise<unknown> {
  if (Array.isArray(value)) return Promise.all(value.map((v) => externalizeMedia(v, save)));
  if (!isRecord(value)) return value;
  const mimeType = typeof value.mimeType === 'string' ? value.mimeType : 'application/octet-stream';
  if ((value.type === 'image' || value.type === 'audio') && typeof value.data === 'string') {
    const ref: MediaReference = { type: value.type, url: await save(value.data, mimeType), mimeType, bytes: base64Bytes(value.data) };
    return ref;
  }
  if (typeof value.blob === 'string') {
    const { blob, ...rest } = value;
    return { ...rest, blob: { type: 'blob', url: await save(blob, mimeType), mimeType, bytes: base64Bytes(blob) } satisfies MediaReference };
  }
  return Object.fromEntries(await Promise.all(Object.entries(value).map(async ([k, v]) => [k, await externalizeMedia(v, save)] as const)));
}

/** A content block as observed: text as its string, anything else as an object (binaries as references). */
async function block(content: CallToolResult['content'][number], save: SaveMedia): Promise<unknown> {
  if (content.type === 'text') return content.text;
  // Annotations and _meta are for clients' displays, not the model.
  const { annotations: _a, _meta: _m, ...rest } = content as Record<string, unknown>;
  return externalizeMedia(rest, save);
}

/** The text of a result's text blocks, for error messages. */
export const resultText = (result: Pick<CallToolResult, 'content'>): string =>
  result.content
    .filter((c) => c.type === 'text')
    .map((c) => c.text)
    .join('\n');

/**
 * A successful result's value: its structured content when it has one (the text blocks then only
 * repeat it, as the protocol asks), else its one text, else its blocks in order.
 */
export async function resultValue(result: CallToolResult, save: SaveMedia): Promise<unknown> {
  if (result.structuredContent !== undefined) return externalizeMedia(result.structuredContent, save);
  const blocks = await Promise.all(result.content.map((c) => block(c, save)));
  if (blocks.length === 1 && typeof blocks[0] === 'string') return blocks[0];
  return blocks;
}
