/** Compaction planning: what goes, what gets summarized, and what is never touched once a thread passes its soft limit. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import {
  KEEP_RECENT_STEPS,
  planCompaction,
  projectedSummaryTokens,
  projectTokens,
  type CompactionStep,
} from '../../src/memory/compaction';
import { RETENTION_CLASSES, type Chunk, type RetentionClass } from '../../src/memory/model';

function chunk(id: string, retention: RetentionClass, tokens: number, priority = 50): Chunk {
  return {
    id,
    type: retention === 'CRITICAL' ? 'system' : 'thinking',
    content: { kind: 'text', text: id },
    priority,
    retention,
    agentModifiable: retention !== 'CRITICAL',
    parentChunkId: null,
    provenance: {},
    messageId: null,
    tokens,
    createdAt: '2025-01-01T00:00:00.000Z',
  };
}

const total = (chunks: Chunk[]) => chunks.reduce((n, c) => n + c.tokens, 0);
const touched = (steps: CompactionStep[]) => steps.flatMap((s) => (s.kind === 'summarize' ? [s.chunkId] : s.chunkIds));

test('nothing to do at or under the soft limit', () => {
  const chunks = [chunk('c1', 'DISPOSABLE', 100), chunk('c2', 'COMPRESSIBLE', 100)];
  assert.deepEqual(planCompaction(chunks, { soft: 200, hard: 400 }), []);
  assert.deepEqual(planCompaction([], { soft: 0, hard: 0 }), []);
});

test('DISPOSABLE chunks go first, in one drop, lowest priority (then oldest) first, only as many as needed', () => {
  const chunks = [
    chunk('crit', 'CRITICAL', 500),
    chunk('d-old-hi', 'DISPOSABLE', 100, 80),
    chunk('d-old-lo', 'DISPOSABLE', 100, 10),
    chunk('d-new-lo', 'DISPOSABLE', 100, 10),
    chunk('comp', 'COMPRESSIBLE', 100),
  ];
  // 900 tokens, soft 750: two drops are enough.
  assert.deepEqual(planCompaction(chunks, { soft: 750, hard: 2000 }), [{ kind: 'drop', chunkIds: ['d-old-lo', 'd-new-lo'] }]);
  // soft 650: all three, and summarizing is not needed.
  const steps = planCompaction(chunks, { soft: 650, hard: 2000 });
  assert.deepEqual(steps, [{ kind: 'drop', chunkIds: ['d-old-lo', 'd-new-lo', 'd-old-hi'] }]);
  assert.equal(projectTokens(chunks, steps), 600);
});

test('then COMPRESSIBLE chunks are summarized one by one, lowest priority and oldest first, each projected at 25% (min 20)', () => {
  const chunks = [
    chunk('crit', 'CRITICAL', 100),
    chunk('c-hi', 'COMPRESSIBLE', 400, 90),
    chunk('c-lo-old', 'COMPRESSIBLE', 400, 20),
    chunk('tiny', 'COMPRESSIBLE', 15, 0),
    chunk('c-lo-new', 'COMPRESSIBLE', 400, 20),
    chunk('d', 'DISPOSABLE', 50),
  ];
  assert.equal(projectedSummaryTokens(400), 100);
  assert.equal(projectedSummaryTokens(40), 20);
  // 1365 tokens; drop d → 1315; c-lo-old → 1015; c-lo-new → 715 ≤ 800. The 15-token chunk cannot shrink and is skipped.
  const steps = planCompaction(chunks, { soft: 800, hard: 5000 });
  assert.deepEqual(steps, [
    { kind: 'drop', chunkIds: ['d'] },
    { kind: 'summarize', chunkId: 'c-lo-old' },
    { kind: 'summarize', chunkId: 'c-lo-new' },
  ]);
  assert.equal(projectTokens(chunks, steps), 715);
});

test('then BATCH_COMPRESSIBLE runs are summarized together, oldest first, leaving the newest few verbatim', () => {
  const b = (i: number) => chunk(`b${i}`, 'BATCH_COMPRESSIBLE', 100);
  const chunks = [
    chunk('sys', 'CRITICAL', 100),
    b(1), b(2), b(3),
    chunk('ask', 'CRITICAL', 50), // a CRITICAL chunk between them splits the run: batch_replace keeps order
    b(4), b(5),
    chunk('eph', 'EPHEMERAL', 50),
    b(6), b(7), b(8), b(9), b(10),
  ];
  const steps = planCompaction(chunks, { soft: 100, hard: 10_000 });
  assert.deepEqual(steps, [
    { kind: 'batch_summarize', chunkIds: ['b1', 'b2', 'b3'] },
    { kind: 'batch_summarize', chunkIds: ['b4', 'b5'] },
    { kind: 'batch_summarize', chunkIds: ['b6'] },
  ]);
  assert.equal(KEEP_RECENT_STEPS, 4);
  assert.ok(!touched(steps).some((id) => ['b7', 'b8', 'b9', 'b10'].includes(id)), 'the newest four (each its own step) stay');
  // Only as many groups as needed: after the first, 1300 − 300 + 75 = 1075.
  assert.deepEqual(planCompaction(chunks, { soft: 1100, hard: 10_000 }), [{ kind: 'batch_summarize', chunkIds: ['b1', 'b2', 'b3'] }]);
});

test('a run step’s chunks count as one step: older steps are summarized, the newest KEEP_RECENT_STEPS steps stay raw, whole', () => {
  // Six tool steps of a run, each an action and its action_response.
  const step = (n: number): Chunk[] =>
    (['a', 'r'] as const).map((half) => ({ ...chunk(`s${n}${half}`, 'BATCH_COMPRESSIBLE', 100), provenance: { runId: 'run-1', stepId: `s${n}` } }));
  const chunks = [chunk('goal', 'CRITICAL', 50), ...[1, 2, 3, 4, 5, 6].flatMap(step)];
  const steps = planCompaction(chunks, { soft: 100, hard: 10_000 });
  assert.deepEqual(steps, [{ kind: 'batch_summarize', chunkIds: ['s1a', 's1r', 's2a', 's2r'] }]);
  // The same step id in another run (a tree's child run writing to the root's thread) is another step.
  const other = chunks.map((c) => (c.id === 's6r' ? { ...c, provenance: { runId: 'run-1.t1-2', stepId: 's6' } } : c));
  assert.deepEqual(planCompaction(other, { soft: 100, hard: 10_000 }), [{ kind: 'batch_summarize', chunkIds: ['s1a', 's1r', 's2a', 's2r', 's3a', 's3r'] }]);
});

test('a run larger than the hard limit is split so each summary call fits a model call', () => {
  const chunks = [...Array.from({ length: 10 }, (_, i) => chunk(`b${i}`, 'BATCH_COMPRESSIBLE', 300))];
  const steps = planCompaction(chunks, { soft: 100, hard: 700 });
  assert.deepEqual(steps, [
    { kind: 'batch_summarize', chunkIds: ['b0', 'b1'] },
    { kind: 'batch_summarize', chunkIds: ['b2', 'b3'] },
    { kind: 'batch_summarize', chunkIds: ['b4', 'b5'] },
  ]);
});

test('dropped DISPOSABLE chunks no longer split a batch run', () => {
  const chunks = [
    chunk('b1', 'BATCH_COMPRESSIBLE', 200),
    chunk('d', 'DISPOSABLE', 10),
    chunk('b2', 'BATCH_COMPRESSIBLE', 200),
    ...['n1', 'n2', 'n3', 'n4'].map((id) => chunk(id, 'BATCH_COMPRESSIBLE', 10)),
  ];
  assert.deepEqual(planCompaction(chunks, { soft: 200, hard: 10_000 }), [
    { kind: 'drop', chunkIds: ['d'] },
    { kind: 'batch_summarize', chunkIds: ['b1', 'b2'] },
  ]);
});

test('CRITICAL and EPHEMERAL chunks are never in a plan, however far over the limit', () => {
  const chunks = [chunk('c1', 'CRITICAL', 10_000), chunk('e1', 'EPHEMERAL', 10_000), chunk('c2', 'CRITICAL', 5)];
  assert.deepEqual(planCompaction(chunks, { soft: 10, hard: 100 }), []);
});

test('the plan is deterministic', () => {
  const chunks = RETENTION_CLASSES.flatMap((r, i) => [chunk(`${r}-a`, r, 100 + i, i * 10), chunk(`${r}-b`, r, 300, i * 10)]);
  const limits = { soft: 300, hard: 1000 };
  assert.deepEqual(planCompaction(chunks, limits), planCompaction(chunks.map((c) => ({ ...c })), limits));
  assert.ok(planCompaction(chunks, limits).length > 0);
});

// ---------------------------------------------------------------------------

const chunksArb = fc
  .array(
    fc.record({
      retention: fc.constantFrom<RetentionClass>(...RETENTION_CLASSES),
      tokens: fc.integer({ min: 0, max: 800 }),
      priority: fc.integer({ min: 0, max: 100 }),
    }),
    { maxLength: 40 },
  )
  .map((specs) => specs.map((s, i) => chunk(`chunk_${i}`, s.retention, s.tokens, s.priority)));

test('property: plans touch only compactable chunks, each once, in stage order, and reach the soft limit whenever it can be reached', () => {
  fc.assert(
    fc.property(chunksArb, fc.integer({ min: 0, max: 20_000 }), fc.integer({ min: 1, max: 20_000 }), (chunks, soft, hard) => {
      const steps = planCompaction(chunks, { soft, hard });
      const byId = new Map(chunks.map((c) => [c.id, c]));
      const ids = touched(steps);
      assert.equal(new Set(ids).size, ids.length, 'no chunk in two steps');
      for (const id of ids) {
        const r = byId.get(id)?.retention;
        assert.ok(r !== undefined && r !== 'CRITICAL' && r !== 'EPHEMERAL', `${id} (${String(r)}) is in the plan`);
      }
      const stage = { drop: 0, summarize: 1, batch_summarize: 2 } as const;
      assert.deepEqual(steps.map((s) => stage[s.kind]), steps.map((s) => stage[s.kind]).sort());
      for (const s of steps) {
        if (s.kind === 'drop') assert.ok(s.chunkIds.every((id) => byId.get(id)?.retention === 'DISPOSABLE'));
        if (s.kind === 'summarize') assert.equal(byId.get(s.chunkId)?.retention, 'COMPRESSIBLE');
        if (s.kind === 'batch_summarize') assert.ok(s.chunkIds.every((id) => byId.get(id)?.retention === 'BATCH_COMPRESSIBLE'));
      }

      if (total(chunks) <= soft) assert.deepEqual(steps, []);
      // The most that compaction can achieve: everything it may do, done.
      const floor = projectTokens(chunks, planCompaction(chunks, { soft: -1, hard }));
      const reached = projectTokens(chunks, steps);
      if (floor <= soft) assert.ok(reached <= soft, `reached ${reached} > soft ${soft} although ${floor} was possible`);
      else assert.equal(reached, floor, 'when the soft limit cannot be reached, everything possible is planned');
    }),
    { numRuns: 500 },
  );
});

test('property: with plenty of DISPOSABLE and COMPRESSIBLE tokens, the soft limit is always reached', () => {
  fc.assert(
    fc.property(chunksArb, fc.integer({ min: 0, max: 5000 }), (chunks, soft) => {
      const fixed = chunks.filter((c) => c.retention === 'CRITICAL' || c.retention === 'EPHEMERAL' || c.retention === 'BATCH_COMPRESSIBLE');
      const disposable = chunks.filter((c) => c.retention === 'DISPOSABLE');
      const compressible = chunks.filter((c) => c.retention === 'COMPRESSIBLE');
      const best = total(fixed) + compressible.reduce((n, c) => n + Math.min(c.tokens, projectedSummaryTokens(c.tokens)), 0);
      fc.pre(best <= soft && disposable.length + compressible.length > 0);
      assert.ok(projectTokens(chunks, planCompaction(chunks, { soft, hard: 100_000 })) <= soft);
    }),
    { numRuns: 300 },
  );
});
