/** The pure modules of long-term memory: text analysis, fact decisions, validity, RRF. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import type { Fact } from '../../src/longterm/contract';
import { chainOf, decide, isAliasPredicate, isMultiValued, predicateKey, strengthened, validAt } from '../../src/longterm/facts';
import { fuse } from '../../src/longterm/fusion';
import { analyze, fold, namePhrases, normalizeName } from '../../src/longterm/text';
import { B, Bm25Index, bm25Idf, K1 } from '../../src/store/longterm/bm25';
import { cosine, nearestOf, vectorFromBase64, vectorToBase64 } from '../../src/longterm/vectors';

const fact = (over: Partial<Fact>): Fact => ({
  id: 'f1',
  userId: 'u',
  subjectId: 'e1',
  subject: 'user',
  predicate: 'lives in',
  objectId: null,
  object: 'Lisbon',
  text: 't',
  validFrom: '2020-01-01T00:00:00.000Z',
  validTo: null,
  recordedAt: '2020-01-01T00:00:00.000Z',
  confidence: 0.6,
  mentions: 1,
  supersedes: null,
  supersededBy: null,
  provenance: { messageIds: [] },
  ...over,
});

test('analyze: folds case and accents, drops function words, stems', () => {
  assert.deepEqual(analyze('Zoë LIVED in the cities'), ['zoe', 'live', 'citi']);
  assert.deepEqual(analyze('running runs'), ['run', 'run']);
  assert.deepEqual(analyze('order 66 of 2023'), ['order', '66', '2023']);
  assert.equal(normalizeName('  Lives_In '), 'lives in');
});

test('namePhrases: runs of up to three words, split at stopwords and short words, each once, bounded', () => {
  assert.deepEqual(namePhrases('Where is Jon Smith? Ask Jo, Norah!'), ['jon', 'jon smith', 'jon smith ask', 'smith', 'smith ask', 'ask', 'norah']);
  assert.deepEqual(namePhrases('Zoë-Ann Müller Schmidt Berg', 3), [
    'zoe',
    'zoe ann',
    'zoe ann muller',
    'ann',
    'ann muller',
    'ann muller schmidt',
    'muller',
    'muller schmidt',
    'muller schmidt berg',
    'schmidt',
    'schmidt berg',
    'berg',
  ]);
  assert.deepEqual(namePhrases('the of and to'), []);
  assert.equal(namePhrases('alpha beta gamma delta '.repeat(100)).length, 12, 'a repeated phrase counts once');
  assert.equal(namePhrases(Array.from({ length: 500 }, (_, i) => `word${i}x`).join(' ')).length, 64);
});

test('analyze is idempotent on its own output words and never yields empty terms (property)', () => {
  fc.assert(
    fc.property(fc.string({ maxLength: 200 }), (text) => {
      const terms = analyze(text);
      assert.ok(terms.every((t) => t.length > 0 && t === t.toLowerCase()));
      assert.deepEqual(analyze(terms.join(' ')).length <= terms.length, true);
    }),
  );
});

test('fold: ASCII text, folded on its fast path, is what NFKD and mark removal give (property)', () => {
  const slow = (text: string) =>
    text
      .normalize('NFKD')
      .replace(/\p{M}+/gu, '')
      .toLowerCase();
  fc.assert(fc.property(fc.string({ unit: 'binary-ascii', maxLength: 200 }), (text) => assert.equal(fold(text), slow(text))));
  fc.assert(fc.property(fc.string({ unit: 'grapheme', maxLength: 60 }), (text) => assert.equal(fold(text), slow(text))));
  assert.equal(fold('Zoë ÉCOLE ﬁne'), 'zoe ecole fine');
});

test('predicates: spelling, tense and negation', () => {
  assert.deepEqual(predicateKey('Lives_In'), predicateKey('lived in'));
  assert.equal(predicateKey('does not like').negated, true);
  assert.equal(predicateKey('dislikes').base, predicateKey('likes').base);
  assert.equal(isMultiValued(predicateKey('likes')), true);
  assert.equal(isMultiValued(predicateKey('lives in')), false);
  assert.equal(isMultiValued(predicateKey('is')), true, 'a bare copula says little: never a contradiction');
  assert.equal(isAliasPredicate('goes by'), true);
  assert.equal(isAliasPredicate('is also known as'), true);
  assert.equal(isAliasPredicate('works at'), false);
  // Kept once computed (a recording compares with every open fact of its subject): the same key again, not to be changed.
  assert.equal(predicateKey('does not like'), predicateKey('does not like'));
  assert.ok(Object.isFrozen(predicateKey('does not like')));
});

test('decide: duplicate, contradiction, late older statement, multi-valued add', () => {
  const lisbon = fact({});
  assert.equal(decide([lisbon], { predicate: 'Lives In', object: 'lisbon.', validFrom: '2024-01-01T00:00:00Z' }).action, 'strengthen');
  assert.deepEqual(decide([lisbon], { predicate: 'lives in', object: 'Porto', validFrom: '2024-01-01T00:00:00Z' }), { action: 'supersede', existing: lisbon });
  assert.deepEqual(decide([lisbon], { predicate: 'lived in', object: 'Faro', validFrom: '2010-01-01T00:00:00Z' }), { action: 'precede', existing: lisbon });
  const jazz = fact({ predicate: 'likes', object: 'jazz' });
  assert.equal(decide([jazz], { predicate: 'likes', object: 'rock', validFrom: '2024-01-01T00:00:00Z' }).action, 'add');
  assert.equal(decide([jazz], { predicate: 'dislikes', object: 'jazz', validFrom: '2024-01-01T00:00:00Z' }).action, 'supersede');
  assert.equal(decide([], { predicate: 'likes', object: 'jazz', validFrom: '2024-01-01T00:00:00Z' }).action, 'add');
});

test('decide never strengthens a different object and never contradicts an identical statement (property)', () => {
  const word = fc.stringMatching(/^[a-z]{3,10}$/);
  fc.assert(
    fc.property(word, word, fc.constantFrom('lives in', 'likes', 'works at', 'owns', 'is'), (a, b, predicate) => {
      const known = fact({ predicate, object: a });
      const same = decide([known], { predicate, object: a, validFrom: '2030-01-01T00:00:00Z' });
      assert.equal(same.action, 'strengthen');
      const other = decide([known], { predicate, object: b, validFrom: '2030-01-01T00:00:00Z' });
      if (normalizeName(a) !== normalizeName(b)) assert.notEqual(other.action, 'strengthen');
    }),
  );
});

test('validity, strengthening and chains', () => {
  const f = fact({ validFrom: '2020-01-01T00:00:00Z', validTo: '2021-01-01T00:00:00Z' });
  assert.equal(validAt(f, '2020-06-01T00:00:00Z'), true);
  assert.equal(validAt(f, '2021-01-01T00:00:00Z'), false, 'the end is exclusive');
  assert.equal(validAt(f, '2019-12-31T00:00:00Z'), false);
  fc.assert(fc.property(fc.double({ min: 0, max: 1, noNaN: true }), (c) => strengthened(c) >= c && strengthened(c) <= 1));
  const a = fact({ id: 'a', supersededBy: 'b' });
  const b = fact({ id: 'b', supersedes: 'a', supersededBy: 'c' });
  const c = fact({ id: 'c', supersedes: 'b', supersededBy: 'a' }); // a cycle must not loop
  const byId = (id: string) => ({ a, b, c })[id as 'a' | 'b' | 'c'];
  assert.deepEqual(
    chainOf(b, byId).map((x) => x.id),
    ['a', 'b', 'c'],
  );
});

test('fuse: reciprocal rank fusion', () => {
  const fused = fuse([{ ids: ['x', 'y', 'z'] }, { ids: ['y', 'x'] }, { ids: ['z'], weight: 0.1 }]);
  assert.deepEqual(
    fused.map((f) => f.id),
    ['x', 'y', 'z'],
  );
  assert.ok(Math.abs((fused[0]?.score ?? 0) - (1 / 61 + 1 / 62)) < 1e-12);
});

test('fuse: an item ranked first everywhere wins; scores are sorted and every id appears once (property)', () => {
  const ids = fc.uniqueArray(fc.constantFrom('a', 'b', 'c', 'd', 'e', 'f'), { maxLength: 6 });
  fc.assert(
    fc.property(fc.array(ids, { minLength: 1, maxLength: 5 }), (lists) => {
      const fused = fuse(lists.map((l) => ({ ids: ['top', ...l] })));
      assert.equal(fused[0]?.id, 'top');
      assert.equal(new Set(fused.map((f) => f.id)).size, fused.length);
      for (let i = 1; i < fused.length; i++) assert.ok((fused[i - 1]?.score ?? 0) >= (fused[i]?.score ?? 0));
    }),
  );
});

test('Bm25Index: rarer terms weigh more, a replaced text is no longer found, limit keeps the best', () => {
  const index = new Bm25Index();
  index.set('a', 'the cat sat on the mat');
  index.set('b', 'the cat chased a zebra');
  index.set('c', 'a dog and a cat');
  assert.deepEqual(
    index.search(analyze('cat zebra'), 1).map((h) => h.id),
    ['b'],
  );
  index.set('b', 'nothing here');
  assert.deepEqual(index.search(analyze('zebra'), 5), []);
  assert.equal(index.search(analyze('cat'), 10).length, 2);
});

test('Bm25Index: a search leaves no score behind for the next one; many documents grow the arrays; equal scores newest first', () => {
  const index = new Bm25Index();
  for (let i = 0; i < 1000; i++) index.set(`d${i}`, i % 10 === 0 ? 'common rare' : 'common filler words');
  const first = index.search(analyze('rare'), 5).map((h) => h.id);
  assert.deepEqual(first, ['d990', 'd980', 'd970', 'd960', 'd950'], 'ties: the newer document first');
  index.search(analyze('common filler'), 50);
  assert.deepEqual(
    index.search(analyze('rare'), 5).map((h) => h.id),
    first,
    'the same answer after another query',
  );
  index.remove('d990');
  assert.equal(index.search(analyze('rare'), 200).length, 99);
  assert.equal(index.search(analyze('common'), 2000).length, 999);
});

test('Bm25Index scores as BM25 written out, terms repeated in a document counted (property)', () => {
  const word = fc.constantFrom('apple', 'river', 'stone', 'cloud', 'ember', 'frost');
  fc.assert(
    fc.property(fc.array(fc.array(word, { minLength: 1, maxLength: 12 }), { minLength: 1, maxLength: 30 }), fc.uniqueArray(word, { minLength: 1, maxLength: 3 }), (docs, query) => {
      const index = new Bm25Index();
      docs.forEach((words, i) => index.set(`d${i}`, words.join(' ')));
      const terms = docs.map((words) => analyze(words.join(' ')));
      const avgdl = terms.reduce((sum, t) => sum + t.length, 0) / terms.length;
      const asked = analyze(query.join(' '));
      const expected = terms
        .map((t, i) => {
          let score = 0;
          for (const q of asked) {
            const tf = t.filter((x) => x === q).length;
            if (tf === 0) continue;
            const df = terms.filter((d) => d.includes(q)).length;
            score += (bm25Idf(terms.length, df) * tf * (K1 + 1)) / (tf + K1 * (1 - B + (B * t.length) / avgdl));
          }
          return { id: `d${i}`, score };
        })
        .filter((h) => h.score > 0);
      const found = new Map(index.search(asked, docs.length).map((h) => [h.id, h.score]));
      assert.equal(found.size, expected.length);
      for (const { id, score } of expected) assert.ok(Math.abs((found.get(id) ?? NaN) - score) < 1e-9, `${id}: ${found.get(id)} against ${score}`);
    }),
  );
});

test('nearestOf keeps the best while scanning: what scoring all and sorting gives (property)', () => {
  fc.assert(
    fc.property(
      fc.array(fc.tuple(fc.integer({ min: 0, max: 30 }), fc.array(fc.integer({ min: -3, max: 3 }), { minLength: 3, maxLength: 3 })), { maxLength: 60 }),
      fc.array(fc.integer({ min: -3, max: 3 }), { minLength: 3, maxLength: 3 }),
      fc.integer({ min: 0, max: 12 }),
      (rows, q, limit) => {
        // Small integer vectors: many equal scores, so the ties' order (by id) is exercised.
        const vectors = new Map(rows.map(([id, v]) => [`r${id}`, Float32Array.from(v)] as [string, Float32Array]));
        const query = Float32Array.from(q);
        const all = [...vectors].map(([id, v]) => ({ id, score: cosine(query, v) }));
        const sorted = all.sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)).slice(0, limit);
        assert.deepEqual(nearestOf(query, vectors, limit), sorted);
      },
    ),
  );
});

test('vectors are stored as little-endian float32 bytes, and read back exactly (property)', () => {
  // The bytes of 1.0 and -2.5 as float32, little-endian: what files written before hold too.
  assert.equal(vectorToBase64(Float32Array.from([1, -2.5])), Buffer.from([0, 0, 0x80, 0x3f, 0, 0, 0x20, 0xc0]).toString('base64'));
  // A view into a larger buffer stores its own floats only.
  const big = Float32Array.from([9, 1, -2.5, 9]);
  assert.equal(vectorToBase64(big.subarray(1, 3)), vectorToBase64(Float32Array.from([1, -2.5])));
  fc.assert(
    fc.property(fc.array(fc.float({ noNaN: true }), { maxLength: 50 }), (values) => {
      const v = Float32Array.from(values);
      assert.deepEqual(vectorFromBase64(vectorToBase64(v)), v);
    }),
  );
});
