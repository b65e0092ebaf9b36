/**
 * `GET /v1/threads/:threadId/stream`: every operation of a memory thread, in
 * seq order, as Server-Sent Events (`event: operation`, `id: <seq>`). It polls
 * the audit trail rather than listening in-process, so it also sees writes
 * made by other processes (the worker's activities) to a shared store.
 */
import type { Response } from 'express';
import type { Logger } from 'pino';
import { ThreadNotFoundError, type MemoryService } from '../store/memory-service';
import { pollEventStream, type SseTiming } from './sse';

export interface ThreadStreamDeps {
  memory: Pick<MemoryService, 'audit'>;
  logger: Logger;
  /** Aborted when the server shuts down: open streams end so it can close. */
  shutdown?: AbortSignal;
}

/** Records read per query; a busier thread is caught up over several queries of one poll. */
const PAGE = 500;

/** Streams the operations of `threadId` with seq greater than `afterSeq`, then each new one as it is recorded. */
export async function streamThreadOperations(deps: ThreadStreamDeps, threadId: string, afterSeq: number, res: Response, timing: SseTiming = {}): Promise<void> {
  // Read once before any header goes out, so an unknown thread is an ordinary JSON 404, not a stream.
  let pending = await deps.memory.audit(threadId, { afterSeq, limit: PAGE });
  let cursor = afterSeq;
  await pollEventStream(res, { ...timing, logger: deps.logger, shutdown: deps.shutdown, context: { threadId } }, async (send) => {
    for (;;) {
      if (pending.length === 0) {
        try {
          pending = await deps.memory.audit(threadId, { afterSeq: cursor, limit: PAGE });
        } catch (err) {
          if (err instanceof ThreadNotFoundError) return false;
          throw err; // the store may be briefly unavailable: retried at the next poll
        }
      }
      const page = pending;
      pending = [];
      for (const record of page) {
        if (record.seq <= cursor) continue; // never repeat or go back
        send('operation', record, record.seq);
        cursor = record.seq;
      }
      if (page.length < PAGE) return true;
    }
  });
}
