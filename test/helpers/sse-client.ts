/** Reads a server-sent event stream the way a browser's EventSource would, for the API tests. */
import assert from 'node:assert/strict';
import { createParser, type EventSourceMessage } from 'eventsource-parser';

export interface SseResult {
  contentType: string | null;
  events: EventSourceMessage[];
  comments: string[];
  /** Whether the server ended the stream (as opposed to the client stopping early). */
  ended: boolean;
}

export interface ReadEventsOptions {
  /** Checked after each chunk; true stops reading and disconnects. */
  until?: (r: SseResult) => boolean;
  onEvent?: (e: EventSourceMessage) => void;
  /** Sent with the request, besides `accept: text/event-stream`. */
  headers?: Record<string, string>;
  /** The request is aborted after this long (the read then fails). */
  timeoutMs: number;
}

/** Reads an event stream (which must answer 200) until the server ends it, or `until` says enough (then disconnects). */
export async function readEvents(url: string, options: ReadEventsOptions): Promise<SseResult> {
  const abort = new AbortController();
  const res = await fetch(url, { signal: abort.signal, headers: { accept: 'text/event-stream', ...options.headers } });
  assert.equal(res.status, 200);
  const result: SseResult = { contentType: res.headers.get('content-type'), events: [], comments: [], ended: false };
  const parser = createParser({
    onEvent: (e) => {
      result.events.push(e);
      options.onEvent?.(e);
    },
    onComment: (c) => result.comments.push(c),
  });
  const decoder = new TextDecoder();
  const timer = setTimeout(() => abort.abort(), options.timeoutMs);
  try {
    assert.ok(res.body);
    for await (const chunk of res.body) {
      parser.feed(decoder.decode(chunk, { stream: true }));
      if (options.until?.(result)) return result; // leaving the loop cancels the body: we disconnect
    }
    result.ended = true;
    return result;
  } finally {
    clearTimeout(timer);
  }
}
