/**
 * Request schemas of the REST API v1 (DESIGN.md §4). Each is the source of
 * truth for its request and its TypeScript type; routes see only parsed values.
 */
import { z } from 'zod';
import { RUN_STATUSES } from '../planning/execution-state';

const ID_CHARS = /^[A-Za-z0-9._@:+-]+$/;
const id = (what: string) =>
  z
    .string()
    .min(1)
    .max(128)
    .regex(ID_CHARS, `${what} may contain only letters, digits and . _ @ : + -`);

/** Longest goal or reply text we accept; keeps workflow inputs and signals far below Temporal's payload limit. */
export const MAX_TEXT_CHARS = 10_000;

export const UserIdSchema = id('userId');
export const SessionIdSchema = id('sessionId');

export const CreateRunBody = z.object({
  userId: UserIdSchema,
  goal: z.string().trim().min(1, 'goal must not be blank').max(MAX_TEXT_CHARS),
  sessionId: SessionIdSchema.nullish(),
});
export type CreateRunBody = z.infer<typeof CreateRunBody>;

export const ReplyBody = z.object({
  text: z
    .string()
    .min(1)
    .max(MAX_TEXT_CHARS)
    .refine((text) => text.trim().length > 0, 'text must not be blank'),
});
export type ReplyBody = z.infer<typeof ReplyBody>;

export const RunParams = z.object({ runId: z.string().min(1).max(255) });

export const ListRunsQuery = z.object({
  userId: UserIdSchema.optional(),
  status: z.enum(RUN_STATUSES).optional(),
  /** At most this many runs. @default 100 */
  limit: z.coerce.number().int().min(1).max(1000).optional(),
});
export type ListRunsQuery = z.infer<typeof ListRunsQuery>;
