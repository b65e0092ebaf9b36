/**
 * Text cut to a length for lists, previews and one-line summaries (pure: used by workflows too).
 * Lengths are in UTF-16 code units, as `String.prototype.slice` counts them.
 */

/** `text` if it fits in `max`, else its first `max - 1` units and "…". */
export const clip = (text: string, max: number): string => (text.length > max ? `${text.slice(0, max - 1)}…` : text);

/** `text` on one line (runs of whitespace become one space, ends trimmed), then clipped to `max`. */
export const oneLine = (text: string, max: number): string => clip(text.replace(/\s+/g, ' ').trim(), max);
