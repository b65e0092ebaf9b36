/**
 * Wire shapes of long-term memory (seed 002): a fact and an episode as the model or a person states
 * them — in the memory passes' replies (src/calls/memory-passes.ts), `store_fact` and the API.
 */
import { z } from 'zod';

/** A fact as the model or a person states it (wire shape of `memory_extraction` facts and `store_fact`). */
export const FactInputSchema = z.object({
  subject: z.string().trim().min(1).max(200),
  predicate: z.string().trim().min(1).max(200),
  object: z.string().trim().min(1).max(1000),
  text: z.string().trim().min(1).max(2000),
  validFrom: z.string().datetime({ offset: true }).optional(),
});
export type FactInput = z.infer<typeof FactInputSchema>;

export const EpisodeInputSchema = z.object({
  goal: z.string().trim().min(1).max(2000),
  steps: z.array(z.string().max(2000)).max(50),
  outcome: z.string().max(4000),
  lessons: z.array(z.string().max(2000)).max(20),
});
export type EpisodeInput = z.infer<typeof EpisodeInputSchema>;
