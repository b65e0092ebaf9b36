import { DateTime } from 'luxon';
import { z } from 'zod';
import { defineTool } from './tool';

export const currentTime = defineTool({
  name: 'current_time',
  quick: true,
  description: 'The current date and time as ISO 8601, in an IANA timezone such as "Europe/Paris" (default UTC).',
  input: z.object({ timezone: z.string().min(1).max(64).optional() }),
  async handler({ timezone }) {
    const now = DateTime.now().setZone(timezone ?? 'UTC');
    if (!now.isValid) throw new Error(`unknown timezone "${timezone}"`);
    return { iso: now.toISO() };
  },
});
