/**
 * The one conformance suite every LongTermStore backend passes unchanged, run through the
 * LongTermService (the rules live there; the store must answer what they need): supersede with
 * history and asOf, duplicates merged, multi-valued predicates, episodes, summaries, messages by
 * id, retrieval quality fixtures, cross-user isolation, the audit. Each backend's test file
 * supplies a fresh store per test; user ids carry a random tag so shared databases never mix.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, test } from 'node:test';
import { predicateKey } from '../../src/longterm/facts';
import type { StoredMessage, WriteMeta } from '../../src/longterm/contract';
import { LongTermService } from '../../src/longterm/service';
import { redactSecrets } from '../../src/memory/observers';
import type { LongTermRecord, LongTermStore } from '../../src/store/longterm/store';
import { normalized } from '../../src/longterm/vectors';

export interface LongTermTarget {
  store: LongTermStore;
  /** Another instance on the same data (a second process); only for persistent backends. */
  reopen?: () => Promise<LongTermStore>;
  /** Ends every instance opened and removes the data. */
  cleanup: () => Promise<void>;
}

const agent: WriteMeta = { origin: 'agent', reason: 'conformance' };
const person: WriteMeta = { origin: 'person', reason: 'stated by the user' };
const iso = (date: string) => new Date(date).toISOString();

/** Background conversation that a planted answer must beat. */
const NOISE = [
  'Can you help me plan a trip to the mountains next summer?',
  'I need a recipe for a vegetarian lasagna with spinach.',
  'What is the difference between a mortgage and a loan?',
  'The weather today is rainy and cold, I stayed inside.',
  'Remind me to call the dentist about my appointment.',
  'My laptop keeps freezing when I open too many browser tabs.',
  'Which running shoes are good for flat feet?',
  'We watched a documentary about octopuses last night.',
  'How do I convert Celsius to Fahrenheit quickly?',
  'Our team meeting moved to Thursday afternoon.',
  'I am reading a novel about a lighthouse keeper.',
  'Please summarize the article about renewable energy.',
];

export function longTermConformance(name: string, make: () => Promise<LongTermTarget>): void {
  describe(`long-term store conformance: ${name}`, () => {
    const tag = () => randomBytes(4).toString('hex');
    async function withService<T>(fn: (svc: LongTermService, user: string, target: LongTermTarget) => Promise<T>, now?: () => Date): Promise<T> {
      const target = await make();
      const svc = new LongTermService({ store: target.store, observers: [redactSecrets], ...(now ? { now } : {}) });
      try {
        return await fn(svc, `user_${tag()}`, target);
      } finally {
        await svc.flushReads();
        await target.cleanup();
      }
    }

    test('a contradiction supersedes the old fact: history kept, asOf answers the past', () =>
      withService(async (svc, user) => {
        const lisbon = await svc.recordFact(
          user,
          { subject: 'I', predicate: 'live in', object: 'Lisbon', text: 'The user lives in Lisbon', validFrom: iso('2021-03-01') },
          { messageIds: ['m1'] },
          agent,
        );
        assert.equal(lisbon.outcome, 'added');
        const porto = await svc.recordFact(
          user,
          { subject: 'user', predicate: 'lives in', object: 'Porto', text: 'The user moved to Porto', validFrom: iso('2024-06-01') },
          { messageIds: ['m2'] },
          agent,
        );
        assert.equal(porto.outcome, 'superseded');
        assert.equal(porto.previous?.id, lisbon.fact.id);
        assert.equal(porto.previous?.validTo, iso('2024-06-01'));
        assert.equal(porto.fact.supersedes, lisbon.fact.id);
        const old = await svc.getFact(user, lisbon.fact.id);
        assert.equal(old?.supersededBy, porto.fact.id, 'the old fact links to its successor, not deleted');
        assert.deepEqual(
          (await svc.factHistory(user, lisbon.fact.id)).map((f) => f.object),
          ['Lisbon', 'Porto'],
        );
        assert.deepEqual(
          (await svc.factHistory(user, porto.fact.id)).map((f) => f.id),
          [lisbon.fact.id, porto.fact.id],
        );
        assert.deepEqual(
          (await svc.listFacts(user, {})).map((f) => f.object),
          ['Porto'],
        );
        assert.deepEqual(
          (await svc.listFacts(user, { asOf: iso('2022-01-01') })).map((f) => f.object),
          ['Lisbon'],
        );
        assert.deepEqual((await svc.listFacts(user, { includeInvalid: true })).map((f) => f.object).sort(), ['Lisbon', 'Porto']);
        const past = await svc.search(user, { query: 'where do I live', kinds: ['fact'], asOf: iso('2022-01-01') });
        assert.deepEqual(
          past.map((h) => h.id),
          [lisbon.fact.id],
        );
        const now = await svc.search(user, { query: 'where do I live', kinds: ['fact'] });
        assert.equal(now[0]?.id, porto.fact.id, 'the valid fact ranks above the ended one');
        assert.match(now.find((h) => h.id === lisbon.fact.id)?.text ?? '', /until 2024-06-01/);
      }));

    test('a limited listing finds the newest facts that hold even when the newest recorded ones have ended', () =>
      withService(async (svc, user) => {
        await svc.recordFact(user, { subject: 'I', predicate: 'drink', object: 'tea', text: 'The user drinks tea', validFrom: iso('2024-01-01') }, { messageIds: [] }, agent);
        const lisbon = await svc.recordFact(user, { subject: 'I', predicate: 'live in', object: 'Lisbon', text: 'The user lives in Lisbon', validFrom: iso('2025-01-01') }, { messageIds: [] }, agent);
        // Older statements arriving late are recorded last, as ended: more of them than a first look reads.
        for (let year = 2010; year < 2020; year++) {
          const late = await svc.recordFact(
            user,
            { subject: 'I', predicate: 'live in', object: `Town ${year}`, text: `The user lived in Town ${year}`, validFrom: iso(`${year}-01-01`) },
            { messageIds: [] },
            agent,
          );
          assert.notEqual(late.fact.validTo, null, 'recorded as ended');
        }
        assert.deepEqual(
          (await svc.listFacts(user, { limit: 1 })).map((f) => f.id),
          [lisbon.fact.id],
        );
        assert.deepEqual(
          (await svc.listFacts(user, { limit: 5 })).map((f) => f.object),
          ['Lisbon', 'tea'],
        );
        assert.equal((await svc.listFacts(user, { limit: 5, includeInvalid: true })).length, 5);
      }));

    test('facts recorded within one millisecond list newest first in the order they were recorded', () =>
      withService(
        async (svc, user) => {
          const ids: string[] = [];
          for (const object of ['tea', 'jazz', 'chess', 'rain', 'maps', 'owls', 'figs', 'kites']) {
            ids.push((await svc.recordFact(user, { subject: 'I', predicate: 'like', object, text: `The user likes ${object}` }, { messageIds: [] }, agent)).fact.id);
          }
          assert.deepEqual(
            (await svc.listFacts(user, { limit: 8 })).map((f) => f.id),
            ids.reverse(),
          );
        },
        () => new Date('2026-01-01T00:00:00Z'),
      ));

    test("a subject's facts can be listed by predicate, its spelling and tense aside", () =>
      withService(async (svc, user, target) => {
        const lives = await svc.recordFact(user, { subject: 'I', predicate: 'lives in', object: 'Lyon', text: 'The user lives in Lyon' }, { messageIds: [] }, agent);
        const likes = await svc.recordFact(user, { subject: 'I', predicate: 'likes', object: 'tea', text: 'The user likes tea' }, { messageIds: [] }, agent);
        const dislikes = await svc.recordFact(user, { subject: 'I', predicate: 'does not like', object: 'coffee', text: 'The user does not like coffee' }, { messageIds: [] }, agent);
        const ana = await svc.recordFact(user, { subject: 'Ana', predicate: 'lived in', object: 'Porto', text: 'Ana lived in Porto' }, { messageIds: [] }, agent);
        const reader = target.store.reader(user);
        const ids = async (filter: Parameters<typeof reader.listFacts>[0]) => (await reader.listFacts(filter)).map((f) => f.id).sort();
        const base = (p: string) => predicateKey(p).base;
        assert.deepEqual(await ids({ subjectIds: [lives.fact.subjectId], predicateBase: base('Lived_In') }), [lives.fact.id]);
        assert.deepEqual(await ids({ subjectIds: [lives.fact.subjectId], openOnly: true, predicateBase: base('likes') }), [likes.fact.id, dislikes.fact.id].sort());
        assert.deepEqual(await ids({ subjectIds: [lives.fact.subjectId, ana.fact.subjectId], predicateBase: base('live in') }), [lives.fact.id, ana.fact.id].sort());
        assert.deepEqual(await ids({ subjectIds: [lives.fact.subjectId], predicateBase: base('works at') }), []);
      }));

    test('an older statement arriving late does not replace the newer fact', () =>
      withService(async (svc, user) => {
        const berlin = await svc.recordFact(user, { subject: 'Ana', predicate: 'works at', object: 'Siemens', text: 'Ana works at Siemens', validFrom: iso('2023-01-01') }, { messageIds: [] }, agent);
        const older = await svc.recordFact(user, { subject: 'Ana', predicate: 'works at', object: 'Bosch', text: 'Ana worked at Bosch', validFrom: iso('2019-01-01') }, { messageIds: [] }, agent);
        assert.equal(older.outcome, 'added');
        assert.equal(older.fact.validTo, iso('2023-01-01'));
        assert.deepEqual(
          (await svc.listFacts(user, {})).map((f) => f.object),
          ['Siemens'],
        );
        assert.deepEqual(
          (await svc.listFacts(user, { asOf: iso('2020-01-01') })).map((f) => f.object),
          ['Bosch'],
        );
        assert.deepEqual(
          (await svc.factHistory(user, berlin.fact.id)).map((f) => f.object),
          ['Bosch', 'Siemens'],
        );
      }));

    test('a duplicate strengthens the existing fact instead of adding a copy', () =>
      withService(async (svc, user) => {
        const first = await svc.recordFact(
          user,
          { subject: 'Maria', predicate: 'is allergic to', object: 'peanuts', text: 'Maria is allergic to peanuts' },
          { sessionId: 's1', messageIds: ['a'] },
          agent,
        );
        const again = await svc.recordFact(
          user,
          { subject: 'maria', predicate: 'Is_Allergic_To', object: 'Peanuts.', text: 'Maria has a peanut allergy' },
          { sessionId: 's2', messageIds: ['b'] },
          agent,
        );
        assert.equal(again.outcome, 'strengthened');
        assert.equal(again.fact.id, first.fact.id);
        assert.equal(again.fact.mentions, 2);
        assert.ok(again.fact.confidence > first.fact.confidence);
        assert.deepEqual(again.fact.provenance.messageIds, ['a', 'b']);
        assert.equal((await svc.listFacts(user, { includeInvalid: true })).length, 1);
      }));

    test('a multi-valued predicate keeps several objects; the opposite polarity supersedes', () =>
      withService(async (svc, user) => {
        await svc.recordFact(user, { subject: 'I', predicate: 'like', object: 'jazz', text: 'The user likes jazz' }, { messageIds: [] }, agent);
        await svc.recordFact(user, { subject: 'I', predicate: 'like', object: 'hiking', text: 'The user likes hiking' }, { messageIds: [] }, agent);
        assert.deepEqual((await svc.listFacts(user, {})).map((f) => f.object).sort(), ['hiking', 'jazz']);
        const no = await svc.recordFact(user, { subject: 'I', predicate: 'does not like', object: 'jazz', text: 'The user no longer likes jazz' }, { messageIds: [] }, agent);
        assert.equal(no.outcome, 'superseded');
        assert.equal(no.previous?.object, 'jazz');
        assert.deepEqual((await svc.listFacts(user, {})).map((f) => f.text).sort(), ['The user likes hiking', 'The user no longer likes jazz']);
      }));

    test('ending a fact keeps it (recorded, not erased); another user never sees it', () =>
      withService(async (svc, user) => {
        const { fact } = await svc.recordFact(user, { subject: 'I', predicate: 'own', object: 'a red bicycle', text: 'The user owns a red bicycle' }, { messageIds: [] }, person);
        const ended = await svc.endFact(user, fact.id, person);
        assert.ok(ended?.validTo);
        assert.equal((await svc.listFacts(user, {})).length, 0);
        assert.equal((await svc.listFacts(user, { includeInvalid: true }))[0]?.id, fact.id);
        const other = `${user}_other`;
        assert.equal(await svc.getFact(other, fact.id), null);
        assert.equal(await svc.endFact(other, fact.id, person), null);
        assert.deepEqual(await svc.factHistory(other, fact.id), []);
        const audit = await svc.auditLog(user, { kind: 'write' });
        assert.deepEqual(
          audit.map((a) => a.action),
          ['end_fact', 'record_fact'],
        );
        assert.equal(audit[0]?.origin, 'person');
        assert.equal(audit[0]?.reason, 'stated by the user');
      }));

    test('every read is audited beside the writes (who, what, which records), filtered by kind, action, run and time; another user sees none', () =>
      withService(async (svc, user) => {
        const { fact } = await svc.recordFact(user, { subject: 'I', predicate: 'live in', object: 'Lyon', text: 'The user lives in Lyon' }, { messageIds: [] }, agent);
        const reader = { origin: 'agent' as const, reason: 'recall at the start of the run', runId: 'run-a', sessionId: 'sess-a' };
        const hits = await svc.search(user, { query: 'where does the user live', kinds: ['fact'] }, reader);
        assert.equal(hits[0]?.id, fact.id);
        await svc.contextFor(user, 'Where do I live?', {}, { ...reader, runId: 'run-b' });
        await svc.getFact(user, fact.id); // no reader: recorded as the system's
        const all = await svc.auditLog(user);
        assert.deepEqual(
          all.map((e) => [e.kind, e.action]),
          [
            ['read', 'get_fact'],
            ['read', 'context'],
            ['read', 'search'],
            ['write', 'record_fact'],
          ],
        );
        const search = all[2];
        assert.equal(search?.origin, 'agent');
        assert.equal(search?.runId, 'run-a');
        assert.equal(search?.sessionId, 'sess-a');
        assert.deepEqual(search?.targetIds, [fact.id]);
        assert.equal(search?.details?.query, 'where does the user live');
        assert.equal(search?.details?.returned, 1);
        assert.equal(all[0]?.origin, 'system');
        assert.deepEqual(all[1]?.targetIds, [fact.id], 'the recalled facts are named');
        assert.deepEqual(
          (await svc.auditLog(user, { kind: 'read', runId: 'run-a' })).map((e) => e.action),
          ['search'],
        );
        assert.deepEqual(
          (await svc.auditLog(user, { action: 'context' })).map((e) => e.runId),
          ['run-b'],
        );
        assert.equal((await svc.auditLog(user, { kind: 'read', limit: 2 })).length, 2);
        // A limited listing is the newest of the whole one, filters included (the file store reads it from the end).
        for (const limit of [0, 1, 3, 10]) {
          assert.deepEqual(await svc.auditLog(user, { limit }), all.slice(0, limit), `limit ${limit}`);
          assert.deepEqual(await svc.auditLog(user, { kind: 'read', limit }), all.filter((e) => e.kind === 'read').slice(0, limit), `reads, limit ${limit}`);
        }
        const at = all[1]?.at as string;
        assert.ok((await svc.auditLog(user, { since: at })).every((e) => e.at >= at));
        assert.deepEqual(await svc.auditLog(user, { until: '2000-01-01T00:00:00.000Z' }), []);
        assert.deepEqual(await svc.auditLog(`${user}_other`), []);
      }));

    test('messages: searchable by text and id, given ids kept, a repeated id left as it is, secrets redacted', () =>
      withService(async (svc, user) => {
        const at = iso('2024-02-02');
        const messages: Omit<StoredMessage, 'userId'>[] = [
          ...NOISE.map((text, i) => ({ id: `noise-${i}`, sessionId: 'sess-a', role: 'user' as const, text, at })),
          { id: 'ext-42', sessionId: 'sess-b', role: 'user', text: 'My sister Clara adopted a greyhound called Pepper.', at },
          { id: 'ext-43', sessionId: 'sess-b', role: 'user', text: 'my token: ghp_abcdefghijklmnopqrstuvwxyz0123456789AB', at },
        ];
        assert.equal(await svc.addMessages(user, messages, agent), messages.length);
        assert.equal(await svc.addMessages(user, [{ id: 'ext-42', sessionId: 'sess-x', role: 'assistant', text: 'changed', at }], agent), 0);
        assert.equal((await svc.getMessage(user, 'ext-42'))?.text, 'My sister Clara adopted a greyhound called Pepper.');
        assert.doesNotMatch((await svc.getMessage(user, 'ext-43'))?.text ?? '', /ghp_/);
        const hits = await svc.search(user, { query: 'what dog did my sister adopt', kinds: ['message'], k: 3 });
        assert.equal(hits[0]?.id, 'ext-42');
        assert.deepEqual(hits[0]?.source, { sessionId: 'sess-b', messageIds: ['ext-42'] });
        assert.equal((await svc.search(`${user}_other`, { query: 'greyhound adopted sister' })).length, 0);
        // A conversation's messages, in order, for the passes over imported conversations.
        assert.deepEqual(
          (await svc.listMessages(user, 'sess-b', 10)).map((m) => m.id),
          ['ext-42', 'ext-43'],
        );
        assert.equal((await svc.listMessages(user, 'sess-a', 2)).length, 2);
        assert.deepEqual(await svc.listMessages(`${user}_other`, 'sess-b', 10), []);
        assert.ok((await svc.auditLog(user)).some((a) => a.action === 'add_messages' && a.notes.some((n) => n.startsWith('redact-secrets'))));
      }));

    test('entities and aliases: facts about the named entity and its neighbours come first', () =>
      withService(async (svc, user) => {
        for (const text of NOISE) await svc.recordFact(user, { subject: 'user', predicate: 'said', object: text.slice(0, 40), text }, { messageIds: [] }, agent);
        await svc.recordFact(user, { subject: 'Robert', predicate: 'goes by', object: 'Bob', text: 'Robert goes by Bob' }, { messageIds: [] }, agent);
        const works = await svc.recordFact(user, { subject: 'Robert', predicate: 'works at', object: 'Acme', text: 'Robert works at Acme' }, { messageIds: [] }, agent);
        const located = await svc.recordFact(user, { subject: 'Acme', predicate: 'is located in', object: 'Rotterdam', text: 'Acme has its office in Rotterdam' }, { messageIds: [] }, agent);
        const hits = await svc.search(user, { query: 'In which city does Bob work?', kinds: ['fact'], k: 4 });
        const ids = hits.map((h) => h.id);
        assert.ok(ids.includes(works.fact.id), 'the alias finds Robert');
        assert.ok(ids.includes(located.fact.id), 'the neighbour of Robert (Acme) is reached');
        const ctx = await svc.contextFor(user, 'what does Bob do', { maxFacts: 5 });
        assert.ok(ctx.facts.some((f) => f.id === works.fact.id));
        assert.ok(ctx.entities.some((e) => e.name === 'Robert' && e.aliases.includes('Bob')));
      }));

    test('a name spelt alike finds the entity: "Norah" for Nora, "Jon Smith" for John Smith; not an unrelated name, nor another user\'s entity', () =>
      withService(async (svc, user, t) => {
        for (const text of NOISE) await svc.recordFact(user, { subject: 'user', predicate: 'said', object: text.slice(0, 40), text }, { messageIds: [] }, agent);
        const nora = await svc.recordFact(user, { subject: 'Nora', predicate: 'plays', object: 'the cello', text: 'Nora plays the cello.' }, { messageIds: [] }, agent);
        const smith = await svc.recordFact(user, { subject: 'John Smith', predicate: 'is', object: 'the landlord', text: 'John Smith is the landlord.' }, { messageIds: [] }, agent);
        const other = `${user}_other`;
        const hers = await svc.recordFact(other, { subject: 'Nora', predicate: 'plays', object: 'the flute', text: 'Nora plays the flute.' }, { messageIds: [] }, agent);

        const norah = await svc.search(user, { query: 'What does Norah do?', kinds: ['fact'], k: 3 });
        assert.equal(norah[0]?.id, nora.fact.id, JSON.stringify(norah));
        assert.ok(!norah.some((h) => h.id === hers.fact.id), "another user's Nora never matches");
        const jon = await svc.search(user, { query: 'Who is Jon Smith?', kinds: ['fact'], k: 3 });
        assert.equal(jon[0]?.id, smith.fact.id, JSON.stringify(jon));

        const reader = t.store.reader(user);
        const similar = await reader.similarEntities(['norah', 'violin'], 0.5, 5);
        assert.deepEqual(
          similar.map((s) => s.entity.name),
          ['Nora'],
        );
        assert.equal(similar[0]?.similarity, Math.fround(4 / 7), 'pg_trgm similarity, the same on every backend');
        assert.deepEqual(await reader.similarEntities(['gwendolyn'], 0.5, 5), [], 'an unrelated name finds nothing');
        assert.deepEqual(await reader.similarEntities(['norah'], 0.6, 5), [], 'below the threshold');
        // An alias added later is matched too ("Bobb" is as close to "Bob" as 0.5).
        await svc.recordFact(user, { subject: 'John Smith', predicate: 'goes by', object: 'Bob', text: 'John Smith goes by Bob.' }, { messageIds: [] }, agent);
        assert.deepEqual(
          (await t.store.reader(user).similarEntities(['bobb'], 0.5, 5)).map((s) => s.entity.name),
          ['John Smith'],
        );
        assert.deepEqual(
          (await svc.entitiesIn(user, 'Did Norah call?')).map((e) => e.name),
          ['Nora'],
        );
        assert.deepEqual(await svc.entitiesIn(user, 'Did Gwendolyn call?'), []);
        assert.deepEqual(await svc.entitiesIn(`${user}_nobody`, 'Did Norah call?'), [], 'no entities of another user');
        assert.deepEqual(
          (await svc.entitiesIn(other, 'Did Norah call?')).map((e) => e.name),
          ['Nora'],
          "the other user's own Nora",
        );
      }));

    test('multi-hop: a fact matching the query leads to an entity whose facts and messages answer it in other words', () =>
      withService(async (svc, user) => {
        const noise = NOISE.map((text, i) => ({ id: `noise-${i}`, role: 'user' as const, text }));
        const said = [
          { id: 'hop-1', role: 'user' as const, text: 'My sister is called Nora, she is older than me.' },
          { id: 'hop-2', role: 'user' as const, text: 'Nora moved to Porto last month, she loves the old town.' },
          { id: 'other', role: 'user' as const, text: 'Where do people live longest? I read it is in Japan.' },
        ];
        await svc.importConversations(user, [{ sessionId: 's1', messages: [...noise, ...said] }], agent, () => 's1');
        await svc.recordFact(user, { subject: 'user', predicate: 'has sister', object: 'Nora', text: "The user's sister is Nora." }, { messageIds: ['hop-1'] }, agent);
        const moved = await svc.recordFact(user, { subject: 'Nora', predicate: 'moved to', object: 'Porto', text: 'Nora moved to Porto.' }, { messageIds: ['hop-2'] }, agent);
        // A neighbour through a fact the query does not ask about is no bridge.
        await svc.recordFact(user, { subject: 'user', predicate: 'works at', object: 'Acme', text: 'The user works at Acme.' }, { messageIds: [] }, agent);
        await svc.recordFact(user, { subject: 'Acme', predicate: 'is located in', object: 'Rotterdam', text: 'Acme is in Rotterdam.' }, { messageIds: [] }, agent);

        const messages = await svc.search(user, { query: 'Where does my sister live?', kinds: ['message'], k: 3 });
        assert.deepEqual(new Set(messages.slice(0, 2).map((h) => h.id)).has('hop-2'), true, 'the message naming the sister, in none of the query words, is reached');
        const facts = await svc.search(user, { query: 'Where does my sister live?', kinds: ['fact'], k: 3 });
        assert.ok(
          facts.some((h) => h.id === moved.fact.id),
          'the bridge entity’s fact is among the first',
        );
        assert.ok(!facts.slice(0, 2).some((h) => h.text.includes('Rotterdam')), 'a neighbour linked by an unrelated fact stays behind');
      }));

    test('episodes and summaries: recalled for a similar goal; summaries per session, oldest first', () =>
      withService(async (svc, user) => {
        await svc.recordEpisode(
          user,
          { goal: 'Book a table for a birthday dinner', steps: ['searched restaurants', 'called Trattoria Roma'], outcome: 'table for six on Friday', lessons: ['call before 5 pm'] },
          'invocation',
          { runId: 'r1', messageIds: ['m1'] },
          agent,
        );
        await svc.recordEpisode(
          user,
          { goal: 'Fix the failing CI pipeline', steps: ['read logs'], outcome: 'pinned the node version', lessons: [] },
          'invocation',
          { runId: 'r2', messageIds: [] },
          agent,
        );
        const found = await svc.listEpisodes(user, { q: 'reserve a restaurant table for dinner' });
        assert.equal(found[0]?.goal, 'Book a table for a birthday dinner');
        assert.equal((await svc.listEpisodes(user, {})).length, 2);
        const ctx = await svc.contextFor(user, 'dinner reservation for a birthday', { maxEpisodes: 1 });
        assert.deepEqual(
          ctx.episodes.map((e) => e.provenance.runId),
          ['r1'],
        );
        await svc.addSummary(user, 'sess-1', 'The user asked for a dinner table; the agent booked Trattoria Roma.', { runId: 'r1', messageIds: ['m1'] }, agent);
        await svc.addSummary(user, 'sess-1', 'The user asked to move it to Saturday; done.', { runId: 'r3', messageIds: ['m5'] }, agent);
        await svc.addSummary(user, 'sess-2', 'Unrelated conversation.', { messageIds: [] }, agent);
        assert.deepEqual(
          (await svc.listSummaries(user, 'sess-1')).map((s) => s.provenance.runId),
          ['r1', 'r3'],
        );
        const withSession = await svc.contextFor(user, 'dinner', { sessionId: 'sess-1' });
        assert.equal(withSession.summaries.length, 2);
        const hit = (await svc.search(user, { query: 'Trattoria Roma booking', kinds: ['summary'] }))[0];
        assert.equal(hit?.source.sessionId, 'sess-1');
      }));

    test('search kinds, k and asOf for messages', () =>
      withService(async (svc, user) => {
        await svc.addMessages(
          user,
          [
            { id: 'old', sessionId: 's', role: 'user', text: 'I planted tomatoes in the garden', at: iso('2020-05-01') },
            { id: 'msg_ripe000001', sessionId: 's', role: 'user', text: 'The tomatoes in the garden are ripe', at: iso('2024-08-01') },
          ],
          agent,
        );
        assert.deepEqual(
          (await svc.search(user, { query: 'tomatoes garden', asOf: iso('2021-01-01') })).map((h) => h.id),
          ['old'],
        );
        assert.equal((await svc.search(user, { query: 'tomatoes garden', k: 1 })).length, 1);
        assert.equal((await svc.search(user, { query: 'tomatoes garden', kinds: ['fact'] })).length, 0);
        // A message quoted by its id is found though no word matches.
        assert.equal((await svc.search(user, { query: 'what did msg_ripe000001 say?', k: 1 }))[0]?.id, 'msg_ripe000001');
      }));

    test('an imported answer that shares no word with the question is found through the turns before it; the named speaker first', () =>
      withService(async (svc, user) => {
        const at = iso('2023-05-08');
        const turn = (id: string, name: string, text: string) => ({ id, role: name === 'Maya' ? ('user' as const) : ('assistant' as const), name, text, at });
        const noise = NOISE.map((text, i) => turn(`noise-${i}`, i % 2 ? 'Maya' : 'Jordan', text));
        await svc.importConversations(
          user,
          [
            { sessionId: 's1', messages: [...noise.slice(0, 6), turn('d1', 'Jordan', 'I took a pottery class once, years ago.'), ...noise.slice(6)] },
            {
              sessionId: 's2',
              messages: [
                turn('m1', 'Maya', 'Guess what? I took my first pottery class last weekend!'),
                turn('m2', 'Jordan', 'No way! What did you make?'),
                turn('m3', 'Maya', 'A lopsided bowl with a blue glaze. [shares a photo: a clay bowl drying on a shelf]'),
                turn('m4', 'Jordan', 'Love that for you.'),
              ],
            },
          ],
          agent,
          () => 'unused',
        );
        const stored = await svc.getMessage(user, 'm2');
        assert.equal(stored?.prevId, 'm1');
        assert.equal(stored?.nextId, 'm3');
        assert.equal((await svc.getMessage(user, 'm1'))?.prevId, undefined, 'a session starts a new chain');
        const detail = await svc.search(user, { query: 'What did Maya make in the pottery class?', k: 5 });
        assert.ok(
          detail.some((h) => h.id === 'm3'),
          `the answer turn is among the first five: ${detail.map((h) => h.id).join(', ')}`,
        );
        const when = await svc.search(user, { query: 'When did Maya take a pottery class?', k: 3 });
        assert.equal(when[0]?.id, 'm1', "the named speaker's own statement comes first, not the other person's");
      }));

    test('a line said in many sessions takes one place in the top k: the turns that differ come in', () =>
      withService(async (svc, user) => {
        const openers = ['', 'Honestly, ', 'Ugh, ', 'Haha, ', 'By the way, ', 'Oh, '];
        const sessions = openers.map((opener, i) => ({
          sessionId: `s${i}`,
          messages: [{ id: `dup-${i}`, role: 'user' as const, name: 'Maya', text: `${opener}the kids keep asking for a pet, I am not sure we are ready.`, at: iso(`2023-0${i + 1}-10`) }],
        }));
        sessions.push({
          sessionId: 's-pet',
          messages: [
            { id: 'rabbit', role: 'user' as const, name: 'Maya', text: 'Meet Clover, the rabbit we adopted as a pet last weekend, she hops around the garden all day long.', at: iso('2023-08-01') },
          ],
        });
        await svc.importConversations(user, sessions, agent, () => 'unused');
        const hits = await svc.search(user, { query: 'What pet does Maya have?', k: 3 });
        assert.ok(
          hits.some((h) => h.id === 'rabbit'),
          `the turn that differs is among the first three: ${hits.map((h) => h.id).join(', ')}`,
        );
        assert.equal(hits.filter((h) => h.id.startsWith('dup-')).length, 2, 'the repeated line fills what is left');
      }));

    test('a second instance on the same data sees writes; concurrent duplicates merge into one fact', async () => {
      const target = await make();
      if (!target.reopen) {
        await target.cleanup();
        assert.ok(true, 'not persistent: nothing to share between instances');
        return;
      }
      try {
        const user = `user_${tag()}`;
        const one = new LongTermService({ store: target.store });
        const two = new LongTermService({ store: await target.reopen() });
        const fact = { subject: 'Tom', predicate: 'plays', object: 'cello', text: 'Tom plays the cello' };
        const results = await Promise.all([0, 1, 2, 3].map((i) => (i % 2 ? one : two).recordFact(user, fact, { messageIds: [`m${i}`] }, agent)));
        assert.equal(results.filter((r) => r.outcome === 'added').length, 1);
        const facts = await two.listFacts(user, {});
        assert.equal(facts.length, 1);
        assert.equal(facts[0]?.mentions, 4);
        assert.equal((await one.listFacts(user, {}))[0]?.mentions, 4);
        await one.addMessages(user, [{ id: 'x1', sessionId: 's', role: 'user', text: 'the violin teacher is called Mrs Park', at: iso('2024-01-01') }], agent);
        assert.equal((await two.search(user, { query: 'violin teacher' }))[0]?.id, 'x1');
      } finally {
        await target.cleanup();
      }
    });

    test('dense vectors: stored per record, nearest per kind, kept when the record is put again, per user, seen by a second instance', async () => {
      const target = await make();
      try {
        const [user, other] = [`user_${tag()}`, `user_${tag()}`];
        const unit = (...xs: number[]) => normalized(xs);
        const message = (id: string, text: string): LongTermRecord => ({ kind: 'message', record: { id, userId: user, sessionId: 's', role: 'user', text, at: iso('2024-01-01') } });
        const summary: LongTermRecord = { kind: 'summary', record: { id: 'sum1', userId: user, sessionId: 's', text: 'a summary', at: iso('2024-01-02'), provenance: { messageIds: [] } } };
        await target.store.write(user, async (tx) => {
          tx.put([message('a', 'alpha'), message('b', 'beta'), message('c', 'gamma'), summary]);
          tx.putVectors([
            { kind: 'message', id: 'a', vector: unit(1, 0, 0) },
            { kind: 'message', id: 'b', vector: unit(0.8, 0.6, 0) },
            { kind: 'message', id: 'c', vector: unit(0, 0, 1) },
            { kind: 'summary', id: 'sum1', vector: unit(0.6, 0.8, 0) },
          ]);
        });
        await target.store.write(other, async (tx) => {
          tx.put([{ kind: 'message', record: { id: 'z', userId: other, sessionId: 's', role: 'user', text: 'other', at: iso('2024-01-01') } }]);
          tx.putVectors([{ kind: 'message', id: 'z', vector: unit(1, 0, 0) }]);
        });
        // The record put again (as a fact's validity change would): its vector stays.
        await target.store.write(user, async (tx) => tx.put([message('a', 'alpha')]));
        const query = unit(1, 0, 0);
        const hits = await target.store.reader(user).nearest(['message', 'summary'], query, 2);
        assert.deepEqual(hits.map((h) => `${h.kind}:${h.id}`).sort(), ['message:a', 'message:b', 'summary:sum1']);
        const messages = hits.filter((h) => h.kind === 'message');
        assert.deepEqual(
          messages.map((h) => h.id),
          ['a', 'b'],
          'best first, at most the limit per kind',
        );
        assert.ok(Math.abs((messages[0]?.score ?? 0) - 1) < 1e-5 && Math.abs((messages[1]?.score ?? 0) - 0.8) < 1e-5, JSON.stringify(messages));
        assert.deepEqual(await target.store.reader(user).nearest(['fact'], query, 5), []);
        assert.deepEqual(await target.store.reader(user).nearest(['message'], unit(1, 0), 5), [], 'a vector of another length (another model) matches nothing');
        assert.deepEqual(
          (await target.store.reader(other).nearest(['message'], query, 5)).map((h) => h.id),
          ['z'],
        );
        if (target.reopen) {
          const second = await target.reopen();
          assert.deepEqual(
            (await second.reader(user).nearest(['message'], query, 1)).map((h) => h.id),
            ['a'],
          );
        }
      } finally {
        await target.cleanup();
      }
    });
  });
}
