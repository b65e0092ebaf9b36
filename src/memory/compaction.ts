/**
 * Compaction by retention class (seed 001 "Memory Compact"): what to drop, what
 * to summarize and what to shorten by built-in logic once a state is past its
 * soft token limit, and what to shorten further while it is past its hard
 * limit. Pure: the summaries themselves are model calls made by the memory
 * service; the built-in compression (`compressText`) is here.
 */
import type { Chunk, TokenLimits } from './model';

export type CompactionStep =
  | { kind: 'drop'; chunkIds: string[] }
  /** Built-in compression of an OTHERS chunk (no model call): see `compressText`. */
  | { kind: 'builtin_compress'; chunkId: string }
  | { kind: 'summarize'; chunkId: string }
  | { kind: 'batch_summarize'; chunkIds: string[] }
  /** Built-in compression of any non-CRITICAL chunk to `tokens`, while the state is still past its hard limit. */
  | { kind: 'hard_trim'; chunkId: string; tokens: number };

export interface CompactionOptions {
  /** Whether a summarizer (a model) is there; without one the summary stages are left out of the plan. @default true */
  summarize?: boolean;
}

/** A summary is planned at this share of what it replaces… */
export const SUMMARY_RATIO = 0.25;
/** …but never below this many tokens. */
export const MIN_SUMMARY_TOKENS = 20;
/**
 * The newest BATCH_COMPRESSIBLE chunks of this many steps stay verbatim (seed 002's "summarize
 * older steps, keep recent raw"): the model needs its latest steps word for word.
 */
export const KEEP_RECENT_STEPS = 4;

/**
 * What a person said (user chunks: messages, replies to ask_user) and what failed (a step's error
 * result) are kept verbatim longest (seed 002 on working-memory compression): the model must not
 * lose an instruction or repeat a mistake because a summary smoothed it away. In every stage they
 * come after the other chunks of their class, and BATCH_COMPRESSIBLE ones are summarized only
 * once summarizing everything else was not enough.
 */
export function isPreserved(chunk: Chunk): boolean {
  if (chunk.type === 'user') return true;
  if (chunk.type !== 'action_response' || chunk.content.kind !== 'json') return false;
  const data = chunk.content.data;
  return typeof data === 'object' && data !== null && ((data as { status?: unknown }).status === 'error' || 'error' in data);
}

/** The size a summary of `tokens` tokens is planned at. */
export function projectedSummaryTokens(tokens: number): number {
  return Math.max(MIN_SUMMARY_TOKENS, Math.ceil(tokens * SUMMARY_RATIO));
}

const sumTokens = (chunks: readonly Chunk[]) => chunks.reduce((n, c) => n + c.tokens, 0);

/** The step a chunk records: a run's step (its chunks, e.g. action and action_response, are one), or the chunk alone. */
const stepOf = (chunk: Chunk): string => (chunk.provenance.stepId ? `${chunk.provenance.runId ?? ''}/${chunk.provenance.stepId}` : chunk.id);

/** The chunks of the newest KEEP_RECENT_STEPS steps among `batch` (in state order). */
function recentSteps(batch: readonly Chunk[]): Set<Chunk> {
  const steps = new Set<string>();
  for (let i = batch.length - 1; i >= 0 && steps.size < KEEP_RECENT_STEPS; i--) steps.add(stepOf(batch[i] as Chunk));
  return new Set(batch.filter((c) => steps.has(stepOf(c))));
}

/** The total tokens of `chunks` once `steps` are applied, with each summary at its projected size. */
export function projectTokens(chunks: readonly Chunk[], steps: readonly CompactionStep[]): number {
  const byId = new Map(chunks.map((c) => [c.id, c]));
  const tokensOf = (id: string) => byId.get(id)?.tokens ?? 0;
  let total = sumTokens(chunks);
  for (const step of steps) {
    if (step.kind === 'drop') for (const id of step.chunkIds) total -= tokensOf(id);
    else if (step.kind === 'hard_trim') total += step.tokens - tokensOf(step.chunkId);
    else if (step.kind !== 'batch_summarize') total += projectedSummaryTokens(tokensOf(step.chunkId)) - tokensOf(step.chunkId);
    else {
      const group = step.chunkIds.reduce((n, id) => n + tokensOf(id), 0);
      total += projectedSummaryTokens(group) - group;
    }
  }
  return total;
}

/** Least important first: preserved ones (`isPreserved`) last, then lowest priority, then oldest. */
function leastImportantFirst(chunks: readonly Chunk[], keep: (c: Chunk) => boolean): Chunk[] {
  return chunks
    .map((chunk, index) => ({ chunk, index, preserved: isPreserved(chunk) ? 1 : 0 }))
    .filter(({ chunk }) => keep(chunk))
    .sort((a, b) => a.preserved - b.preserved || a.chunk.priority - b.chunk.priority || a.index - b.index)
    .map(({ chunk }) => chunk);
}

/**
 * Groups of BATCH_COMPRESSIBLE chunks to summarize together, oldest first.
 * A group is a run of such chunks with nothing else between them (a
 * batch_replace puts its result where the first one was, so only a contiguous
 * run keeps the order of everything else), the chunks of the newest
 * KEEP_RECENT_STEPS steps are left out, and a run is split so no group holds
 * more than `hard` tokens — the texts of one summary call must fit a model call.
 * Only chunks `eligible` says yes to join a group; the others split runs like any other chunk.
 */
function batchGroups(remaining: readonly Chunk[], hard: number, eligible: (c: Chunk) => boolean): Chunk[][] {
  const batch = remaining.filter((c) => c.retention === 'BATCH_COMPRESSIBLE');
  const recent = recentSteps(batch);
  const candidates = new Set(batch.filter((c) => !recent.has(c) && eligible(c)));
  const groups: Chunk[][] = [];
  let group: Chunk[] = [];
  let groupTokens = 0;
  const close = () => {
    if (group.length > 0) groups.push(group);
    group = [];
    groupTokens = 0;
  };
  for (const chunk of remaining) {
    if (!candidates.has(chunk)) {
      close();
      continue;
    }
    if (group.length > 0 && groupTokens + chunk.tokens > hard) close();
    group.push(chunk);
    groupTokens += chunk.tokens;
  }
  close();
  return groups;
}

/**
 * Plans compaction of a state's chunks (in state order) once their tokens pass
 * `limits.soft`; empty when they do not. Steps come in this order, each stage
 * only while the projected total is still above the soft limit:
 * 1. one `drop` of DISPOSABLE chunks, lowest priority (then oldest) first, as many as needed;
 * 2. a `builtin_compress` per OTHERS chunk, lowest priority (then oldest) first — no model call;
 * 3. a `summarize` per COMPRESSIBLE chunk, lowest priority (then oldest) first;
 * 4. a `batch_summarize` per group of BATCH_COMPRESSIBLE chunks (see `batchGroups`), oldest first —
 *    first without the preserved ones (`isPreserved`), then, still above, the groups of what is left;
 * 5. then, only while the projection is still above `limits.hard` (no summarizer, or not
 *    enough to compress), a `hard_trim` per remaining non-CRITICAL chunk, EPHEMERAL ones
 *    included, lowest priority (then oldest) first, each cut by what is still too much (to
 *    MIN_SUMMARY_TOKENS at most).
 * Other shortened chunks are projected at `projectedSummaryTokens` (chunks too small to shrink
 * are skipped). Within each stage preserved chunks come last. CRITICAL chunks are never touched;
 * EPHEMERAL ones only in stage 5 (otherwise they leave when their session ends). Deterministic:
 * same chunks, same plan.
 */
export function planCompaction(chunks: readonly Chunk[], limits: TokenLimits, options: CompactionOptions = {}): CompactionStep[] {
  let projected = sumTokens(chunks);
  if (projected <= limits.soft) return [];
  const steps: CompactionStep[] = [];
  const touched = new Set<Chunk>();
  /** Plans shortening one chunk to its projected size, unless it is too small to shrink. */
  const shorten = (chunk: Chunk, kind: 'builtin_compress' | 'summarize'): void => {
    const saving = chunk.tokens - projectedSummaryTokens(chunk.tokens);
    if (saving <= 0) return;
    steps.push({ kind, chunkId: chunk.id });
    touched.add(chunk);
    projected -= saving;
  };

  const dropped = new Set<Chunk>();
  for (const chunk of leastImportantFirst(chunks, (c) => c.retention === 'DISPOSABLE')) {
    if (projected <= limits.soft) break;
    dropped.add(chunk);
    touched.add(chunk);
    projected -= chunk.tokens;
  }
  if (dropped.size > 0) steps.push({ kind: 'drop', chunkIds: [...dropped].map((c) => c.id) });

  for (const chunk of leastImportantFirst(chunks, (c) => c.retention === 'OTHERS')) {
    if (projected <= limits.soft) break;
    shorten(chunk, 'builtin_compress');
  }

  if (options.summarize ?? true) {
    for (const chunk of leastImportantFirst(chunks, (c) => c.retention === 'COMPRESSIBLE')) {
      if (projected <= limits.soft) break;
      shorten(chunk, 'summarize');
    }
    // The preserved chunks split the first pass's runs and stay verbatim; the second pass takes what is left.
    for (const eligible of [(c: Chunk) => !isPreserved(c), (c: Chunk) => !touched.has(c)]) {
      if (projected <= limits.soft) break;
      for (const group of batchGroups(
        chunks.filter((c) => !dropped.has(c)),
        limits.hard,
        eligible,
      )) {
        if (projected <= limits.soft) break;
        const groupTokens = sumTokens(group);
        const saving = groupTokens - projectedSummaryTokens(groupTokens);
        if (saving <= 0) continue;
        steps.push({ kind: 'batch_summarize', chunkIds: group.map((c) => c.id) });
        for (const c of group) touched.add(c);
        projected -= saving;
      }
    }
  }

  for (const chunk of leastImportantFirst(chunks, (c) => c.retention !== 'CRITICAL' && !touched.has(c))) {
    if (projected <= limits.hard) break;
    const tokens = Math.max(MIN_SUMMARY_TOKENS, chunk.tokens - (projected - limits.hard));
    if (tokens >= chunk.tokens) continue;
    steps.push({ kind: 'hard_trim', chunkId: chunk.id, tokens });
    projected -= chunk.tokens - tokens;
  }
  return steps;
}

/** Summaries already made (compacted chunks) are not raw steps: only new steps make compression due. */
const isRaw = (chunk: Chunk) => chunk.retention === 'BATCH_COMPRESSIBLE' && chunk.type !== 'compacted' && !isPreserved(chunk);

/**
 * How many steps a compression would summarize now: the steps of raw (not yet summarized, not
 * preserved) BATCH_COMPRESSIBLE chunks older than the newest KEEP_RECENT_STEPS steps.
 */
export function compressibleSteps(chunks: readonly Chunk[]): number {
  const batch = chunks.filter((c) => c.retention === 'BATCH_COMPRESSIBLE');
  const recent = recentSteps(batch);
  return new Set(batch.filter((c) => isRaw(c) && !recent.has(c)).map(stepOf)).size;
}

/**
 * Seed 002's options A and C (every N steps, or when the agent decides), beside the token
 * threshold: summarizes the older working flow whatever the thread's size — a `batch_summarize`
 * per group of BATCH_COMPRESSIBLE chunks outside the newest KEEP_RECENT_STEPS steps, with the
 * preserved chunks (`isPreserved`) left verbatim and splitting the groups, and an earlier summary
 * folded into the group beside it. Groups with no raw chunk, or too small to shrink, are left
 * out; no group holds more than `limits.hard` tokens. `only` narrows the chunks a group may hold
 * (e.g. the ones the agent may change). Deterministic.
 */
export function planCompression(chunks: readonly Chunk[], limits: TokenLimits, only: (c: Chunk) => boolean = () => true): CompactionStep[] {
  const steps: CompactionStep[] = [];
  for (const group of batchGroups(chunks, limits.hard, (c) => !isPreserved(c) && only(c))) {
    const groupTokens = sumTokens(group);
    if (!group.some(isRaw) || groupTokens - projectedSummaryTokens(groupTokens) <= 0) continue;
    steps.push({ kind: 'batch_summarize', chunkIds: group.map((c) => c.id) });
  }
  return steps;
}

/**
 * The built-in compression (seed 001's OTHERS, and the hard limit's last resort): the text's
 * beginning and end, two thirds and one third of what fits, around a marker saying how much was
 * cut — at most `maxTokens` tokens as `countTokens` counts them (the marker alone when even a
 * little text does not fit). Deterministic, and no model call.
 */
export function compressText(text: string, maxTokens: number, countTokens: (text: string) => number): string {
  const tokens = countTokens(text);
  if (tokens <= maxTokens) return text;
  const marker = `\n[… about ${tokens - maxTokens} tokens cut by built-in compaction …]\n`;
  const room = maxTokens - countTokens(marker);
  if (room <= 0) return marker.trim();
  const charsPerToken = text.length / tokens;
  for (let keep = Math.floor(room * charsPerToken); keep > 0; keep = Math.floor(keep * 0.9)) {
    const head = Math.ceil((keep * 2) / 3);
    const candidate = text.slice(0, head) + marker + text.slice(text.length - (keep - head));
    if (countTokens(candidate) <= maxTokens) return candidate;
  }
  return marker.trim();
}
