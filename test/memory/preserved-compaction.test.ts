/**
 * Compaction keeps a person's words and what failed (seed 002 working-memory compression), through
 * the path a run's steps take: `stepChunks` records each finished step, `rememberInRun` writes it to
 * the run's thread and compacts it with the memory service's summarizer once past the soft limit.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { rememberInRun } from '../../src/activities/plan-activities';
import { goalChunk, runThreadId, stepChunks } from '../../src/memory/run-chunks';
import type { Chunk } from '../../src/memory/model';
import { renderContent } from '../../src/memory/parser';
import { applyPlan, initialState, type PlanStep } from '../../src/planning/execution-state';
import { MemoryService } from '../../src/store/memory-service';
import { InMemoryMemoryStore } from '../../src/store/memory/in-memory-store';

const at = new Date('2025-01-01T00:00:00.000Z');

test("a run's reply to ask_user and its failed step stay verbatim while its other steps are summarized", async () => {
  const summarized: string[][] = [];
  const memory = new MemoryService({
    store: new InMemoryMemoryStore(),
    limits: { soft: 400, hard: 4000 },
    summarizer: async (texts) => {
      summarized.push(texts);
      return `summary of ${texts.length} chunk(s)`;
    },
  });
  const base = initialState({ runId: 'run-p', userId: 'ada', goal: 'Book a table', model: 'm' }, at);
  const specs = Array.from({ length: 12 }, (_, i) =>
    i === 1
      ? { type: 'ask_user' as const, description: 'Ask for the party size', question: 'How many people?' }
      : { type: 'tool' as const, description: `Call trattoria ${i}`, tool: 'calculator', args: { expression: `${i}+1` } },
  );
  const state = { ...applyPlan(base, specs, at), threadId: runThreadId('run-p') };
  await memory.ensureThread({ threadId: state.threadId, userId: 'ada', chunks: [goalChunk(state)], meta: { origin: 'system', reason: 'test', trigger: 'test' } });

  const reply = 'We are four, and one of us is vegetarian: no meat dishes for her, please.';
  const error = 'trattoria 3 refused the booking: the kitchen is closed on Fridays until further notice';
  for (const [i, step] of (state.steps as PlanStep[]).entries()) {
    const outcome =
      step.type === 'ask_user'
        ? { kind: 'user_reply' as const, content: reply }
        : i === 3
          ? { kind: 'error' as const, content: error }
          : { kind: 'tool' as const, content: JSON.stringify({ value: i, note: `table for ${i} at trattoria ${i}, terrace side, confirmed by phone` }) };
    await rememberInRun({ memory }, state, stepChunks(state, step, outcome), `step ${step.id}`, `key-${step.id}`);
  }

  const { chunks, state: head } = await memory.view(state.threadId);
  assert.ok(summarized.length > 0, 'the thread passed its soft limit and was compacted');
  assert.ok(head.tokens <= 400);
  const text = (c: Chunk) => renderContent(c.content);
  // The reply and the failure are still in the head as they were written, and in no summary request.
  const kept = chunks.filter((c) => c.type === 'user' || (c.type === 'action_response' && text(c).includes('status: error')));
  assert.deepEqual(
    kept.map((c) => [c.type, c.parentChunkId]),
    [
      ['user', null],
      ['action_response', null],
    ],
  );
  assert.equal(text(kept[0] as Chunk), reply);
  assert.ok(text(kept[1] as Chunk).includes(error));
  assert.ok(!summarized.flat().some((t) => t.includes(reply) || t.includes(error)));
  // The successes around them were summarized (a compacted chunk) and the question went with them.
  assert.ok(chunks.some((c) => c.type === 'compacted'));
  assert.ok(summarized.flat().some((t) => t.includes('How many people?')));
});
