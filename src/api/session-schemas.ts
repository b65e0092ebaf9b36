/**
 * Request schemas of the sessions API (`/v1/sessions`, issue 4 §6). Each is the
 * source of truth for its request and its TypeScript type.
 */
import { z } from 'zod';
import { ReplyBody, UserIdSchema } from './schemas';

/** The engine of the runs a session's messages start: seed 000's planner, seed 003's task tree, or its ReAct first. */
const EngineSchema = z.enum(['plan', 'tree', 'react']);

/**
 * A new session: whose, on which engine its messages' runs run, and which tools' calls wait for the person's
 * approval in them (added to TOOL_APPROVAL, never removing one). @default engine "plan"
 */
export const CreateSessionBody = z.object({ userId: UserIdSchema, engine: EngineSchema.optional(), approval: z.array(z.string().trim().min(1).max(200)).max(100).optional() });
export type CreateSessionBody = z.infer<typeof CreateSessionBody>;

export const ListSessionsQuery = z.object({
  userId: UserIdSchema.optional(),
  /** At most this many sessions. @default 100 */
  limit: z.coerce.number().int().min(1).max(1000).optional(),
});
export type ListSessionsQuery = z.infer<typeof ListSessionsQuery>;

export const SessionParams = z.object({ sessionId: z.string().min(1).max(255) });

/**
 * A person's message: the same rules as a run's reply (1–10,000 characters, not blank); `engine`: a
 * run it starts runs on this engine instead of the session's.
 */
export const MessageBody = ReplyBody.extend({ engine: EngineSchema.optional() });
export type MessageBody = z.infer<typeof MessageBody>;
