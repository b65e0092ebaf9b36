/**
 * Memory context system benchmark (issue 3), printed, not asserted:
 *   1. reducer apply per operation on a 10,000-chunk thread;
 *   2. context rendering of that thread under an 8k-token budget (target ≤ 5 ms);
 *   3. bytes stored per operation over 10,000 operations (target: flat);
 *   4. append throughput per backend (in-memory, file, PostgreSQL);
 *   5. context rendering through the memory service with the audit of reads on and off, interleaved
 *      in the same run (in-memory and file store);
 *   6. a thread's creation in the file store with 0, 10,000 and 100,000 threads already in it (target: flat).
 * Run with `npm run bench` (after the orchestration benchmark) or `npx tsx bench/memory.ts [--ops N]`;
 * `--read-audit-only` runs only 5. Results: bench/results/memory.json (1–4, 6), memory-read-audit.json (5).
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client as PgClient } from 'pg';
import { seededIds } from '../src/memory/ids';
import type { Chunk, ChunkContent, MemoryState } from '../src/memory/model';
import { renderContext } from '../src/memory/parser';
import { createChunk, reduce, type ReduceContext } from '../src/memory/reducer';
import { countContentTokens, countTextTokens } from '../src/memory/tokens';
import { MemoryService } from '../src/store/memory-service';
import type { MemoryStore } from '../src/store/memory-store';
import { FileMemoryStore } from '../src/store/memory/file-store';
import { InMemoryMemoryStore } from '../src/store/memory/in-memory-store';
import { PostgresMemoryStore } from '../src/store/memory/postgres-store';

const args = process.argv.slice(2);
const opsArg = args.indexOf('--ops');
const OPS = opsArg >= 0 ? Number(args[opsArg + 1]) : 10_000;
const PG_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const READ_AUDIT_ONLY = args.includes('--read-audit-only');
const OUT = path.join(__dirname, 'results');
const header = () => ({ generatedAt: new Date().toISOString(), cores: os.cpus().length, node: process.version, loadAverage: os.loadavg() });

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
const ms = (start: bigint) => Number(process.hrtime.bigint() - start) / 1e6;
const WORDS = 'the agent called a tool and observed a result that it will use to plan its next step carefully'.split(' ');
const text = (i: number) => ({ kind: 'text' as const, text: `observation ${i}: ${Array.from({ length: 30 }, (_, k) => WORDS[(i + k) % WORDS.length]).join(' ')}` });
const meta = { origin: 'agent' as const, reason: 'bench', trigger: 'bench' };

function buildThread(n: number): { state: MemoryState; chunks: Map<string, Chunk>; ctx: ReduceContext } {
  const ids = seededIds(42);
  const ctx: ReduceContext = { now: new Date(0), newId: ids, countTokens: (c: ChunkContent) => countContentTokens(c), operationId: 'op_bench' };
  const chunks = new Map<string, Chunk>();
  const list: Chunk[] = [];
  for (let i = 0; i < n; i++) {
    const chunk = createChunk({ type: i % 3 === 0 ? 'action' : i % 3 === 1 ? 'action_response' : 'thinking', content: text(i) }, ctx);
    chunks.set(chunk.id, chunk);
    list.push(chunk);
  }
  const state: MemoryState = {
    id: ids('state'),
    threadId: 'thread_bench',
    parentStateId: null,
    seq: 0,
    chunkIds: list.map((c) => c.id),
    tokens: list.reduce((s, c) => s + c.tokens, 0),
    operationId: null,
    createdAt: new Date(0).toISOString(),
  };
  return { state, chunks, ctx };
}

function benchReducer(): { addUs: number; updateUs: number; deleteUs: number } {
  const { state, chunks, ctx } = buildThread(10_000);
  const time = (make: (s: MemoryState, i: number) => Parameters<typeof reduce>[2]) => {
    let s = state;
    const samples: number[] = [];
    for (let batch = 0; batch < 20; batch++) {
      const start = process.hrtime.bigint();
      for (let i = 0; i < 100; i++) {
        const r = reduce(s, chunks, make(s, batch * 100 + i), meta, ctx);
        if (!r.ok) throw new Error(r.refusal.message);
        for (const c of r.newChunks) chunks.set(c.id, c);
        s = r.state;
      }
      samples.push((ms(start) * 1000) / 100);
    }
    return median(samples);
  };
  return {
    addUs: time((_s, i) => ({ op: 'add', chunks: [{ type: 'thinking', content: text(i) }] })),
    updateUs: time((s, i) => ({ op: 'update', chunkId: s.chunkIds[i % s.chunkIds.length] ?? '', patch: { priority: 10 } })),
    deleteUs: time((s) => ({ op: 'delete', chunkIds: [s.chunkIds[s.chunkIds.length - 1] ?? ''] })),
  };
}

function benchRender(): { medianMs: number; tokens: number; included: number } {
  const { state, chunks } = buildThread(10_000);
  const list = state.chunkIds.map((id) => chunks.get(id)!);
  const samples: number[] = [];
  let last = renderContext(list, { budget: 8000, countTokens: countTextTokens });
  for (let i = 0; i < 21; i++) {
    const start = process.hrtime.bigint();
    last = renderContext(list, { budget: 8000, countTokens: countTextTokens });
    samples.push(ms(start));
  }
  return { medianMs: median(samples), tokens: last.tokens, included: last.includedChunkIds.length };
}

interface AuditedRenderResult {
  backend: string;
  samples: number;
  offMs: number;
  onMs: number;
  /** A second arm with the audit off: the difference between two identical arms, i.e. the noise. */
  controlMs: number;
  /** (on − off) / off and (control − off) / off, in percent. */
  overheadPercent: number;
  noisePercent: number;
  readsRecorded: number;
}

type Arm = 'on' | 'off' | 'control';
/** Every order of the three arms, used in turn so none always goes first. */
const ORDERS: Arm[][] = [
  ['on', 'off', 'control'],
  ['off', 'control', 'on'],
  ['control', 'on', 'off'],
  ['on', 'control', 'off'],
  ['off', 'on', 'control'],
  ['control', 'off', 'on'],
];

/**
 * The same 10,000-chunk thread rendered by memory services over one store: one recording each
 * rendering in the audit of reads, two not (the second a control arm that measures the noise).
 * Samples rotate the order of the arms so load changes hit all alike. The recorded reads are
 * written in the background as in production (so their cost lands on whichever arm runs next)
 * and counted at the end.
 */
async function benchAuditedRender(name: string, store: MemoryStore, samples = 61): Promise<AuditedRenderResult> {
  await store.setup();
  const services: Record<Arm, MemoryService> = {
    on: new MemoryService({ store, limits: { soft: 1e12, hard: 1e12 } }),
    off: new MemoryService({ store, limits: { soft: 1e12, hard: 1e12 }, auditReads: false }),
    control: new MemoryService({ store, limits: { soft: 1e12, hard: 1e12 }, auditReads: false }),
  };
  const chunks = Array.from({ length: 10_000 }, (_, i) => ({ type: i % 3 === 0 ? 'action' : i % 3 === 1 ? 'action_response' : 'thinking', content: text(i) }) as const);
  const { thread } = await services.on.createThread({ userId: 'bench', meta, chunks });
  const reader = { origin: 'agent' as const, reason: 'prompt of execution_plan', trigger: 'bench', runId: 'run-bench', stepId: 's1' };
  const times: Record<Arm, number[]> = { on: [], off: [], control: [] };
  const render = async (arm: Arm) => {
    const start = process.hrtime.bigint();
    await services[arm].context(thread.id, 8000, reader);
    return ms(start);
  };
  for (const arm of ORDERS[0] ?? []) await render(arm); // warm-up
  for (let i = 0; i < samples; i++) for (const arm of ORDERS[i % ORDERS.length] ?? []) times[arm].push(await render(arm));
  const readsRecorded = (await services.on.auditReads(thread.id, { limit: 1_000_000 })).length;
  await store.end();
  const [onMs, offMs, controlMs] = [median(times.on), median(times.off), median(times.control)];
  const percent = (x: number) => ((x - offMs) / offMs) * 100;
  return { backend: name, samples, offMs, onMs, controlMs, overheadPercent: percent(onMs), noisePercent: percent(controlMs), readsRecorded };
}

const dirBytes = (dir: string) => Number(execFileSync('du', ['-sb', dir]).toString().split('\t')[0]);

async function pgBytes(url: string): Promise<number> {
  const client = new PgClient({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ bytes: string }>(
      "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::text AS bytes FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND c.relkind = 'r' AND c.relname LIKE 'memory_%'",
    );
    return Number(rows[0]?.bytes ?? 0);
  } finally {
    await client.end();
  }
}

interface BackendResult {
  backend: string;
  ops: number;
  opsPerSecond: number;
  bytesPerOpByWindow: number[] | null;
}

/** Appends OPS one-chunk operations through the memory service, measuring throughput and storage growth per window. */
async function benchBackend(name: string, store: MemoryStore, bytes: (() => Promise<number>) | null, ops: number): Promise<BackendResult> {
  await store.setup();
  const memory = new MemoryService({ store, limits: { soft: 1e12, hard: 1e12 } });
  const { thread } = await memory.createThread({ userId: 'bench', meta });
  const window = Math.max(1, Math.floor(ops / 10));
  const perWindow: number[] = [];
  let before = bytes ? await bytes() : 0;
  const start = process.hrtime.bigint();
  let paused = 0n;
  for (let i = 0; i < ops; i++) {
    await memory.apply(thread.id, { op: 'add', chunks: [{ type: 'thinking', content: text(i) }] }, meta);
    if (bytes && (i + 1) % window === 0) {
      const p = process.hrtime.bigint();
      const now = await bytes();
      perWindow.push((now - before) / window);
      before = now;
      paused += process.hrtime.bigint() - p;
    }
  }
  const elapsed = Number(process.hrtime.bigint() - start - paused) / 1e9;
  await store.end();
  return { backend: name, ops, opsPerSecond: ops / elapsed, bytesPerOpByWindow: bytes ? perWindow : null };
}

/** 5: renderings with the audit of reads on and off, written to memory-read-audit.json. */
async function readAuditBench(): Promise<void> {
  const audited: AuditedRenderResult[] = [];
  const auditDir = mkdtempSync(path.join(os.tmpdir(), 'threadline-bench-audit-'));
  try {
    audited.push(await benchAuditedRender('in-memory', new InMemoryMemoryStore()));
    audited.push(await benchAuditedRender('file', new FileMemoryStore(auditDir)));
  } finally {
    rmSync(auditDir, { recursive: true, force: true });
  }
  const signed = (p: number) => `${p >= 0 ? '+' : ''}${p.toFixed(1)}%`;
  console.log('5. context rendering through the memory service, 10,000 chunks, 8k budget, audit of reads off vs on (interleaved, median):');
  for (const r of audited) {
    console.log(
      `   ${r.backend.padEnd(9)} off ${r.offMs.toFixed(2)} ms · on ${r.onMs.toFixed(2)} ms (${signed(r.overheadPercent)}) · ` +
        `off again ${r.controlMs.toFixed(2)} ms (${signed(r.noisePercent)}: the noise) — ${r.samples} each, ${r.readsRecorded} reads recorded`,
    );
  }
  mkdirSync(OUT, { recursive: true });
  writeFileSync(path.join(OUT, 'memory-read-audit.json'), `${JSON.stringify({ ...header(), auditedRender: audited }, null, 2)}\n`);
}

/**
 * 6. A thread's creation in the file store (each run and session makes one) with `existing` threads in its
 * index before it, written as that many creations leave it: the median of 21 creations, in ms.
 */
async function benchThreadCreation(root: string): Promise<{ existing: number; medianMs: number }[]> {
  const rows: { existing: number; medianMs: number }[] = [];
  for (const existing of [0, 10_000, 100_000]) {
    const where = path.join(root, `threads-${existing}`);
    const createdAt = new Date().toISOString();
    const lines: string[] = [];
    for (let i = 0; i < existing; i++) lines.push(`${JSON.stringify({ threadId: `thread_run-bench-${i.toString(16).padStart(10, '0')}`, userId: 'bench', createdAt })}\n`);
    mkdirSync(path.join(where, 'index'), { recursive: true });
    writeFileSync(path.join(where, 'index', 'threads.jsonl'), lines.join(''));
    const store = new FileMemoryStore(where);
    await store.setup();
    const service = new MemoryService({ store, limits: { soft: 1e12, hard: 1e12 } });
    const times: number[] = [];
    for (let i = 0; i < 21; i++) {
      const start = process.hrtime.bigint();
      await service.createThread({ userId: 'bench', meta, chunks: [{ type: 'user', content: text(i) }] });
      times.push(ms(start));
    }
    await store.end();
    rows.push({ existing, medianMs: median(times) });
  }
  return rows;
}

async function main(): Promise<void> {
  if (READ_AUDIT_ONLY) return readAuditBench();
  console.log(`memory benchmark — ${os.cpus().length} cores, node ${process.version}, ${OPS} operations per backend\n`);
  const reducer = benchReducer();
  console.log(`1. reducer apply on a 10,000-chunk thread (µs/op, median of 20×100): add ${reducer.addUs.toFixed(1)}, update ${reducer.updateUs.toFixed(1)}, delete ${reducer.deleteUs.toFixed(1)}`);
  const render = benchRender();
  console.log(
    `2. context rendering, 10,000 chunks, 8k budget: ${render.medianMs.toFixed(2)} ms (median of 21; ${render.included} chunks, ${render.tokens} tokens) — target ≤ 5 ms: ${render.medianMs <= 5 ? 'PASS' : 'MISS'}`,
  );

  const tmp = mkdtempSync(path.join(os.tmpdir(), 'threadline-bench-memory-'));
  const dbName = `threadline_bench_${process.pid}`;
  const admin = new PgClient({ connectionString: PG_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${dbName}`);
  const dbUrl = PG_URL.replace(/\/[^/]*$/, `/${dbName}`);
  const results: BackendResult[] = [];
  let threadCreation: { existing: number; medianMs: number }[] = [];
  try {
    threadCreation = await benchThreadCreation(tmp);
    results.push(await benchBackend('in-memory', new InMemoryMemoryStore(), null, OPS));
    const fileDir = path.join(tmp, 'file');
    results.push(await benchBackend('file', new FileMemoryStore(fileDir), async () => dirBytes(fileDir), OPS));
    results.push(await benchBackend('postgres', new PostgresMemoryStore(dbUrl), () => pgBytes(dbUrl), OPS));
  } finally {
    await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
    await admin.end();
    rmSync(tmp, { recursive: true, force: true });
  }
  console.log('3./4. appends through the memory service (one chunk per operation):');
  for (const r of results) {
    const windows = r.bytesPerOpByWindow;
    const growth = windows && windows.length > 1 ? (windows[windows.length - 1]! / windows[0]!).toFixed(2) : '—';
    console.log(
      `   ${r.backend.padEnd(9)} ${r.opsPerSecond.toFixed(0).padStart(6)} ops/s` +
        (windows ? `   bytes/op per ${r.ops / 10}-op window: ${windows.map((b) => b.toFixed(0)).join(' ')}   last/first: ${growth}` : ''),
    );
  }
  console.log(`6. a thread's creation in the file store (median of 21): ${threadCreation.map((r) => `${r.existing.toLocaleString('en')} threads before it ${r.medianMs.toFixed(2)} ms`).join(', ')}`);
  mkdirSync(OUT, { recursive: true });
  writeFileSync(path.join(OUT, 'memory.json'), `${JSON.stringify({ ...header(), ops: OPS, reducer, render, backends: results, threadCreation }, null, 2)}\n`);
  await readAuditBench();
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
