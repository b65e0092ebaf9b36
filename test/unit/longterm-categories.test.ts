/**
 * Questions asking for a kind of thing (src/longterm/categories.ts) and what search does with their
 * instances: the best instance a record holds (Bm25Index, the PostgreSQL store's choice of terms),
 * and a turn naming another instance is no near-duplicate (retrieval.ts).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { categoriesAsked, categoryTerms } from '../../src/longterm/categories';
import type { SearchHit } from '../../src/longterm/contract';
import { withoutNearDuplicates } from '../../src/longterm/retrieval';
import { analyze } from '../../src/longterm/text';
import { Bm25Index } from '../../src/store/longterm/bm25';
import { rarestWithin } from '../../src/store/longterm/postgres-store';

test('categoriesAsked: plural category nouns, "what kind of", "where has … been"; not a question about one thing', () => {
  assert.deepEqual(categoriesAsked('What pets does Maya have?'), ['pets']);
  assert.deepEqual(categoriesAsked('Which animals live with Maya?'), ['pets', 'wildlife']);
  assert.deepEqual(categoriesAsked('What instruments does Maya play?'), ['instruments']);
  assert.ok(categoriesAsked('What hobbies has Maya picked up?').includes('hobbies'));
  assert.ok(categoriesAsked('What does Maya like to do in her free time?').includes('hobbies'));
  assert.ok(categoriesAsked('What kind of music does Maya make?').includes('music'));
  assert.ok(categoriesAsked('Where has Maya traveled?').includes('travel'));
  assert.ok(categoriesAsked('Where has Maya been this year?').includes('travel'));
  assert.ok(categoriesAsked("What's new in Maya's family?").includes('family'));
  assert.ok(categoriesAsked('What news has Maya shared about relatives?').includes('family'));
  // One thing asked about, or a question with no kind in it: nothing.
  for (const q of [
    "What is the name of Maya's kitten?",
    'When did Maya adopt a rabbit?',
    'What did Maya make in the pottery class?',
    'What was the highlight of the trip to Lisbon?',
    'Where does Maya live?',
    'When did Maya go to Kyoto?',
    'When did Maya travel to Japan?',
    "When did Maya's family move?",
    'Would Maya enjoy it?',
  ]) {
    assert.deepEqual(categoriesAsked(q), [], q);
  }
});

test('categoriesAsked: a field of work only in an inference question', () => {
  assert.ok(categoriesAsked('Would Maya enjoy working as a vet?').includes('animal care'));
  assert.ok(categoriesAsked('Might Maya consider a career in education?').includes('teaching'));
  assert.ok(categoriesAsked('Could Maya become a software developer?').includes('tech'));
  assert.ok(categoriesAsked('Would Maya care about environmental causes?').includes('environment'));
  assert.deepEqual(categoriesAsked('When did Maya take the vet to see the dog?'), []);
  assert.deepEqual(categoriesAsked('What did the teacher say?'), []);
});

test("categoryTerms: stemmed instances, without the question's own terms, no generic word of a phrase", () => {
  const pets = new Set(categoryTerms('What pets does Maya have?'));
  for (const word of ['kitten', 'puppy', 'rabbit', 'hamster', 'parrot', 'tortoise'])
    assert.ok(
      analyze(word).every((t) => pets.has(t)),
      word,
    );
  assert.ok(!pets.has('pet'), 'the question already asks for "pets"');
  const travel = new Set(categoryTerms('Where has Maya traveled?'));
  for (const word of ['Lisbon', 'Iceland', 'Kyoto', 'canyon', 'zealand', 'holiday', 'vacation'])
    assert.ok(
      analyze(word).every((t) => travel.has(t)),
      word,
    );
  // "New Zealand", "Grand Canyon", "South Africa": the names, not "new", "grand" or "south".
  for (const word of ['new', 'grand', 'south', 'city']) assert.ok(!travel.has(analyze(word)[0] as string), word);
  assert.deepEqual(categoryTerms('When did Maya adopt a kitten?'), []);
  // Every term is as the index analyzes text: searching them finds what a turn said.
  for (const t of categoryTerms('What activities does Maya do?')) assert.deepEqual(analyze(t).length <= 1, true, t);
});

test("Bm25Index: of anyOf, a document counts its best term only, added to its terms' sum", () => {
  const index = new Bm25Index();
  index.set('caption', 'a tent, a guitar, a kayak and a canvas by the lake');
  index.set('one', 'I took my first pottery class');
  index.set('none', 'the weather was nice by the lake');
  for (let i = 0; i < 20; i++) index.set(`filler${i}`, `small talk number ${i} about work`);
  const anyOf = analyze('tent guitar kayak canvas pottery');
  // Summed, the caption naming four outranks the turn naming one; by the best term, it does not.
  const summed = index.search(anyOf, 10).map((h) => h.id);
  assert.equal(summed[0], 'caption');
  const best = index.search([], 10, anyOf);
  assert.deepEqual(best.map((h) => h.id).sort(), ['caption', 'one']);
  assert.equal(best[0]?.id, 'one', 'shorter, and each term is as rare');
  // A term of both lists is summed, and the group adds one term's weight at most.
  const both = index.search(analyze('lake'), 10, anyOf);
  assert.equal(both[0]?.id, 'caption');
  assert.ok(both.some((h) => h.id === 'none'));
  const caption = both.find((h) => h.id === 'caption')?.score ?? 0;
  const lakeOnly = index.search(analyze('lake'), 10).find((h) => h.id === 'caption')?.score ?? 0;
  const tentOnly = index.search(analyze('tent'), 10).find((h) => h.id === 'caption')?.score ?? 0;
  assert.ok(Math.abs(caption - (lakeOnly + tentOnly)) < 1e-9);
});

test('rarestWithin: the rarest terms while their records stay within the budget, always the rarest', () => {
  const terms = [
    { term: 'paint', df: 2700 },
    { term: 'pottery', df: 18 },
    { term: 'kayak', df: 54 },
    { term: 'absent', df: 0 },
    { term: 'guitar', df: 180 },
    { term: 'tent', df: 54 },
  ];
  assert.deepEqual(rarestWithin(terms, 320), ['pottery', 'kayak', 'tent', 'guitar']);
  assert.deepEqual(rarestWithin(terms, 100), ['pottery', 'kayak']);
  assert.deepEqual(rarestWithin([{ term: 'paint', df: 2700 }], 320), ['paint']);
  assert.deepEqual(rarestWithin([{ term: 'absent', df: 0 }], 320), []);
});

const message = (id: string, text: string, score: number): SearchHit => ({ kind: 'message', id, text, score, at: '2024-01-01T00:00:00.000Z', source: { sessionId: 's', messageIds: [id] } });

test('withoutNearDuplicates: a turn naming another instance asked for is no duplicate', () => {
  const hits = [
    message('kitten', 'Maya: We adopted a kitten this week! Meet Pepper. [shares a photo: a kitten curled up on a blanket]', 0.9),
    message('rabbit', 'Maya: We adopted a rabbit this week! Meet Clover. [shares a photo: a rabbit curled up on a blanket]', 0.8),
    message('again', 'Maya: We adopted a kitten last week! Meet Pepper. [shares a photo: a kitten curled up on a blanket]', 0.7),
    message('other', 'Maya: The weather has been lovely.', 0.6),
  ];
  assert.deepEqual(
    withoutNearDuplicates(hits, 3).map((h) => h.id),
    ['kitten', 'other', 'rabbit'],
  );
  const asked = new Set(categoryTerms('What pets does Maya have?'));
  assert.deepEqual(
    withoutNearDuplicates(hits, 3, undefined, asked).map((h) => h.id),
    ['kitten', 'rabbit', 'other'],
  );
});
