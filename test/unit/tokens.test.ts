import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { countTextTokens, MERGE_CACHE_WORDS } from '../../src/memory/tokens';

test("the tokenizer's cache of merged words stays bounded after varied text", () => {
  for (let i = 0; i < MERGE_CACHE_WORDS * 2; i++) countTextTokens(` ${randomBytes(6).toString('hex').replace(/[0-9]/g, 'q')}`);
  // gpt-tokenizer's own instance (its default export): the bound is its setting, the size what it holds.
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- the same module instance the counter loaded
  const core = (require('gpt-tokenizer') as { default: { bytePairEncodingCoreProcessor: { mergeCacheSize: number; mergeCache?: Map<string, unknown> } } }).default.bytePairEncodingCoreProcessor;
  assert.equal(core.mergeCacheSize, MERGE_CACHE_WORDS);
  assert.ok(core.mergeCache && core.mergeCache.size > 0 && core.mergeCache.size <= MERGE_CACHE_WORDS, `${core.mergeCache?.size} words cached`);
  assert.equal(countTextTokens('hello world'), 2, 'counts are unchanged');
});
