/** A per-user durable note store, kept in the embedded store under DATA_DIR. */
import { z } from 'zod';
import { defineTool } from './tool';
import { userKey } from '../text/user-key';

const noteKey = z.string().min(1).max(200);
/** One user's notes, whatever the case of the id (src/text/user-key.ts). */
const namespace = (userId: string) => `notes/${userKey(userId)}`;

export const notesWrite = defineTool({
  name: 'notes_write',
  quick: true,
  description: "Saves a note under a key in the user's durable notes, replacing any earlier value.",
  input: z.object({ key: noteKey, value: z.string().max(10_000) }),
  async handler({ key, value }, ctx) {
    await ctx.store.put(namespace(ctx.userId), key, value);
    return { ok: true };
  },
});

export const notesRead = defineTool({
  name: 'notes_read',
  quick: true,
  description: "Reads the note saved under a key in the user's durable notes; value is null when there is none.",
  input: z.object({ key: noteKey }),
  async handler({ key }, ctx) {
    const value = await ctx.store.get<string>(namespace(ctx.userId), key);
    return { value: value ?? null };
  },
});
