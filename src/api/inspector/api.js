// The REST API as the page calls it: every call sends the key the person entered. The key is kept in
// sessionStorage: gone with the tab, never written to the browser's profile on disk (localStorage was).
// Every answer and event is read with the API's own response schemas (schemas.js, built from
// responses.ts): a body that does not fit is an error the page shows, not data it half-renders.
import { readEvent, readResponse } from './schemas.js';

const KEY = 'threadline.inspector.apiKey';
localStorage.removeItem(KEY); // left there by earlier versions of the page

export const getKey = () => sessionStorage.getItem(KEY) ?? '';
export const setKey = (key) => (key ? sessionStorage.setItem(KEY, key) : sessionStorage.removeItem(KEY));

function headers(extra = {}) {
  const key = getKey();
  return { ...(key ? { authorization: `Bearer ${key}` } : {}), ...extra };
}

export const enc = encodeURIComponent;

/** `?a=1&b=2` of the given values, leaving out empty ones. */
export function qs(params) {
  const query = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') query.set(k, String(v));
  const text = query.toString();
  return text ? `?${text}` : '';
}

/** One JSON call; rejects with the API's error message. */
export async function api(method, path, body) {
  const res = await fetch(path, {
    method,
    headers: headers(body === undefined ? {} : { 'content-type': 'application/json' }),
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${data?.error?.message ?? text}`);
  try {
    return readResponse(method, path, data);
  } catch (err) {
    throw new Error(`${method} ${path}: ${err.message}`);
  }
}

/**
 * Server-Sent Events read with fetch, since EventSource cannot send an Authorization header.
 * Calls onEvent(name, data, id) for each event until the stream ends or `signal` aborts.
 */
export async function streamEvents(path, onEvent, signal) {
  const res = await fetch(path, { headers: headers({ accept: 'text/event-stream' }), signal });
  if (!res.ok || !res.body) throw new Error(`GET ${path}: ${res.status}`);
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value.replace(/\r\n?/g, '\n');
    let end;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let event = 'message';
      let id;
      const data = [];
      for (const line of block.split('\n')) {
        if (line === '' || line.startsWith(':')) continue; // heartbeats are comments
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        const val = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'event') event = val;
        else if (field === 'data') data.push(val);
        else if (field === 'id') id = val;
      }
      if (data.length) onEvent(event, readEvent(path, event, JSON.parse(data.join('\n'))), id);
    }
  }
}
