/**
 * Evidence recall from long two-person conversations (issue 30), printed, not asserted: the set of
 * bench/longterm-eval/conversations.ts imported as the REST import does (one imported conversation
 * per session; every turn with its id, speaker `name`, role and the session's date as `at`), no
 * model and no extraction, then every question searched with k 10. A question's recall@k is the
 * share of its evidence ids among the first k distinct ids of the results' `source.messageIds`, in
 * rank order; per kind of question the mean, and overall the kinds weighed as the held-out
 * benchmark mixes them (KIND_SHARES).
 * Systems: `ours` (LongTermService.search, as POST /v1/users/:u/memory/search) and `bm25`, a plain
 * BM25 over turns in the same run (MiniSearch, "name: text", lowercase words, k1 1.2, b 0.75).
 *   npx tsx bench/longterm-recall.ts [--stores file,postgres] [--split dev|heldout] [--latency-copies N]
 * `--latency-copies N` also times search at scale: every conversation imported N times into one user
 * (18 copies ≈ 95,000 turns, issue 30's size), then each question searched three times; p50 / p95
 * per kind of question (category questions — multi-hop, open-domain — take the lexicon's second search).
 * Results: bench/results/longterm-recall.json.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import MiniSearch from 'minisearch';
import { machine } from './figures';
import { withScratchDatabase } from './scratch-database';
import { LongTermService } from '../src/longterm/service';
import { FileLongTermStore } from '../src/store/longterm/file-store';
import { PostgresLongTermStore } from '../src/store/longterm/postgres-store';
import type { LongTermStore } from '../src/store/longterm/store';
import { generateConversationSet, KIND_SHARES, QUESTION_KINDS, type ConversationSet, type Question, type QuestionKind, type Split } from './longterm-eval/conversations';

const args = process.argv.slice(2);
const argOf = (name: string, fallback: string) => (args.includes(name) ? (args[args.indexOf(name) + 1] ?? fallback) : fallback);
const STORES = argOf('--stores', 'file').split(',').filter(Boolean);
const SPLITS = argOf('--split', 'dev,heldout').split(',') as Split[];
const LATENCY_COPIES = Number(argOf('--latency-copies', '0'));
const K = 10;
const KS = [1, 5, 10] as const;
const OUT = path.join(__dirname, 'results');

/** Per question: the distinct evidence-candidate ids in rank order (at most K). */
type Answers = Map<string, string[]>;
const firstDistinct = (idLists: readonly (readonly string[])[]) => [...new Set(idLists.flat())].slice(0, K);

async function runOurs(set: ConversationSet, store: LongTermStore, questions: readonly Question[]): Promise<{ answers: Answers; ms: number[] }> {
  await store.setup();
  const svc = new LongTermService({ store, now: () => new Date('2024-06-01T00:00:00Z'), auditReads: false });
  const run = Date.now().toString(36);
  const user = (id: string) => `${id}-${run}`;
  for (const c of set.conversations) {
    await svc.importConversations(
      user(c.userId),
      c.sessions.map((s) => ({ sessionId: s.sessionId, messages: s.turns.map((t) => ({ id: t.id, role: t.role, name: t.name, text: t.text, at: s.at })) })),
      { origin: 'system', reason: 'recall benchmark' },
      () => 'unused',
    );
  }
  const answers: Answers = new Map();
  const ms: number[] = [];
  for (const q of questions) {
    const t = performance.now();
    const hits = await svc.search(user(q.userId), { query: q.query, k: K });
    ms.push(performance.now() - t);
    answers.set(q.id, firstDistinct(hits.map((h) => h.source.messageIds)));
  }
  await store.end();
  return { answers, ms };
}

/** p50 / p95 in ms. */
function percentiles(ms: readonly number[]): { p50: number; p95: number } {
  const sorted = [...ms].sort((a, b) => a - b);
  return { p50: +(sorted[Math.floor(sorted.length / 2)] ?? 0).toFixed(2), p95: +(sorted[Math.floor(sorted.length * 0.95)] ?? 0).toFixed(2) };
}

/** Search latency per kind of question with every conversation imported `copies` times into one user. */
async function timeAtScale(
  set: ConversationSet,
  store: LongTermStore,
  questions: readonly Question[],
  copies: number,
): Promise<{ turns: number; byKind: Record<string, { p50: number; p95: number }> }> {
  await store.setup();
  const svc = new LongTermService({ store, now: () => new Date('2024-06-01T00:00:00Z'), auditReads: false });
  const user = `scale-${Date.now().toString(36)}`;
  let turns = 0;
  for (let copy = 0; copy < copies; copy++) {
    for (const c of set.conversations) {
      const sessions = c.sessions.map((s) => ({
        sessionId: `${s.sessionId}-c${copy}`,
        messages: s.turns.map((t) => ({ id: `${t.id}-c${copy}`, role: t.role, name: t.name, text: t.text, at: s.at })),
      }));
      turns += sessions.reduce((n, s) => n + s.messages.length, 0);
      await svc.importConversations(user, sessions, { origin: 'system', reason: 'recall benchmark at scale' }, () => 'unused');
    }
  }
  const ms = new Map<string, number[]>();
  for (let pass = 0; pass < 3; pass++) {
    for (const q of questions) {
      const t = performance.now();
      await svc.search(user, { query: q.query, k: K });
      const took = performance.now() - t;
      if (pass > 0) for (const key of [q.kind, 'all']) ms.set(key, [...(ms.get(key) ?? []), took]); // the first pass warms caches
    }
  }
  await store.end();
  return { turns, byKind: Object.fromEntries([...ms].map(([kind, xs]) => [kind, percentiles(xs)])) };
}

function runBm25(set: ConversationSet, questions: readonly Question[]): Answers {
  const indexes = new Map<string, MiniSearch<{ id: string; text: string }>>();
  for (const c of set.conversations) {
    const index = new MiniSearch<{ id: string; text: string }>({ fields: ['text'], searchOptions: { bm25: { k: 1.2, b: 0.75, d: 0 }, combineWith: 'OR' } });
    index.addAll(c.sessions.flatMap((s) => s.turns.map((t) => ({ id: t.id, text: `${t.name}: ${t.text}` }))));
    indexes.set(c.userId, index);
  }
  const answers: Answers = new Map();
  for (const q of questions) answers.set(q.id, firstDistinct((indexes.get(q.userId) as MiniSearch).search(q.query).map((h) => [String(h.id)])));
  return answers;
}

type Scores = Record<QuestionKind | 'overall', { n: number; recall: Record<number, number> }>;

function score(questions: readonly Question[], answers: Answers): Scores {
  const out = {} as Scores;
  for (const kind of QUESTION_KINDS) {
    const qs = questions.filter((q) => q.kind === kind);
    const recall: Record<number, number> = {};
    for (const k of KS) {
      const sum = qs.reduce((acc, q) => {
        const found = new Set((answers.get(q.id) ?? []).slice(0, k));
        return acc + q.evidence.filter((e) => found.has(e)).length / q.evidence.length;
      }, 0);
      recall[k] = qs.length ? sum / qs.length : NaN;
    }
    out[kind] = { n: qs.length, recall };
  }
  const overall: Record<number, number> = {};
  for (const k of KS) overall[k] = QUESTION_KINDS.reduce((acc, kind) => acc + KIND_SHARES[kind] * (out[kind].recall[k] ?? 0), 0);
  out.overall = { n: questions.length, recall: overall };
  return out;
}

const fmt = (s: Scores[keyof Scores]) => KS.map((k) => (s.recall[k] ?? NaN).toFixed(3)).join(' / ');

async function main(): Promise<void> {
  const set = generateConversationSet();
  const turns = set.conversations.reduce((n, c) => n + c.sessions.reduce((m, s) => m + s.turns.length, 0), 0);
  const questions = set.questions.filter((q) => SPLITS.includes(q.split));
  console.log(`evidence recall: ${set.conversations.length} conversations, ${turns} turns, ${questions.length} questions (seed ${set.seed}); ${machine().cpu}, ${machine().cores} cores`);
  const bm25 = runBm25(set, questions);
  const results: Record<string, Record<string, Scores>> = {};
  const latency: Record<string, { p50: number; p95: number }> = {};
  for (const name of STORES) {
    let got: Awaited<ReturnType<typeof runOurs>>;
    if (name === 'file') {
      const dir = mkdtempSync(path.join(os.tmpdir(), 'threadline-recall-'));
      try {
        got = await runOurs(set, new FileLongTermStore(dir), questions);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    } else if (name === 'postgres') got = await withScratchDatabase('threadline_recall', (url) => runOurs(set, new PostgresLongTermStore(url), questions));
    else throw new Error(`--stores: unknown store ${name}`);
    latency[name] = percentiles(got.ms);
    const rows: Record<string, string>[] = [];
    for (const split of SPLITS) {
      const qs = questions.filter((q) => q.split === split);
      const ours = score(qs, got.answers);
      const base = score(qs, bm25);
      results[`${name}/${split}`] = { ours, bm25: base };
      for (const kind of [...QUESTION_KINDS, 'overall'] as const) rows.push({ split, kind, n: String(ours[kind].n), bm25: fmt(base[kind]), ours: fmt(ours[kind]) });
    }
    console.log(`\nstore: ${name} — evidence recall@1 / @5 / @10`);
    console.table(rows);
  }
  console.log('search latency (ms):');
  console.table(latency);
  const atScale: Record<string, Awaited<ReturnType<typeof timeAtScale>>> = {};
  if (LATENCY_COPIES > 0) {
    for (const name of STORES) {
      if (name === 'file') {
        const dir = mkdtempSync(path.join(os.tmpdir(), 'threadline-recall-scale-'));
        try {
          atScale[name] = await timeAtScale(set, new FileLongTermStore(dir), questions, LATENCY_COPIES);
        } finally {
          rmSync(dir, { recursive: true, force: true });
        }
      } else atScale[name] = await withScratchDatabase('threadline_recall_scale', (url) => timeAtScale(set, new PostgresLongTermStore(url), questions, LATENCY_COPIES));
      console.log(`\nsearch at scale, ${name}: ${atScale[name].turns} turns in one user, p50 / p95 ms of passes 2–3 (load ${os.loadavg()[0]?.toFixed(1)})`);
      console.table(atScale[name].byKind);
    }
  }
  mkdirSync(OUT, { recursive: true });
  writeFileSync(
    path.join(OUT, 'longterm-recall.json'),
    `${JSON.stringify({ generatedAt: new Date().toISOString(), machine: machine(), seed: set.seed, turns, questions: questions.length, results, latencyMs: latency, ...(LATENCY_COPIES > 0 ? { atScale: { copies: LATENCY_COPIES, ...atScale } } : {}) }, null, 2)}\n`,
  );
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
