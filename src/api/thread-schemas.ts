/**
 * Request schemas of the memory threads API (`/v1/threads`, issue 3 §8). Each
 * is the source of truth for its request and its TypeScript type.
 */
import { z } from 'zod';
import { ID_PREFIX, OperationSchema, ORIGINS, READ_TARGETS, type OperationKind } from '../memory/model';
import { UserIdSchema } from './schemas';

/** Ids are self-describing: a kind prefix, then the id characters the API accepts elsewhere. */
const prefixed = (prefix: string, what: string) =>
  z
    .string()
    .max(160)
    .regex(new RegExp(`^${prefix}[A-Za-z0-9._@:+-]{1,150}$`), `${what} must look like "${prefix}…"`);

export const ThreadIdSchema = prefixed(ID_PREFIX.thread, 'threadId');
export const StateIdSchema = prefixed(ID_PREFIX.state, 'stateId');

/** Longest reason or trigger recorded with an operation. */
const MAX_NOTE_CHARS = 500;
const note = z.string().trim().min(1).max(MAX_NOTE_CHARS);

const LimitsSchema = z.object({ soft: z.number().int().positive(), hard: z.number().int().positive() }).refine((l) => l.soft <= l.hard, { message: 'soft must not exceed hard', path: ['soft'] });

export const ThreadParams = z.object({ threadId: ThreadIdSchema });
export const ThreadStateParams = z.object({ threadId: ThreadIdSchema, stateId: StateIdSchema });

export const CreateThreadBody = z.object({
  userId: UserIdSchema,
  /** The thread's own token limits. @default the server's MEMORY_SOFT_LIMIT / MEMORY_HARD_LIMIT */
  limits: LimitsSchema.optional(),
});

export const ListThreadsQuery = z.object({
  userId: UserIdSchema.optional(),
  /** At most this many threads, newest first. @default 100 */
  limit: z.coerce.number().int().min(1).max(1000).default(100),
});

export const OperationBody = z.object({
  operation: OperationSchema,
  /** Why the person made the change; recorded in the audit trail. */
  reason: note.optional(),
  /** What prompted it, e.g. "reviewing run run-42". */
  trigger: note.optional(),
});

export const StateTargetBody = z.object({ stateId: StateIdSchema, reason: note.optional() });

export const CheckpointBody = z.object({ name: z.string().trim().min(1).max(100), reason: note.optional() });

export const DiffQuery = z.object({
  from: StateIdSchema,
  /** @default the thread's head */
  to: StateIdSchema.optional(),
});

const OPERATION_KINDS = ['add', 'update', 'delete', 'reorder', 'replace', 'batch_replace', 'rollback', 'create', 'fork', 'checkpoint'] as const satisfies readonly OperationKind[];
// Fails to compile when a new operation kind is not listed above.
const allKindsListed: Exclude<OperationKind, (typeof OPERATION_KINDS)[number]> extends never ? true : never = true;
void allKindsListed;

export const AuditQuery = z.object({
  origin: z.enum(ORIGINS).optional(),
  /** An operation kind, or `read` for the recorded reads (listed only when asked for). */
  kind: z.enum([...OPERATION_KINDS, 'read']).optional(),
  /** What the reads looked at; implies `kind=read`. */
  target: z.enum(READ_TARGETS).optional(),
  runId: z.string().min(1).max(255).optional(),
  /** ISO timestamps, inclusive. */
  since: z.iso.datetime({ offset: true }).optional(),
  until: z.iso.datetime({ offset: true }).optional(),
  /** Only operations after this sequence number (reads have none). */
  after: z.coerce.number().int().min(0).optional(),
  /** @default 1000 */
  limit: z.coerce.number().int().min(1).max(1000).default(1000),
});

export const ContextQuery = z.object({
  /** Token budget of the rendering. @default the thread's hard limit (never more) */
  budget: z.coerce.number().int().positive().optional(),
});

/** The stream's resume cursor: the last `seq` the client saw (`?after=` or the `Last-Event-ID` header). */
export const StreamCursor = z.coerce.number().int().min(0);
export const StreamQuery = z.object({ after: StreamCursor.optional() });
