/**
 * Seed 002's "assemble context" at invocation start: what long-term memory holds about the user,
 * as chunks of the run's memory thread, so the prompt shows it and the thread's budget, audit and
 * compaction treat it like any other memory. Pure.
 */
import type { ChunkInput } from '../memory/model';
import type { Episode, Fact, InvocationContext } from './contract';

const day = (iso: string) => iso.slice(0, 10);

/** A fact as prompts show it; one whose words only a tool returned says so, so it cannot pass for the person's. */
export function factLine(f: Fact): string {
  const fromTool = f.provenance.source === 'tool' ? '; from a tool’s output, not the person' : '';
  return `- ${f.text} (since ${day(f.validFrom)}${f.validTo ? `, until ${day(f.validTo)}` : ''}${fromTool}; ${f.id})`;
}

export function episodeLine(e: Episode): string {
  const lessons = e.lessons.length ? ` Lessons: ${e.lessons.join('; ')}` : '';
  const scheduled = e.scheduled ? ` [a scheduled run of ${e.scheduled.scheduleId}]` : '';
  return `- ${day(e.at)} goal: ${e.goal} → outcome: ${e.outcome}.${lessons}${scheduled} (${e.id})`;
}

/**
 * Facts first and kept longest (COMPRESSIBLE, priority 75); similar episodes after them
 * (DISPOSABLE: useful hints, the first to go when the thread must shrink); this conversation's
 * summaries (BATCH_COMPRESSIBLE, folded together under pressure). Empty sections add nothing.
 */
export function longTermChunks(context: InvocationContext, provenance: { runId: string; sessionId?: string }): ChunkInput[] {
  const chunks: ChunkInput[] = [];
  const add = (title: string, lines: string[], priority: number, retention: ChunkInput['retention']) => {
    if (lines.length === 0) return;
    chunks.push({ type: 'environment', content: { kind: 'text', text: `${title}\n${lines.join('\n')}` }, priority, retention, agentModifiable: true, provenance });
  };
  add('What you know about the user (long-term memory; retrieve_facts finds more):', context.facts.map(factLine), 75, 'COMPRESSIBLE');
  add('Similar earlier tasks (episodic memory; recall_episodes finds more):', context.episodes.map(episodeLine), 55, 'DISPOSABLE');
  add(
    'Earlier in this conversation:',
    context.summaries.map((s) => `- ${s.text}`),
    65,
    'BATCH_COMPRESSIBLE',
  );
  return chunks;
}
