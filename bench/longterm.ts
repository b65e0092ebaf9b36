/**
 * Long-term memory benchmark (issue 10), printed, not asserted: for one user, import N messages
 * (messages per second through the service, in batches as the REST import sends them) and record
 * F facts, then the latency of `search` (top 10, every kind) over them: p50 and p95 of Q queries.
 * Embedded file store and PostgreSQL in the same run, each without and with encryption at rest
 * (THREADLINE_ENCRYPTION_KEY: records sealed, the full-text index of keyed hashes; issue 32), and
 * the ratio on/off. Synthetic text from a seeded generator: a 2,000-word vocabulary with a Zipf-like
 * skew, so common words match many records.
 *   npx tsx bench/longterm.ts [--messages N] [--facts F] [--queries Q] [--stores file,postgres] [--sealing off,on]
 * Results: bench/results/longterm.json.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { LongTermService } from '../src/longterm/service';
import { redactSecrets } from '../src/memory/observers';
import { FileLongTermStore } from '../src/store/longterm/file-store';
import { PostgresLongTermStore } from '../src/store/longterm/postgres-store';
import type { LongTermStore } from '../src/store/longterm/store';
import { PLAIN, sealerFor } from '../src/store/sealing/sealer';
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
const SEALING = (args.includes('--sealing') ? (args[args.indexOf('--sealing') + 1] ?? '') : 'off,on').split(',');
const OUT = path.join(__dirname, 'results');
/** A fresh random key per run: 32 bytes, used as is (no scrypt). */
const SEALED = sealerFor({ THREADLINE_ENCRYPTION_KEY: `bench:${randomBytes(32).toString('base64')}` });

let rand = prng(42);
const SYLLABLES = ['ka', 'lo', 'mi', 'ren', 'tas', 'vo', 'pel', 'dun', 'sar', 'qui', 'bor', 'nel', 'fa', 'gim', 'hu', 'jex'];
const VOCAB = Array.from({ length: 2000 }, (_, i) => `${SYLLABLES[i % 16]}${SYLLABLES[Math.floor(i / 16) % 16]}${SYLLABLES[Math.floor(i / 256) % 16]}`);
const word = () => VOCAB[Math.floor(VOCAB.length * rand() ** 2)] ?? 'ka';
const sentence = (n: number) => Array.from({ length: n }, word).join(' ');

const percentile = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))] ?? NaN;
const meta = { origin: 'system' as const, reason: 'bench' };

/** `open` makes a store on the same data each time: the second one, cold, times loading it (the file store reads and opens its log). */
async function measure(name: string, open: () => LongTermStore, sealing: string): Promise<Record<string, number | string>> {
  rand = prng(42); // the same records and queries with encryption on and off
  const store = open();
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
  await svc.flushReads();
  const cold = open();
  await cold.setup();
  const coldStarted = performance.now();
  const coldService = new LongTermService({ store: cold });
  await coldService.search(user, { query: sentence(3), k: 10 });
  const coldSearchMs = performance.now() - coldStarted;
  await coldService.flushReads();
  await cold.end();
  const row = {
    store: name,
    sealing,
    messages: MESSAGES,
    facts: FACTS,
    importPerSecond: Math.round(MESSAGES / importSeconds),
    factMs: +factMs.toFixed(2),
    searchP50Ms: +percentile(times, 0.5).toFixed(1),
    searchP95Ms: +percentile(times, 0.95).toFixed(1),
    coldSearchMs: Math.round(coldSearchMs),
  };
  await svc.flushReads();
  await store.end();
  return row;
}

async function main(): Promise<void> {
  const rows: Record<string, number | string>[] = [];
  for (const sealing of SEALING) {
    const sealer = sealing === 'on' ? SEALED : PLAIN;
    if (STORES.includes('file')) {
      const dir = mkdtempSync(path.join(os.tmpdir(), 'threadline-bench-longterm-'));
      try {
        rows.push(await measure('file', () => new FileLongTermStore(dir, { sealer }), sealing));
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }
    if (STORES.includes('postgres')) rows.push(await withScratchDatabase('threadline_bench', (url) => measure('postgres', () => new PostgresLongTermStore(url, { sealer }), sealing)));
  }
  // On ÷ off per store: medians over the rounds (`--sealing off,on,off,on` alternates them against drift in the machine's load).
  const median = (xs: number[]) => {
    const sorted = [...xs].sort((x, y) => x - y);
    const mid = (sorted.length - 1) / 2;
    return ((sorted[Math.floor(mid)] ?? NaN) + (sorted[Math.ceil(mid)] ?? NaN)) / 2;
  };
  for (const store of STORES) {
    if (!SEALING.includes('off') || !SEALING.includes('on')) continue;
    const of = (sealing: string, key: string) => median(rows.filter((r) => r.store === store && r.sealing === sealing).map((r) => Number(r[key])));
    const ratio = (key: string, inverse = false) => +(inverse ? of('off', key) / of('on', key) : of('on', key) / of('off', key)).toFixed(2);
    rows.push({
      store,
      sealing: 'on ÷ off',
      importTime: ratio('importPerSecond', true),
      factMs: ratio('factMs'),
      searchP50Ms: ratio('searchP50Ms'),
      searchP95Ms: ratio('searchP95Ms'),
      coldSearchMs: ratio('coldSearchMs'),
    });
  }
  console.log(`long-term memory: one user, ${MESSAGES} messages + ${FACTS} facts, ${QUERIES} searches (top 10, every kind); encryption at rest ${SEALING.join(' and ')} (on ÷ off: time ratios)`);
  console.table(rows);
  // A partial run (--stores) prints only: the results file holds both stores.
  if (STORES.includes('file') && STORES.includes('postgres')) {
    mkdirSync(OUT, { recursive: true });
    writeFileSync(path.join(OUT, 'longterm.json'), `${JSON.stringify({ generatedAt: new Date().toISOString(), cores: os.cpus().length, loadAverage: os.loadavg(), rows }, null, 2)}\n`);
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
