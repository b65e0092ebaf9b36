/**
 * Response bodies of the long-term memory API (`/v1/users/:userId/memory/…`, `/facts`, `/episodes`)
 * as zod schemas, for the API description; each is checked against its type (see `describes`).
 */
import { z } from 'zod';
import { FACT_SOURCES, MEMORY_KINDS, type Episode, type Fact, type Provenance, type RecordedFact, type SearchHit } from '../longterm/contract';
import { LONGTERM_READ_ACTIONS } from '../longterm/audit-actions';
import { LONGTERM_AUDIT_KINDS, type LongTermAuditEntry } from '../store/longterm/store';
import { describes } from './response-schemas';

const ProvenanceSchema = describes<Provenance>()(
  z.object({
    sessionId: z.string().optional(),
    runId: z.string().optional(),
    messageIds: z.array(z.string()),
    source: z.enum(FACT_SOURCES).optional().meta({ description: 'Whose words: the person said it, a tool returned it, or the model inferred it' }),
  }),
);

export const FactSchema = describes<Fact>()(
  z.object({
    id: z.string(),
    userId: z.string(),
    subjectId: z.string(),
    subject: z.string(),
    predicate: z.string(),
    objectId: z.string().nullable(),
    object: z.string(),
    text: z.string().meta({ description: 'The fact as a sentence' }),
    validFrom: z.string(),
    validTo: z.string().nullable().meta({ description: 'When it stopped being true; null while valid' }),
    recordedAt: z.string(),
    confidence: z.number(),
    mentions: z.number().int(),
    supersedes: z.string().nullable(),
    supersededBy: z.string().nullable(),
    provenance: ProvenanceSchema,
  }),
).meta({ id: 'Fact' });

export const FactListSchema = z.object({ facts: z.array(FactSchema) });

export const RecordedFactSchema = describes<RecordedFact>()(
  z.object({ fact: FactSchema, outcome: z.enum(['added', 'strengthened', 'superseded']), previous: FactSchema.optional().meta({ description: 'The fact it superseded' }) }),
);

const EpisodeSchema = describes<Episode>()(
  z.object({
    id: z.string(),
    userId: z.string(),
    scope: z.enum(['invocation', 'conversation']),
    goal: z.string(),
    steps: z.array(z.string()),
    outcome: z.string(),
    lessons: z.array(z.string()),
    at: z.string(),
    provenance: ProvenanceSchema,
    scheduled: z.object({ scheduleId: z.string(), dueAt: z.string() }).optional().meta({ description: 'The invocation was a run a schedule started: which, and when it was due' }),
  }),
);
export const EpisodeListSchema = z.object({ episodes: z.array(EpisodeSchema) });

const SearchHitSchema = describes<SearchHit>()(z.object({ kind: z.enum(MEMORY_KINDS), id: z.string(), text: z.string(), score: z.number(), at: z.string().optional(), source: ProvenanceSchema }));
export const SearchResultsSchema = z.object({ results: z.array(SearchHitSchema) });

export const LongTermAuditEntrySchema = describes<LongTermAuditEntry>()(
  z.object({
    id: z.string(),
    userId: z.string(),
    at: z.string(),
    kind: z.enum(LONGTERM_AUDIT_KINDS).optional().meta({ description: '`read` or `write` (always given in answers; stored entries from before reads were audited have none)' }),
    action: z.string().meta({ description: 'Writes: add_messages, record_fact, end_fact, record_episode, add_summary. Reads: ' + LONGTERM_READ_ACTIONS.join(', ') }),
    targetIds: z.array(z.string()).meta({ description: 'The records written, or (up to 100) those the read returned' }),
    origin: z.enum(['agent', 'person', 'system']),
    reason: z.string(),
    runId: z.string().optional(),
    sessionId: z.string().optional(),
    notes: z.array(z.string()),
    details: z.record(z.string(), z.unknown()).optional().meta({ description: 'What was asked (query, filters) and, for a read, how many records it `returned`' }),
  }),
).meta({ id: 'LongTermAuditEntry' });
export const LongTermAuditSchema = z.object({ entries: z.array(LongTermAuditEntrySchema) });

export const ImportedSchema = z.object({
  imported: z.number().int().meta({ description: 'Messages stored (ones the user already had are left as they are)' }),
  sessionIds: z.array(z.string()).meta({ description: 'One per conversation, in order' }),
  extraction: z.object({ workflowId: z.string(), uiUrl: z.string() }).optional(),
});
