import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import fc from 'fast-check';
import { CompactRanks } from '../../src/memory/compact-ranks';
import { countTextTokens, ranksCompacted } from '../../src/memory/tokens';

test('property: CompactRanks answers as the Map it was made from, for keys it holds and keys it does not', () => {
  fc.assert(
    fc.property(fc.uniqueArray(fc.string({ unit: 'grapheme-composite', maxLength: 12 }), { maxLength: 300 }), fc.array(fc.string({ maxLength: 12 }), { maxLength: 50 }), (keys, others) => {
      const map = new Map(keys.map((key, i) => [key, i * 7] as const));
      const compact = new CompactRanks(map);
      assert.equal(compact.size, map.size);
      for (const key of [...keys, ...others]) assert.equal(compact.get(key), map.get(key), JSON.stringify(key));
    }),
    { numRuns: 300 },
  );
});

test('CompactRanks refuses a value that is not a rank', () => {
  assert.throws(() => new CompactRanks(new Map([['a', -1]])), /not a rank/);
  assert.throws(() => new CompactRanks(new Map([['a', 1.5]])), /not a rank/);
});

test("the tokenizer's ranks are moved off the heap, and it counts and encodes as gpt-tokenizer does", () => {
  // gpt-tokenizer's own instance, before the counter first loads it (this file's process is its own).
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- the same module instance the counter loads
  const stock = require('gpt-tokenizer') as typeof import('gpt-tokenizer');
  const root = path.join(__dirname, '..', '..');
  const texts = [
    ...readdirSync(path.join(root, 'docs'))
      .filter((f) => f.endsWith('.md'))
      .flatMap((f) => {
        const text = readFileSync(path.join(root, 'docs', f), 'utf8');
        return Array.from({ length: Math.ceil(text.length / 1000) }, (_, i) => text.slice(i * 1000, i * 1000 + 1000));
      }),
    '東京で寿司を食べました。🍣🎉 مرحبا بالعالم — naïve café, Ünïcödé',
    'aGVsbG8gd29ybGQgdGhpcyBpcyBiYXNlNjQ=='.repeat(20),
    ' \t\n  '.repeat(40),
    '{"tool": "notes_write", "args": {"key": "k", "value": [1, 2.5, null, true]}}',
  ];
  const plain = { disallowedSpecial: new Set<string>() };
  const expected = texts.map((t) => ({ count: stock.countTokens(t, plain), tokens: stock.encode(t, plain) }));
  stock.clearMergeCache();
  assert.equal(ranksCompacted(), false);

  const counted = texts.map((t) => countTextTokens(t));
  assert.equal(ranksCompacted(), true, 'gpt-tokenizer is as this code expects (a new version may have moved its tables)');
  stock.clearMergeCache(); // each text merged again, now with the compact ranks
  texts.forEach((t, i) => {
    assert.equal(stock.countTokens(t, plain), expected[i]?.count, t.slice(0, 40));
    assert.deepEqual(stock.encode(t, plain), expected[i]?.tokens, t.slice(0, 40));
    assert.equal(counted[i], expected[i]?.count, t.slice(0, 40));
  });
});
