/**
 * The offline demo model, streaming (issue 29): its reply goes to a watching run's token stream in
 * small pieces before the call returns, so a newcomer sees live tokens without a key. A call stays
 * well under the 250 ms that decides whether a run's next call runs locally.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { DemoProvider } from './demo-provider';
import { currentTextSink } from './live-tokens';
import type { ModelRequest } from './provider';

/** Pieces a reply is cut into, and the pause after each. */
const PIECES = 24;
const PAUSE_MS = 4;

export class StreamingDemoProvider extends DemoProvider {
  constructor(private readonly pauseMs = PAUSE_MS) {
    super();
  }

  override async complete(request: ModelRequest, signal?: AbortSignal): Promise<string> {
    const text = await super.complete(request);
    const sink = currentTextSink();
    if (!sink) return text;
    const size = Math.max(4, Math.ceil(text.length / PIECES));
    for (let i = 0; i < text.length; i += size) {
      if (signal?.aborted) break;
      sink(text.slice(i, i + size));
      if (this.pauseMs > 0 && i + size < text.length) await sleep(this.pauseMs);
    }
    return text;
  }
}
