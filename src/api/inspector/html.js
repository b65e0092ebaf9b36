// htm bound to Preact's h: JSX-like templates without a build step.
import { h } from 'preact';
import htm from 'htm';

export const html = htm.bind(h);

/** An error message, or nothing. */
export const ErrorLine = ({ error }) => (error ? html`<p class="error" role="alert">${error}</p>` : null);

/** A chunk's content in a line or a few: text as is, anything else as JSON. */
export function contentText(content) {
  if (!content) return '';
  if (content.kind === 'text') return content.text;
  if (content.kind === 'json') return JSON.stringify(content.data, null, 1);
  if (content.kind === 'image') return `[image ${content.url}${content.alt ? ` "${content.alt}"` : ''}]`;
  return `[chunks ${content.chunkIds.join(', ')}]`;
}

export const when = (iso) => (iso ? new Date(iso).toLocaleString() : '');
