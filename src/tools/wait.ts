import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import { defineTool } from './tool';

export const wait = defineTool({
  name: 'wait',
  description: 'Waits the given number of seconds (at most 300), e.g. to let something outside finish.',
  input: z.object({ seconds: z.number().min(0).max(300) }),
  async handler({ seconds }, ctx) {
    const until = Date.now() + seconds * 1000;
    // Heartbeat every second so a crashed worker's wait is retried within seconds.
    while (Date.now() < until) {
      ctx.heartbeat();
      await sleep(Math.min(1000, until - Date.now()), undefined, { signal: ctx.signal });
    }
    return { waited: seconds };
  },
});
