/**
 * Long-term memory retrieval quality (issue 10), printed, not asserted: the evaluation set of
 * bench/longterm-eval/dataset.ts imported through LongTermService (importConversations, then the
 * facts an extraction would record, in the order they were said), every question searched (top
 * 10), and recall@1/5/10 per category and split:
 *   any  — at least one evidence message id among the results' source.messageIds;
 *   all  — every evidence id there (multi-hop needs both hops);
 *   stale first — for questions with a superseded statement: the old one ranks above the current one.
 * Systems: `ours` (service search, every kind: messages and facts, with asOf for time questions),
 * `ours-msg` (the same search restricted to messages, to compare like with like), and `bm25` — a
 * plain BM25 baseline over the same messages (MiniSearch, its standard tokenizer, lowercase only:
 * no stemming, no stopwords, no graph, no fusion, no time filter; k1 1.2, b 0.75, d 0).
 * Also search latency on this corpus per store.
 *   npx tsx bench/longterm-eval.ts [--stores file,postgres]
 * Results: bench/results/longterm-eval.json.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import MiniSearch from 'minisearch';
import { withScratchDatabase } from './scratch-database';
import type { SearchHit } from '../src/longterm/contract';
import { LongTermService } from '../src/longterm/service';
import { redactSecrets } from '../src/memory/observers';
import { FileLongTermStore } from '../src/store/longterm/file-store';
import { PostgresLongTermStore } from '../src/store/longterm/postgres-store';
import type { LongTermStore } from '../src/store/longterm/store';
import { generateEvalSet, type Category, type EvalQuestion, type EvalSet, type Split } from './longterm-eval/dataset';

const args = process.argv.slice(2);
const storesArg = args.includes('--stores') ? (args[args.indexOf('--stores') + 1] ?? '') : 'file,postgres';
const STORES = storesArg.split(',').filter(Boolean);
const OUT = path.join(__dirname, 'results');
const K = 10;
const KS = [1, 5, 10] as const;
const CATEGORIES: Category[] = ['direct', 'paraphrase', 'contradiction', 'multi-hop', 'temporal'];
const SPLITS: Split[] = ['dev', 'heldout'];
/** After every session of the set: "now" for validity. */
const NOW = new Date('2026-01-15T12:00:00Z');

/** One question's ranked results as the message ids each result stands on. */
type Ranked = string[][];
type Answers = Map<string, Ranked>;

const idsOf = (hits: readonly SearchHit[]): Ranked => hits.map((h) => h.source.messageIds);
const percentile = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))] ?? NaN;

async function runOurs(set: EvalSet, store: LongTermStore): Promise<{ ours: Answers; oursMsg: Answers; latency: { p50: number; p95: number } }> {
  await store.setup();
  const svc = new LongTermService({ store, observers: [redactSecrets], now: () => NOW });
  const run = Date.now().toString(36);
  const user = (id: string) => `${id}-${run}`;
  for (const u of set.users) {
    await svc.importConversations(user(u.userId), u.conversations, { origin: 'system', reason: 'eval import' }, () => 'unused');
    for (const f of u.facts) {
      await svc.recordFact(
        user(u.userId),
        { subject: f.subject, predicate: f.predicate, object: f.object, text: f.text, validFrom: f.validFrom },
        { sessionId: f.sessionId, messageIds: [f.messageId] },
        { origin: 'agent', reason: 'eval extraction' },
      );
    }
  }
  const ours: Answers = new Map();
  const oursMsg: Answers = new Map();
  const times: number[] = [];
  for (const q of set.questions) {
    const asOf = q.asOf ? { asOf: q.asOf } : {};
    const t = performance.now();
    ours.set(q.id, idsOf(await svc.search(user(q.userId), { query: q.query, k: K, ...asOf })));
    times.push(performance.now() - t);
    oursMsg.set(q.id, idsOf(await svc.search(user(q.userId), { query: q.query, k: K, kinds: ['message'], ...asOf })));
  }
  await store.end();
  return { ours, oursMsg, latency: { p50: +percentile(times, 0.5).toFixed(2), p95: +percentile(times, 0.95).toFixed(2) } };
}

function runBaseline(set: EvalSet): { answers: Answers; latency: { p50: number; p95: number } } {
  const indexes = new Map<string, MiniSearch<{ id: string; text: string }>>();
  for (const u of set.users) {
    const index = new MiniSearch<{ id: string; text: string }>({ fields: ['text'], searchOptions: { bm25: { k: 1.2, b: 0.75, d: 0 }, combineWith: 'OR' } });
    index.addAll(u.conversations.flatMap((c) => c.messages.map((m) => ({ id: m.id, text: m.text }))));
    indexes.set(u.userId, index);
  }
  const answers: Answers = new Map();
  const times: number[] = [];
  for (const q of set.questions) {
    const t = performance.now();
    const hits = (indexes.get(q.userId) as MiniSearch).search(q.query).slice(0, K);
    times.push(performance.now() - t);
    answers.set(
      q.id,
      hits.map((h) => [String(h.id)]),
    );
  }
  return { answers, latency: { p50: +percentile(times, 0.5).toFixed(2), p95: +percentile(times, 0.95).toFixed(2) } };
}

interface Score {
  n: number;
  any: Record<number, number>;
  all: Record<number, number>;
  staleFirst?: number;
}

function scoreOf(questions: readonly EvalQuestion[], answers: Answers): Score {
  const any: Record<number, number> = {};
  const all: Record<number, number> = {};
  for (const k of KS) {
    let a = 0;
    let b = 0;
    for (const q of questions) {
      const found = new Set((answers.get(q.id) ?? []).slice(0, k).flat());
      if (q.evidence.some((e) => found.has(e))) a++;
      if (q.evidence.every((e) => found.has(e))) b++;
    }
    any[k] = +(a / Math.max(1, questions.length)).toFixed(3);
    all[k] = +(b / Math.max(1, questions.length)).toFixed(3);
  }
  const withStale = questions.filter((q) => q.stale?.length);
  if (withStale.length === 0) return { n: questions.length, any, all };
  let staleFirst = 0;
  for (const q of withStale) {
    // The first result that stands on either the current or the old statement: is it the old one only?
    const first = (answers.get(q.id) ?? []).find((ids) => ids.some((id) => q.evidence.includes(id) || (q.stale ?? []).includes(id)));
    if (!first || !first.some((id) => q.evidence.includes(id))) staleFirst++;
  }
  return { n: questions.length, any, all, staleFirst: +(staleFirst / withStale.length).toFixed(3) };
}

type Report = Record<string, Record<Split, Record<Category | 'overall', Score>>>;

function report(set: EvalSet, systems: Record<string, Answers>): Report {
  const out: Report = {};
  for (const [name, answers] of Object.entries(systems)) {
    const bySplit = {} as Record<Split, Record<Category | 'overall', Score>>;
    for (const split of SPLITS) {
      const inSplit = set.questions.filter((q) => q.split === split);
      const byCategory = {} as Record<Category | 'overall', Score>;
      for (const c of CATEGORIES)
        byCategory[c] = scoreOf(
          inSplit.filter((q) => q.category === c),
          answers,
        );
      byCategory.overall = scoreOf(inSplit, answers);
      bySplit[split] = byCategory;
    }
    out[name] = bySplit;
  }
  return out;
}

function print(title: string, rep: Report): void {
  console.log(`\n${title} — recall@1/5/10 (all evidence), stale-first rate where defined`);
  const rows: Record<string, string>[] = [];
  for (const split of SPLITS) {
    for (const c of [...CATEGORIES, 'overall'] as const) {
      const row: Record<string, string> = { split, category: c };
      for (const [name, bySplit] of Object.entries(rep)) {
        const s = bySplit[split][c];
        row[name] = `${KS.map((k) => s.all[k]?.toFixed(2)).join(' / ')}${s.staleFirst !== undefined ? ` (stale ${s.staleFirst.toFixed(2)})` : ''}`;
      }
      row.n = String(rep[Object.keys(rep)[0] as string]?.[split][c].n ?? 0);
      rows.push(row);
    }
  }
  console.table(rows);
}

function withPostgres<T>(fn: (url: string) => Promise<T>): Promise<T> {
  return withScratchDatabase('threadline_eval', fn);
}

async function main(): Promise<void> {
  const set = generateEvalSet();
  const messages = set.users.reduce((n, u) => n + u.conversations.reduce((m, c) => m + c.messages.length, 0), 0);
  const sessions = set.users.reduce((n, u) => n + u.conversations.length, 0);
  const facts = set.users.reduce((n, u) => n + u.facts.length, 0);
  console.log(`long-term memory evaluation: ${set.users.length} users, ${sessions} sessions, ${messages} messages, ${facts} facts, ${set.questions.length} questions (seed ${set.seed})`);
  const baseline = runBaseline(set);
  const results: Record<string, unknown> = {};
  const latency: Record<string, { p50: number; p95: number }> = { 'bm25 (MiniSearch)': baseline.latency };
  for (const name of STORES) {
    const run = (store: LongTermStore) => runOurs(set, store);
    let got: Awaited<ReturnType<typeof runOurs>>;
    if (name === 'file') {
      const dir = mkdtempSync(path.join(os.tmpdir(), 'threadline-eval-'));
      try {
        got = await run(new FileLongTermStore(dir));
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    } else if (name === 'postgres') got = await withPostgres((url) => run(new PostgresLongTermStore(url)));
    else throw new Error(`--stores: unknown store ${name}`);
    const rep = report(set, { bm25: baseline.answers, 'ours-msg': got.oursMsg, ours: got.ours });
    print(`store: ${name}`, rep);
    results[name] = rep;
    latency[`ours (${name})`] = got.latency;
  }
  console.log('\nsearch latency on this corpus (ms):');
  console.table(latency);
  mkdirSync(OUT, { recursive: true });
  writeFileSync(
    path.join(OUT, 'longterm-eval.json'),
    `${JSON.stringify({ generatedAt: new Date().toISOString(), seed: set.seed, users: set.users.length, sessions, messages, facts, questions: set.questions.length, k: K, results, latencyMs: latency }, null, 2)}\n`,
  );
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
