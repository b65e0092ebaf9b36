/**
 * Long-term memory benchmark (issue 10), printed, not asserted: for one user, import N messages
 * (messages per second through the service, in batches as the REST import sends them) and record
 * F facts, then the latency of `search` (top 10, every kind) over them: p50 and p95 of Q queries.
 * Embedded file store and PostgreSQL in the same run. Synthetic text from a seeded generator: a
 * 2,000-word vocabulary with a Zipf-like skew, so common words match many records.
 *   npx tsx bench/longterm.ts [--messages N] [--facts F] [--queries Q] [--stores file,postgres]
 * Results: bench/results/longterm.json.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { LongTermService } from '../src/longterm/service';
import { redactSecrets } from '../src/memory/observers';
import { FileLongTermStore } from '../src/store/longterm/file-store';
import { PostgresLongTermStore } from '../src/store/longterm/postgres-store';
import type { LongTermStore } from '../src/store/longterm/store';
import { prng } from './prng';
import { withScratchDatabase } from './scratch-database';

const args = process.argv.slice(2);
const arg = (name: string, fallback: number) => {
  const i = args.indexOf(name);
  return i >= 0 ? Number(args[i + 1]) : fallback;
};
const MESSAGES = arg('--messages', 95_000);
const FACTS = arg('--facts', 5_000);
const QUERIES = arg('--queries', 200);
const STORES = (args.includes('--stores') ? (args[args.indexOf('--stores') + 1] ?? '') : 'file,postgres').split(',');
const OUT = path.join(__dirname, 'results');

const rand = prng(42);
const SYLLABLES = ['ka', 'lo', 'mi', 'ren', 'tas', 'vo', 'pel', 'dun', 'sar', 'qui', 'bor', 'nel', 'fa', 'gim', 'hu', 'jex'];
const VOCAB = Array.from({ length: 2000 }, (_, i) => `${SYLLABLES[i % 16]}${SYLLABLES[Math.floor(i / 16) % 16]}${SYLLABLES[Math.floor(i / 256) % 16]}`);
const word = () => VOCAB[Math.floor(VOCAB.length * rand() ** 2)] ?? 'ka';
const sentence = (n: number) => Array.from({ length: n }, word).join(' ');

const percentile = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))] ?? NaN;
const meta = { origin: 'system' as const, reason: 'bench' };

async function measure(name: string, store: LongTermStore): Promise<Record<string, number | string>> {
  await store.setup();
  const svc = new LongTermService({ store, observers: [redactSecrets] });
  const user = `bench-${Date.now()}`;
  const BATCH = 1000;
  let started = performance.now();
  for (let i = 0; i < MESSAGES; i += BATCH) {
    const messages = Array.from({ length: Math.min(BATCH, MESSAGES - i) }, () => ({ role: 'user' as const, text: sentence(12 + Math.floor(rand() * 8)) }));
    await svc.importConversations(user, [{ messages }], meta, () => `session-${i}`);
  }
  const importSeconds = (performance.now() - started) / 1000;
  started = performance.now();
  for (let i = 0; i < FACTS; i++) {
    await svc.recordFact(user, { subject: `${word()} ${i % 500}`, predicate: 'relates to', object: word(), text: sentence(8) }, { messageIds: [] }, { origin: 'agent', reason: 'bench' });
  }
  const factMs = (performance.now() - started) / FACTS;
  await svc.search(user, { query: sentence(3), k: 10 }); // warm: the first read loads the user's index (file store)
  const times: number[] = [];
  for (let q = 0; q < QUERIES; q++) {
    const t = performance.now();
    await svc.search(user, { query: sentence(3 + (q % 3)), k: 10 });
    times.push(performance.now() - t);
  }
  const row = {
    store: name,
    messages: MESSAGES,
    facts: FACTS,
    importPerSecond: Math.round(MESSAGES / importSeconds),
    factMs: +factMs.toFixed(2),
    searchP50Ms: +percentile(times, 0.5).toFixed(1),
    searchP95Ms: +percentile(times, 0.95).toFixed(1),
  };
  await store.end();
  return row;
}

async function main(): Promise<void> {
  const rows: Record<string, number | string>[] = [];
  if (STORES.includes('file')) {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'threadline-bench-longterm-'));
    try {
      rows.push(await measure('file', new FileLongTermStore(dir)));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  if (STORES.includes('postgres')) rows.push(await measurePostgres());
  console.log(`long-term memory: one user, ${MESSAGES} messages + ${FACTS} facts, ${QUERIES} searches (top 10, every kind)`);
  console.table(rows);
  // A partial run (--stores) prints only: the results file holds both stores.
  if (STORES.includes('file') && STORES.includes('postgres')) {
    mkdirSync(OUT, { recursive: true });
    writeFileSync(path.join(OUT, 'longterm.json'), `${JSON.stringify({ generatedAt: new Date().toISOString(), cores: os.cpus().length, loadAverage: os.loadavg(), rows }, null, 2)}\n`);
  }
}

function measurePostgres(): Promise<Record<string, number | string>> {
  return withScratchDatabase('threadline_bench', (url) => measure('postgres', new PostgresLongTermStore(url)));
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
