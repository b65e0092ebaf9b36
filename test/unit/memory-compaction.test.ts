/** Compaction planning: what goes, what gets summarized, and what is never touched once a thread passes its soft limit. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import {
  compressibleSteps,
  compressText,
  isPreserved,
  KEEP_RECENT_STEPS,
  planCompaction,
  planCompression,
  projectedSummaryTokens,
  projectTokens,
  type CompactionStep,
} from '../../src/memory/compaction';
import { RETENTION_CLASSES, type Chunk, type RetentionClass } from '../../src/memory/model';
import { countTextTokens } from '../../src/memory/tokens';

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
const touched = (steps: CompactionStep[]) => steps.flatMap((s) => ('chunkIds' in s ? s.chunkIds : [s.chunkId]));

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
    b(1),
    b(2),
    b(3),
    chunk('ask', 'CRITICAL', 50), // a CRITICAL chunk between them splits the run: batch_replace keeps order
    b(4),
    b(5),
    chunk('eph', 'EPHEMERAL', 50),
    b(6),
    b(7),
    b(8),
    b(9),
    b(10),
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
  const step = (n: number): Chunk[] => (['a', 'r'] as const).map((half) => ({ ...chunk(`s${n}${half}`, 'BATCH_COMPRESSIBLE', 100), provenance: { runId: 'run-1', stepId: `s${n}` } }));
  const chunks = [chunk('goal', 'CRITICAL', 50), ...[1, 2, 3, 4, 5, 6].flatMap(step)];
  const steps = planCompaction(chunks, { soft: 100, hard: 10_000 });
  assert.deepEqual(steps, [{ kind: 'batch_summarize', chunkIds: ['s1a', 's1r', 's2a', 's2r'] }]);
  // The same step id in another run (a tree's child run writing to the root's thread) is another step.
  const other = chunks.map((c) => (c.id === 's6r' ? { ...c, provenance: { runId: 'run-1.t1-2', stepId: 's6' } } : c));
  assert.deepEqual(planCompaction(other, { soft: 100, hard: 10_000 }), [{ kind: 'batch_summarize', chunkIds: ['s1a', 's1r', 's2a', 's2r', 's3a', 's3r'] }]);
});

/** A person's words and a failed step's result, as run and session threads hold them. */
const said = (id: string, tokens: number): Chunk => ({ ...chunk(id, 'BATCH_COMPRESSIBLE', tokens, 60), type: 'user' });
const failed = (id: string, tokens: number): Chunk => ({
  ...chunk(id, 'BATCH_COMPRESSIBLE', tokens, 55),
  type: 'action_response',
  content: { kind: 'json', data: { step: id, error: 'boom', status: 'error' } },
});

test('isPreserved: user chunks and failed results, not successes or the agent’s own words', () => {
  assert.ok(isPreserved(said('u', 10)));
  assert.ok(isPreserved(failed('f', 10)));
  const ok: Chunk = { ...failed('ok', 10), content: { kind: 'json', data: { step: 'ok', result: 1, status: 'success' } } };
  assert.ok(!isPreserved(ok));
  assert.ok(!isPreserved(chunk('t', 'BATCH_COMPRESSIBLE', 10)));
});

test('a person’s words and failed results stay verbatim while summarizing the rest is enough', () => {
  const b = (id: string) => chunk(id, 'BATCH_COMPRESSIBLE', 100);
  const chunks = [b('t1'), said('u1', 100), b('t2'), failed('e1', 100), b('t3'), b('t4'), ...['n1', 'n2', 'n3', 'n4'].map((id) => chunk(id, 'BATCH_COMPRESSIBLE', 10))];
  // 640 tokens, soft 400: summarizing t1 (565), t2 (490) and t3–t4 (340) is enough; u1 and e1 split the runs and stay.
  const steps = planCompaction(chunks, { soft: 400, hard: 10_000 });
  assert.deepEqual(steps, [
    { kind: 'batch_summarize', chunkIds: ['t1'] },
    { kind: 'batch_summarize', chunkIds: ['t2'] },
    { kind: 'batch_summarize', chunkIds: ['t3', 't4'] },
  ]);
  assert.ok(!touched(steps).some((id) => id === 'u1' || id === 'e1'));
  // Before this rule the oldest run (t1, u1, t2, e1, …) went into one summary, the person's words with it.
});

test('when summarizing everything else is not enough, the preserved chunks are summarized last', () => {
  const chunks = [said('u1', 400), chunk('t1', 'BATCH_COMPRESSIBLE', 100), failed('e1', 400), ...['n1', 'n2', 'n3', 'n4'].map((id) => chunk(id, 'BATCH_COMPRESSIBLE', 10))];
  // 940 tokens, soft 300: t1 → 25 (865), then u1 → 100 (565), then e1 → 100 (265).
  assert.deepEqual(planCompaction(chunks, { soft: 300, hard: 10_000 }), [
    { kind: 'batch_summarize', chunkIds: ['t1'] },
    { kind: 'batch_summarize', chunkIds: ['u1'] },
    { kind: 'batch_summarize', chunkIds: ['e1'] },
  ]);
});

test('past the hard limit without a summarizer, preserved chunks are trimmed last, whatever their priority', () => {
  const chunks = [{ ...said('u1', 300), priority: 10 }, chunk('t1', 'BATCH_COMPRESSIBLE', 300, 90), failed('e1', 300)];
  const steps = planCompaction(chunks, { soft: 500, hard: 600 }, { summarize: false });
  // 900 tokens, hard 600: cutting t1 (the agent's thinking) by 300 → 20 leaves 620; then u1 by 20.
  assert.deepEqual(steps, [
    { kind: 'hard_trim', chunkId: 't1', tokens: 20 },
    { kind: 'hard_trim', chunkId: 'u1', tokens: 280 },
  ]);
});

test('planCompression (every N steps, or the agent asking): older steps summarized under any limit, preserved ones and the newest four kept', () => {
  const b = (id: string) => chunk(id, 'BATCH_COMPRESSIBLE', 100);
  const recent = ['n1', 'n2', 'n3', 'n4'].map(b);
  const chunks = [chunk('goal', 'CRITICAL', 50), b('t1'), said('u1', 100), b('t2'), b('t3'), failed('e1', 100), ...recent];
  assert.equal(compressibleSteps(chunks), 3, 't1, t2, t3: the preserved and the newest four do not count');
  assert.deepEqual(planCompression(chunks, { soft: 100_000, hard: 200_000 }), [
    { kind: 'batch_summarize', chunkIds: ['t1'] },
    { kind: 'batch_summarize', chunkIds: ['t2', 't3'] },
  ]);
  // `only` narrows what may be summarized (the agent: only chunks it may change).
  const locked = chunks.map((c) => (c.id === 't2' ? { ...c, agentModifiable: false } : c));
  assert.deepEqual(
    planCompression(locked, { soft: 100_000, hard: 200_000 }, (c) => c.agentModifiable),
    [
      { kind: 'batch_summarize', chunkIds: ['t1'] },
      { kind: 'batch_summarize', chunkIds: ['t3'] },
    ],
  );
  // An earlier summary is folded into the group beside it, but is not a step of its own: alone, nothing is due.
  const compacted: Chunk = { ...b('c0'), type: 'compacted' };
  const later = [chunk('goal', 'CRITICAL', 50), compacted, b('t4'), ...recent];
  assert.equal(compressibleSteps(later), 1);
  assert.deepEqual(planCompression(later, { soft: 100_000, hard: 200_000 }), [{ kind: 'batch_summarize', chunkIds: ['c0', 't4'] }]);
  assert.deepEqual(planCompression([chunk('goal', 'CRITICAL', 50), compacted, ...recent], { soft: 100_000, hard: 200_000 }), []);
});

test('a run larger than the hard limit is split so each summary call fits a model call', () => {
  const chunks = [...Array.from({ length: 10 }, (_, i) => chunk(`b${i}`, 'BATCH_COMPRESSIBLE', 300))];
  const steps = planCompaction(chunks, { soft: 100, hard: 700 });
  assert.deepEqual(steps, [
    { kind: 'batch_summarize', chunkIds: ['b0', 'b1'] },
    { kind: 'batch_summarize', chunkIds: ['b2', 'b3'] },
    { kind: 'batch_summarize', chunkIds: ['b4', 'b5'] },
    // 3 × 150 + 4 × 300 = 1650 is still past the hard limit: the newest four are cut, oldest first, by what is too much.
    { kind: 'hard_trim', chunkId: 'b6', tokens: 20 },
    { kind: 'hard_trim', chunkId: 'b7', tokens: 20 },
    { kind: 'hard_trim', chunkId: 'b8', tokens: 20 },
    { kind: 'hard_trim', chunkId: 'b9', tokens: 190 },
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

test('CRITICAL chunks are never in a plan, however far over the limit; EPHEMERAL ones only past the hard limit', () => {
  const chunks = [chunk('c1', 'CRITICAL', 10_000), chunk('e1', 'EPHEMERAL', 10_000), chunk('c2', 'CRITICAL', 5)];
  assert.deepEqual(planCompaction(chunks, { soft: 10, hard: 100 }), [{ kind: 'hard_trim', chunkId: 'e1', tokens: 20 }]);
  assert.deepEqual(planCompaction(chunks, { soft: 10, hard: 30_000 }), [], 'under the hard limit EPHEMERAL chunks wait for their session to end');
  assert.deepEqual(planCompaction([chunk('c1', 'CRITICAL', 10_000)], { soft: 10, hard: 100 }), []);
});

test('OTHERS chunks are shortened by the built-in compression after the drops and before any summary, lowest priority first', () => {
  const chunks = [chunk('crit', 'CRITICAL', 100), chunk('o-hi', 'OTHERS', 400, 90), chunk('comp', 'COMPRESSIBLE', 400, 10), chunk('o-lo', 'OTHERS', 400, 20), chunk('d', 'DISPOSABLE', 50)];
  // 1350 tokens; drop d → 1300; o-lo → 1000; o-hi → 700 ≤ 800: no summary, no model call.
  assert.deepEqual(planCompaction(chunks, { soft: 800, hard: 5000 }), [
    { kind: 'drop', chunkIds: ['d'] },
    { kind: 'builtin_compress', chunkId: 'o-lo' },
    { kind: 'builtin_compress', chunkId: 'o-hi' },
  ]);
  // Further down, the COMPRESSIBLE chunk is summarized after them.
  assert.deepEqual(
    planCompaction(chunks, { soft: 500, hard: 5000 }).map((s) => s.kind),
    ['drop', 'builtin_compress', 'builtin_compress', 'summarize'],
  );
});

test('without a summarizer nothing is summarized; past the hard limit every non-CRITICAL chunk may be trimmed, lowest priority first, until under it', () => {
  const chunks = [
    chunk('crit', 'CRITICAL', 500),
    chunk('b1', 'BATCH_COMPRESSIBLE', 400, 30),
    chunk('comp', 'COMPRESSIBLE', 400, 80),
    chunk('b2', 'BATCH_COMPRESSIBLE', 400, 60),
    ...['n1', 'n2', 'n3', 'n4'].map((id) => chunk(id, 'BATCH_COMPRESSIBLE', 10, 60)),
  ];
  // 1740 tokens, soft 600, hard 1200: without summaries, 540 too many; b1 is cut to 20 (380 less), then b2 by the last 160.
  const steps = planCompaction(chunks, { soft: 600, hard: 1200 }, { summarize: false });
  assert.deepEqual(steps, [
    { kind: 'hard_trim', chunkId: 'b1', tokens: 20 },
    { kind: 'hard_trim', chunkId: 'b2', tokens: 240 },
  ]);
  assert.equal(projectTokens(chunks, steps), 1200);
  // Under the hard limit without a summarizer: nothing can be done.
  assert.deepEqual(planCompaction(chunks, { soft: 600, hard: 2000 }, { summarize: false }), []);
  // With one, the summaries come first and reach the soft limit: no trim.
  assert.ok(!planCompaction(chunks, { soft: 600, hard: 1200 }).some((s) => s.kind === 'hard_trim'));
});

test('compressText keeps the beginning and the end within the tokens allowed, deterministically, without a model', () => {
  const text = Array.from({ length: 200 }, (_, i) => `Line ${i + 1}: the tool returned row ${i + 1} of the report.`).join('\n');
  const tokens = countTextTokens(text);
  for (const max of [20, 60, 300]) {
    const short = compressText(text, max, countTextTokens);
    assert.ok(countTextTokens(short) <= max, `${countTextTokens(short)} ≤ ${max}`);
    assert.match(short, /tokens cut by built-in compaction/);
    assert.equal(short, compressText(text, max, countTextTokens));
  }
  const short = compressText(text, 300, countTextTokens);
  assert.ok(short.startsWith('Line 1: the tool returned row 1'), 'the beginning is kept');
  assert.ok(short.endsWith('row 200 of the report.'), 'the end is kept');
  assert.equal(compressText(text, tokens, countTextTokens), text, 'a text that fits is unchanged');
});

test('the plan is deterministic', () => {
  const chunks = RETENTION_CLASSES.flatMap((r, i) => [chunk(`${r}-a`, r, 100 + i, i * 10), chunk(`${r}-b`, r, 300, i * 10)]);
  const limits = { soft: 300, hard: 1000 };
  assert.deepEqual(
    planCompaction(chunks, limits),
    planCompaction(
      chunks.map((c) => ({ ...c })),
      limits,
    ),
  );
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
      const trimmed = new Set(steps.flatMap((s) => (s.kind === 'hard_trim' ? [s.chunkId] : [])));
      for (const id of ids) {
        const r = byId.get(id)?.retention;
        assert.ok(r !== undefined && r !== 'CRITICAL' && (r !== 'EPHEMERAL' || trimmed.has(id)), `${id} (${String(r)}) is in the plan`);
      }
      if (trimmed.size > 0)
        assert.ok(
          projectTokens(
            chunks,
            steps.filter((s) => s.kind !== 'hard_trim'),
          ) > hard,
          'trimmed only past the hard limit',
        );
      const stage = { drop: 0, builtin_compress: 1, summarize: 2, batch_summarize: 3, hard_trim: 4 } as const;
      assert.deepEqual(
        steps.map((s) => stage[s.kind]),
        steps.map((s) => stage[s.kind]).sort(),
      );
      for (const s of steps) {
        if (s.kind === 'drop') assert.ok(s.chunkIds.every((id) => byId.get(id)?.retention === 'DISPOSABLE'));
        if (s.kind === 'builtin_compress') assert.equal(byId.get(s.chunkId)?.retention, 'OTHERS');
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
      const compressible = chunks.filter((c) => c.retention === 'COMPRESSIBLE' || c.retention === 'OTHERS');
      const best = total(fixed) + compressible.reduce((n, c) => n + Math.min(c.tokens, projectedSummaryTokens(c.tokens)), 0);
      fc.pre(best <= soft && disposable.length + compressible.length > 0);
      assert.ok(projectTokens(chunks, planCompaction(chunks, { soft, hard: 100_000 })) <= soft);
    }),
    { numRuns: 300 },
  );
});

test('long text is counted in pieces, within 1% of counting it whole (BPE on one 100 kB pre-token would block the worker for seconds)', async () => {
  const { countTextTokens } = await import('../../src/memory/tokens');
  const { countTokens } = await import('gpt-tokenizer');
  const words = ['alpha', 'beta', 'gamma', '{"a": 1}', 'the', 'quick', 'brown', 'fox', '42.5', 'naïve', '東京'];
  const text = Array.from({ length: 12_000 }, (_, i) => words[(i * 7) % words.length]).join(' ');
  const whole = countTokens(text);
  assert.ok(Math.abs(countTextTokens(text) - whole) <= whole * 0.01, `${countTextTokens(text)} vs ${whole}`);
  assert.equal(countTextTokens('short text'), countTokens('short text'));
  assert.ok(countTextTokens('x'.repeat(100_000)) > 0);
});
