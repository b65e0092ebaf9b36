/**
 * What an MCP tool call returns, as the value of a tool step's observation (and so of its memory
 * chunk): the structured content when the tool gives one, else its content blocks — text as text,
 * anything binary (images, audio, embedded blobs, also inside structured content) replaced by a
 * reference to where it was saved, so no base64 reaches a prompt, the journal or memory.
 */
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';

/** Saves binary content (base64) and returns a reference to it (a URL). */
export type SaveMedia = (base64: string, mimeType: string) => string;

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
export function externalizeMedia(value: unknown, save: SaveMedia): unknown {
  if (Array.isArray(value)) return value.map((v) => externalizeMedia(v, save));
  if (!isRecord(value)) return value;
  const mimeType = typeof value.mimeType === 'string' ? value.mimeType : 'application/octet-stream';
  if ((value.type === 'image' || value.type === 'audio') && typeof value.data === 'string') {
    const ref: MediaReference = { type: value.type, url: save(value.data, mimeType), mimeType, bytes: base64Bytes(value.data) };
    return ref;
  }
  if (typeof value.blob === 'string') {
    const { blob, ...rest } = value;
    return { ...rest, blob: { type: 'blob', url: save(blob, mimeType), mimeType, bytes: base64Bytes(blob) } satisfies MediaReference };
  }
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, externalizeMedia(v, save)]));
}

/** A content block as observed: text as its string, anything else as an object (binaries as references). */
function block(content: CallToolResult['content'][number], save: SaveMedia): unknown {
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
export function resultValue(result: CallToolResult, save: SaveMedia): unknown {
  if (result.structuredContent !== undefined) return externalizeMedia(result.structuredContent, save);
  const blocks = result.content.map((c) => block(c, save));
  if (blocks.length === 1 && typeof blocks[0] === 'string') return blocks[0];
  return blocks;
}
