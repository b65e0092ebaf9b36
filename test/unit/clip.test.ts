import assert from 'node:assert/strict';
import test from 'node:test';
import { clip, oneLine } from '../../src/text/clip';

test('clip keeps text that fits and cuts longer text to max units ending in "…"', () => {
  assert.equal(clip('abcde', 5), 'abcde');
  assert.equal(clip('abcdef', 5), 'abcd…');
  assert.equal(clip('', 3), '');
});

test('oneLine flattens whitespace, trims, then clips', () => {
  assert.equal(oneLine('  a\n\tb   c  ', 10), 'a b c');
  assert.equal(oneLine('one\ntwo three four', 10), 'one two t…');
});
