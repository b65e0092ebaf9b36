/**
 * Who is watching: the APIs tell the workers which runs and sessions have a reader of their live
 * tokens, so a worker sends nothing for a call nobody watches (each message a datagram to every
 * API, or a NOTIFY through PostgreSQL). An API announces a watch at once when its first reader
 * comes, then its whole set every WATCH_REFRESH_MS while it is not empty; a worker forgets a key
 * it has not heard for WATCH_TTL_MS, so a lost announcement or a stopped API costs nothing for long.
 */
import { z } from 'zod';

export const WATCH_REFRESH_MS = 250;
/** Several refreshes: one lost datagram does not stop a reader's tokens. */
export const WATCH_TTL_MS = 2_000;
/**
 * A key stays announced this long after its last reader left: a client that reconnects
 * (`Last-Event-ID`) finds the tokens sent meanwhile in the API's buffer, with no gap.
 */
export const WATCH_LINGER_MS = 15_000;

/** The key of a run's or a session's watch. */
export const watchKey = {
  run: (runId: string): string => `r:${runId}`,
  session: (sessionId: string): string => `s:${sessionId}`,
};

const WatchPayload = z.object({ watch: z.array(z.string()) });

/** Packs watch keys into JSON payloads of at most `maxBytes` each (the channel's MAX_PAYLOAD_BYTES). */
export function packWatch(keys: readonly string[], maxBytes: number): string[] {
  const payloads: string[] = [];
  let batch: string[] = [];
  let size = 12;
  for (const key of keys) {
    const bytes = Buffer.byteLength(JSON.stringify(key)) + 1;
    if (bytes + 12 > maxBytes) continue; // an id this long is no run's
    if (batch.length > 0 && size + bytes > maxBytes) {
      payloads.push(JSON.stringify({ watch: batch }));
      batch = [];
      size = 12;
    }
    batch.push(key);
    size += bytes;
  }
  if (batch.length > 0) payloads.push(JSON.stringify({ watch: batch }));
  return payloads;
}

/** The keys of a watch payload; none when it is anything else (the channel is best effort). */
export function unpackWatch(payload: string): string[] {
  try {
    const parsed = WatchPayload.safeParse(JSON.parse(payload));
    return parsed.success ? parsed.data.watch : [];
  } catch {
    return [];
  }
}

/** A worker's view: the keys some API announced within WATCH_TTL_MS. */
export class WatchedSet {
  private readonly heardAt = new Map<string, number>();

  heard(keys: readonly string[], now = Date.now()): void {
    for (const key of keys) this.heardAt.set(key, now);
    if (this.heardAt.size > 50_000) this.forgetBefore(now - WATCH_TTL_MS);
  }

  /** Whether a reader watches the run or its session. */
  has(runId: string, sessionId: string | undefined, now = Date.now()): boolean {
    if (this.heardAt.size === 0) return false;
    const fresh = (key: string) => now - (this.heardAt.get(key) ?? -Infinity) <= WATCH_TTL_MS;
    return fresh(watchKey.run(runId)) || (sessionId !== undefined && fresh(watchKey.session(sessionId)));
  }

  private forgetBefore(time: number): void {
    for (const [key, at] of this.heardAt) if (at < time) this.heardAt.delete(key);
  }
}

/** An API's side: counts the readers of each key and announces the keys through `send`. */
export class WatchAnnouncer {
  private readonly readers = new Map<string, { count: number; until: number }>();
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly send: (keys: readonly string[]) => void) {
    this.timer = setInterval(() => this.refresh(), WATCH_REFRESH_MS);
    this.timer.unref();
  }

  /** A reader of `key` came; the returned function says it left. */
  add(key: string): () => void {
    const entry = this.readers.get(key);
    const announced = entry !== undefined && (entry.count > 0 || entry.until > Date.now());
    if (entry) entry.count++;
    else this.readers.set(key, { count: 1, until: 0 });
    if (!announced) this.announce([key]);
    let left = false;
    return () => {
      if (left) return;
      left = true;
      const now = this.readers.get(key);
      if (now && --now.count === 0) now.until = Date.now() + WATCH_LINGER_MS;
    };
  }

  /** The keys announced now. */
  keys(now = Date.now()): string[] {
    const keys: string[] = [];
    for (const [key, entry] of this.readers) {
      if (entry.count > 0 || entry.until > now) keys.push(key);
      else this.readers.delete(key);
    }
    return keys;
  }

  close(): void {
    clearInterval(this.timer);
  }

  private refresh(): void {
    const keys = this.keys();
    if (keys.length > 0) this.announce(keys);
  }

  private announce(keys: readonly string[]): void {
    try {
      this.send(keys);
    } catch {
      // best effort: the next refresh tries again
    }
  }
}
