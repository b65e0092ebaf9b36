/**
 * Environment, parsed and validated once (DESIGN.md §4 "Environment").
 */
import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import type { TreeLimits } from './engine/contract';

const blankToUndefined = (v: unknown) => (v === '' ? undefined : v);
// A blank variable means unset (Number('') would be port 0).
const port = (fallback: number) => z.preprocess(blankToUndefined, z.coerce.number().int().min(0).max(65535).default(fallback));

export const ConfigSchema = z.object({
  PORT: port(3000),
  HOST: z.string().min(1).default('127.0.0.1'),
  TEMPORAL_ADDRESS: z.preprocess(blankToUndefined, z.string().min(1).optional()),
  TEMPORAL_NAMESPACE: z.string().min(1).default('default'),
  TEMPORAL_UI_PORT: port(8233),
  TASK_QUEUE: z.string().min(1).default('threadline'),
  /** Temporal Cloud (or any server that wants one): an API key, sent as a bearer token over TLS. */
  TEMPORAL_API_KEY: z.preprocess(blankToUndefined, z.string().min(1).optional()),
  /** mTLS: the client certificate and its key (PEM files); both or neither. */
  TEMPORAL_TLS_CERT: z.preprocess(blankToUndefined, z.string().min(1).optional()),
  TEMPORAL_TLS_KEY: z.preprocess(blankToUndefined, z.string().min(1).optional()),
  /** A CA (PEM file) to trust for the server's certificate instead of the system's (self-hosted TLS). */
  TEMPORAL_TLS_CA: z.preprocess(blankToUndefined, z.string().min(1).optional()),
  /** `true`: TLS with the system's CAs and no client certificate; implied by any of the above. */
  TEMPORAL_TLS: z.preprocess(blankToUndefined, z.enum(['true', 'false']).optional()),
  /**
   * Worker Deployment Versioning (src/temporal/deployment.ts): the deployment every worker is a version of.
   * Set, runs are pinned to the version that started them and deploys never break a waiting run; unset, a
   * run planned on other code fails as stale at its next step.
   */
  WORKER_DEPLOYMENT: z.preprocess(blankToUndefined, z.string().min(1).max(200).optional()),
  /** The worker's build id under versioning; unset: derived from its model, prompts and tools (equal code, equal id). */
  WORKER_BUILD_ID: z.preprocess(blankToUndefined, z.string().min(1).max(200).optional()),
  /** `auto`: a versioned worker makes its version the deployment's current one once it polls; `off`: the operator does. */
  WORKER_PROMOTE: z.enum(['auto', 'off']).default('auto'),
  DATA_DIR: z.string().min(1).default('./data'),
  OPENAI_API_KEY: z.preprocess(blankToUndefined, z.string().optional()),
  OPENAI_BASE_URL: z.preprocess(blankToUndefined, z.string().url().optional()),
  AGENT_MODEL: z.string().min(1).default('gpt-5-mini'),
  /**
   * Embedding model of an OpenAI-compatible `/embeddings` endpoint: when set, long-term memory
   * stores a dense vector per record and dense similarity joins retrieval; unset, nothing changes
   * and nothing is downloaded or called.
   */
  EMBEDDING_MODEL: z.preprocess(blankToUndefined, z.string().min(1).optional()),
  /** Server of the embeddings endpoint; OPENAI_BASE_URL when unset. */
  EMBEDDING_BASE_URL: z.preprocess(blankToUndefined, z.string().url().optional()),
  /** Key of the embeddings server; OPENAI_API_KEY when unset. */
  EMBEDDING_API_KEY: z.preprocess(blankToUndefined, z.string().optional()),
  /** Vector length asked of models that can shorten theirs (`dimensions`); the model's own when unset. */
  EMBEDDING_DIMENSIONS: z.preprocess(blankToUndefined, z.coerce.number().int().min(1).max(16_384).optional()),
  /** Timeout of one embeddings request. */
  EMBEDDING_TIMEOUT_MS: z.preprocess(blankToUndefined, z.coerce.number().int().positive().default(20_000)),
  /** Timeout of one HTTP request to the model server. */
  MODEL_TIMEOUT_MS: z.coerce.number().int().positive().default(60_000),
  /**
   * Live tokens (issue 29): `on` asks the model server to stream the replies of runs' calls (`stream: true`), and their
   * human-readable fields reach the runs' event streams as `token` events while the call runs; `off` sends every request
   * without streaming, as before. A server that answers a streaming request with plain JSON works either way.
   */
  MODEL_STREAM: z.enum(['on', 'off']).default('on'),
  /** Replies that fail validation are sent back with the error this many times in total before the run fails. */
  MODEL_REPAIR_ATTEMPTS: z.coerce.number().int().min(1).max(10).default(3),
  /** Steps a run may execute before it fails; bounds runaway replanning. */
  MAX_STEPS: z.coerce.number().int().min(1).max(500).default(25),
  /** Nesting limit of sub-plans (a top-level run is depth 0). */
  MAX_SUBPLAN_DEPTH: z.coerce.number().int().min(0).max(5).default(2),
  /** Tree runs (seed 003): levels of a task tree, the root counting as 1; a task at the last level may not plan. */
  MAX_TREE_DEPTH: z.coerce.number().int().min(1).max(8).default(4),
  /** Tree runs: subtasks of one task. */
  MAX_TREE_FANOUT: z.coerce.number().int().min(1).max(50).default(8),
  /** Tree runs: ReAct iterations of one task before it is aborted. */
  MAX_ITERATIONS: z.coerce.number().int().min(1).max(100).default(10),
  /** Tree runs: identical tool calls in a row after which the model is asked whether the task spins (a confirmed spin warns). */
  SPIN_WARN_AT: z.coerce.number().int().min(2).max(50).default(3),
  /** Tree runs: identical calls in a row from which it is asked again; a second confirmed spin aborts the task. */
  SPIN_STOP_AT: z.coerce.number().int().min(2).max(100).default(5),
  /**
   * Tree runs: self-reflection (seed 003's REFLECT phase) — `off`; `failures`: after a failed action; `periodic`: also a
   * stock-taking every REFLECTION_EVERY iterations of a task and once more before its iteration limit.
   */
  REFLECTION: z.enum(['off', 'failures', 'periodic']).default('failures'),
  /** Tree runs with periodic reflection: a task takes stock after every this many iterations (0: only before its limit). */
  REFLECTION_EVERY: z.coerce.number().int().min(0).max(100).default(5),
  /**
   * Tools whose calls wait for a person's approval before they run: names or patterns, comma-separated
   * (`*` for all, `github.*` for an MCP server's, `agent.*` for sub-agents). A run's `approval` adds to it.
   */
  TOOL_APPROVAL: z.preprocess(blankToUndefined, z.string().max(4000).optional()),
  /** Schedules (`/v1/schedules`) one user may have. */
  SCHEDULES_PER_USER: z.coerce.number().int().min(0).max(10_000).default(50),
  /** Folder of blueprint files (plan templates, seed 003 §9); the repository's `blueprints/` when unset. */
  BLUEPRINTS_DIR: z.preprocess(blankToUndefined, z.string().optional()),
  /** Folder of skills (folders holding a SKILL.md); the repository's `skills/` when unset. */
  SKILLS_DIR: z.preprocess(blankToUndefined, z.string().optional()),
  /** The MCP servers whose tools runs may call: a JSON file in the `mcpServers` format; `DATA_DIR/mcp.json` when unset, none when that file does not exist. */
  MCP_CONFIG: z.preprocess(blankToUndefined, z.string().optional()),
  /** Named sub-agent profiles (`{"agents": [...]}`), offered to planners as tools `agent.<name>`; `DATA_DIR/agents.json` when unset, none when that file does not exist. */
  AGENTS_CONFIG: z.preprocess(blankToUndefined, z.string().optional()),
  /**
   * Tools whose state changes outside the conversation (seed 000's live state), by name or pattern, comma-separated:
   * `account_balance, bank.*` (an MCP server's tools are `<server>.<tool>`). Before planning a goal that concerns one,
   * a run calls it (with no arguments) for a fresh snapshot. Adds to tools that declare themselves live. @default none
   */
  LIVE_TOOLS: z.preprocess(
    blankToUndefined,
    z
      .string()
      .regex(/^\s*[\w.*-]+(\s*,\s*[\w.*-]+)*\s*$/, 'LIVE_TOOLS is a comma-separated list of tool names or patterns with *')
      .optional(),
  ),
  /** Time one MCP tool call may take before it fails (an error observation); a server's `timeoutMs` overrides it. At most 10 min, within the step activity's 12. */
  MCP_CALL_TIMEOUT_MS: z.coerce.number().int().positive().max(600_000).default(60_000),
  /** Tree runs wait for a person to review their plan: `always`, or only when a run asks (`review: true`). */
  PLAN_REVIEW: z.enum(['always', 'on_request']).default('on_request'),
  /** `react_mem` (seed 002): runs start with what long-term memory holds and get the memory tools; `react`: neither. */
  MEMORY_MANAGER: z.enum(['react', 'react_mem']).default('react_mem'),
  /** react_mem: after invocations, a `memory_extraction` pass (off the answer path) and, at a conversation's end, `memory_promotion`. */
  MEMORY_EXTRACTION: z.enum(['on', 'off']).default('on'),
  /** Extraction waits until no invocation of the user has ended for this long, so a burst is one pass per conversation. */
  MEMORY_EXTRACTION_DEBOUNCE_MS: z.coerce.number().int().min(0).max(600_000).default(2_000),
  /** …but starts at most this long after the first invocation of the burst ended. */
  MEMORY_EXTRACTION_MAX_DELAY_MS: z.coerce.number().int().min(0).max(3_600_000).default(30_000),
  /** A session with no message for this long, and no run open, ends (its conversation is promoted); 0: never. */
  SESSION_IDLE_MINUTES: z.coerce.number().min(0).max(525_600).default(1440),
  /** Memory storage backend: the embedded file store under DATA_DIR, PostgreSQL (DATABASE_URL), or in-process memory. */
  MEMORY_STORE: z.enum(['file', 'postgres', 'memory']).default('file'),
  /** PostgreSQL connection string, e.g. postgres://postgres@127.0.0.1:5432/threadline (needed when MEMORY_STORE=postgres). */
  DATABASE_URL: z.preprocess(blankToUndefined, z.string().optional()),
  /** Default soft token limit of a memory thread: past it, the thread is compacted by retention class. */
  MEMORY_SOFT_LIMIT: z.coerce.number().int().positive().default(6000),
  /** Default hard token limit: nothing rendered for a model from a thread ever exceeds it. */
  MEMORY_HARD_LIMIT: z.coerce.number().int().positive().default(8000),
  /**
   * Seed 002's option A: a run's older steps are summarized once this many have gathered since the
   * last summary, whatever the thread's size (the newest four stay raw); 0 (off) leaves it to the
   * soft limit and to the agent's `compress_memory`.
   */
  MEMORY_COMPRESS_EVERY: z.coerce.number().int().min(0).max(1000).default(0),
  /**
   * Days a run's step journals are kept after their last entry (src/store/journal-retention.ts): a
   * worker removes older ones at its start and daily. 0 keeps them for good.
   */
  JOURNAL_RETENTION_DAYS: z.coerce.number().min(0).max(36_500).default(7),
  /**
   * Runs the worker keeps loaded between their workflow tasks (Temporal's sticky cache); a run
   * evicted from it is replayed from its history when it resumes. Bounds the worker's memory;
   * the default follows the machine's memory (cachedWorkflowsFor).
   */
  WORKER_CACHED_WORKFLOWS: z.preprocess(blankToUndefined, z.coerce.number().int().min(0).max(100_000).optional()),
  /**
   * `host:port` where the worker serves its Temporal SDK metrics for Prometheus (`/metrics`): workflow
   * task latencies, sticky cache hits and misses, poll and slot counts. Unset: no metrics endpoint.
   */
  WORKER_METRICS_ADDRESS: z.preprocess(
    blankToUndefined,
    z
      .string()
      .regex(/^[^\s:]+:\d{1,5}$/, 'expected host:port, e.g. 0.0.0.0:9464')
      .optional(),
  ),
  /**
   * `off`: the worker's workflow threads capture no stack per promise (the SDK's hook, skipped by
   * patches/@temporalio+worker+*.patch), so the Web UI's Stack Trace tab answers that stack traces
   * are off. Since the same patch made the hook cheap, on and off cost a plan step alike (bench/results/HISTORY.md).
   */
  WORKFLOW_STACK_TRACES: z.enum(['on', 'off']).default('on'),
  /**
   * Users whose long-term index (records and full-text indexes, MEMORY_STORE=file) a process keeps
   * loaded; past it the least recently used is dropped and rebuilt from its files when next used.
   */
  LONGTERM_CACHED_USERS: z.coerce.number().int().min(1).max(100_000).default(100),
  /** Base URL of the Temporal Web UI, for links printed by the API and the chat client. */
  TEMPORAL_UI_URL: z.preprocess(blankToUndefined, z.string().url().optional()),
  /** `apikey`: every API request needs `Authorization: Bearer <key>`; `none` is allowed only while HOST is a loopback address. */
  THREADLINE_AUTH: z.enum(['none', 'apikey']).default('none'),
  /** A key that is an admin from the start (to create the first keys); compared in constant time, never stored. */
  THREADLINE_ADMIN_KEY: z.preprocess(blankToUndefined, z.string().optional()),
  /** Runs one user may start per minute (0: no limit). @default 120 with THREADLINE_AUTH=apikey, else 0 */
  RATE_LIMIT_RUNS_PER_MINUTE: z.preprocess(blankToUndefined, z.coerce.number().int().min(0).optional()),
  /** Session messages one user may send per minute (0: no limit). @default 600 with apikey, else 0 */
  RATE_LIMIT_MESSAGES_PER_MINUTE: z.preprocess(blankToUndefined, z.coerce.number().int().min(0).optional()),
  /** Event streams (SSE) one user may hold open at once (0: no limit). @default 20 with apikey, else 0 */
  MAX_STREAMS_PER_USER: z.preprocess(blankToUndefined, z.coerce.number().int().min(0).optional()),
  /** Sessions one user may create per minute (0: no limit). @default 120 with apikey, else 0 */
  RATE_LIMIT_SESSIONS_PER_MINUTE: z.preprocess(blankToUndefined, z.coerce.number().int().min(0).optional()),
  /** Sessions one user may have open at once, each a workflow idling up to SESSION_IDLE_MINUTES (0: no limit). @default 500 with apikey, else 0 */
  MAX_OPEN_SESSIONS_PER_USER: z.preprocess(blankToUndefined, z.coerce.number().int().min(0).optional()),
  /** Long-term memory imports (up to 10 MB each) one user may make per hour (0: no limit). @default 240 with apikey, else 0 */
  RATE_LIMIT_IMPORTS_PER_HOUR: z.preprocess(blankToUndefined, z.coerce.number().int().min(0).optional()),
  /** Conversations of one import the background extraction reads (0: all); the rest stay searchable. @default 50 with apikey, else 0 */
  IMPORT_EXTRACTION_MAX_CONVERSATIONS: z.preprocess(blankToUndefined, z.coerce.number().int().min(0).optional()),
  /** Long-term memory requests that embed text (searches, `q=` listings, stated facts) one user may make per minute (0: no limit). @default 600 with apikey, else 0 */
  RATE_LIMIT_SEARCHES_PER_MINUTE: z.preprocess(blankToUndefined, z.coerce.number().int().min(0).optional()),
  /** Codec calls (`/v1/codec/*`) one admin key may make per minute (0: no limit). @default 600 with apikey, else 0 */
  RATE_LIMIT_CODEC_PER_MINUTE: z.preprocess(blankToUndefined, z.coerce.number().int().min(0).optional()),
  /**
   * Tokens (prompt + completion, embeddings included) one user may use per calendar month (UTC): past it new
   * runs and messages are refused, and a run's next model call fails it (0: no budget).
   */
  USER_TOKEN_BUDGET: z.coerce.number().int().min(0).default(0),
  /**
   * Seals every payload in Temporal history with AES-256-GCM: `[name:]key`, the key 32 bytes as base64
   * or hex (`openssl rand -base64 32`) or a passphrase (stretched with scrypt); payloads carry the name.
   */
  THREADLINE_ENCRYPTION_KEY: z.preprocess(blankToUndefined, z.string().optional()),
  /** Keys used before a rotation, comma-separated (each `[name:]key`): they still open what they sealed. */
  THREADLINE_ENCRYPTION_OLD_KEYS: z.preprocess(blankToUndefined, z.string().optional()),
  /** Payloads larger than this many bytes go to the blob store, and history keeps a reference (0: off). */
  CLAIM_CHECK_THRESHOLD: z.coerce
    .number()
    .int()
    .min(0)
    .default(128 * 1024),
  /** Blobs neither written nor read for this many days are deleted by the worker's daily sweep: keep it above the namespace's retention. */
  CLAIM_CHECK_RETENTION_DAYS: z.coerce.number().positive().default(30),
  /**
   * A tool result larger than this many bytes (as JSON) is stored whole in the blob store; the step's
   * journal and memory keep its first 16,000 characters and a reference. Capped at 4 MiB: memory
   * tokenizes and compacts what it keeps, and bigger texts block a step past its heartbeat timeout.
   */
  MAX_TOOL_RESULT_BYTES: z.coerce
    .number()
    .int()
    .min(16 * 1024)
    .max(4 * 1024 * 1024)
    .default(1024 * 1024),
  /** Level of the API's and the worker's process log (pino, JSON lines on stdout). */
  LOG_LEVEL: z.preprocess(blankToUndefined, z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info')),
  /** OTLP/HTTP endpoint traces are exported to (the standard OpenTelemetry variable); no tracing at all when unset. */
  OTEL_EXPORTER_OTLP_ENDPOINT: z.preprocess(blankToUndefined, z.string().url().optional()),
});
export type Config = z.infer<typeof ConfigSchema> & { temporalAddress: string; dataDir: string; uiUrl: string; workerCachedWorkflows: number };

/**
 * The default workflow cache: one run per 512 MiB of the machine's memory, 20 to 500. A loaded run
 * costs the worker ~0.4 MB (bench/many-runs.ts: its heap in the workflow thread), and more while
 * its calls run (local calls run inside its workflow task); a run evicted from the cache costs one
 * replay of its history (~40 ms) when it resumes. Per 256 MiB, the many-runs benchmark's worker
 * peaked at 717 MB on 24 GiB; per 512 MiB, at 598 MB, and finished sooner.
 */
export function cachedWorkflowsFor(totalMemoryBytes: number): number {
  return Math.min(500, Math.max(20, Math.floor(totalMemoryBytes / 2 ** 29)));
}

/** Parses `env` (default `process.env`); throws a readable error listing every bad variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  // A blank variable (`X=` in a .env or compose file) is an unset one, for every variable: its default,
  // never an empty name or a number read as 0 (a blank MAX_SUBPLAN_DEPTH would turn sub-plans off).
  const parsed = ConfigSchema.safeParse(Object.fromEntries(Object.entries(env).filter(([, v]) => v !== '')));
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new Error(`Invalid configuration:\n${lines.join('\n')}`);
  }
  const c = parsed.data;
  if (c.MEMORY_SOFT_LIMIT > c.MEMORY_HARD_LIMIT) {
    throw new Error(`Invalid configuration:\n  MEMORY_SOFT_LIMIT (${c.MEMORY_SOFT_LIMIT}) must not exceed MEMORY_HARD_LIMIT (${c.MEMORY_HARD_LIMIT})`);
  }
  if (c.MEMORY_STORE === 'postgres' && !c.DATABASE_URL) {
    throw new Error('Invalid configuration:\n  DATABASE_URL: required when MEMORY_STORE=postgres');
  }
  if (c.EMBEDDING_MODEL && !(c.EMBEDDING_BASE_URL ?? c.OPENAI_BASE_URL) && !(c.EMBEDDING_API_KEY ?? c.OPENAI_API_KEY)) {
    throw new Error(
      'Invalid configuration:\n  EMBEDDING_MODEL is set but there is no embeddings server: set EMBEDDING_BASE_URL (or OPENAI_BASE_URL) for an OpenAI-compatible server, or EMBEDDING_API_KEY (or OPENAI_API_KEY) for api.openai.com',
    );
  }
  return {
    ...c,
    temporalAddress: c.TEMPORAL_ADDRESS ?? '127.0.0.1:7233',
    dataDir: path.resolve(c.DATA_DIR),
    uiUrl: c.TEMPORAL_UI_URL ?? `http://127.0.0.1:${c.TEMPORAL_UI_PORT}`,
    workerCachedWorkflows: c.WORKER_CACHED_WORKFLOWS ?? cachedWorkflowsFor(os.totalmem()),
  };
}

/** Link to a run in the Temporal Web UI. */
export function runUiUrl(config: Pick<Config, 'uiUrl' | 'TEMPORAL_NAMESPACE'>, runId: string): string {
  return `${config.uiUrl}/namespaces/${encodeURIComponent(config.TEMPORAL_NAMESPACE)}/workflows/${encodeURIComponent(runId)}`;
}

/** Per-user API limits: on by default once the API is authenticated (deployed), off for a local loopback API. */
export function apiLimitsOf(config: Pick<Config, 'THREADLINE_AUTH'> & Partial<Pick<Config, ApiLimitVariable>>) {
  const on = config.THREADLINE_AUTH === 'apikey';
  const limit = (variable: ApiLimitVariable, deployed: number) => config[variable] ?? (on ? deployed : 0);
  return {
    runsPerMinute: limit('RATE_LIMIT_RUNS_PER_MINUTE', 120),
    messagesPerMinute: limit('RATE_LIMIT_MESSAGES_PER_MINUTE', 600),
    streamsPerUser: limit('MAX_STREAMS_PER_USER', 20),
    sessionsPerMinute: limit('RATE_LIMIT_SESSIONS_PER_MINUTE', 120),
    openSessionsPerUser: limit('MAX_OPEN_SESSIONS_PER_USER', 500),
    importsPerHour: limit('RATE_LIMIT_IMPORTS_PER_HOUR', 240),
    extractedPerImport: limit('IMPORT_EXTRACTION_MAX_CONVERSATIONS', 50),
    searchesPerMinute: limit('RATE_LIMIT_SEARCHES_PER_MINUTE', 600),
    codecPerMinute: limit('RATE_LIMIT_CODEC_PER_MINUTE', 600),
  };
}
type ApiLimitVariable =
  | 'RATE_LIMIT_RUNS_PER_MINUTE'
  | 'RATE_LIMIT_MESSAGES_PER_MINUTE'
  | 'MAX_STREAMS_PER_USER'
  | 'RATE_LIMIT_SESSIONS_PER_MINUTE'
  | 'MAX_OPEN_SESSIONS_PER_USER'
  | 'RATE_LIMIT_IMPORTS_PER_HOUR'
  | 'IMPORT_EXTRACTION_MAX_CONVERSATIONS'
  | 'RATE_LIMIT_SEARCHES_PER_MINUTE'
  | 'RATE_LIMIT_CODEC_PER_MINUTE';

/** The tree engine's limits, as runs carry them (workflow input) and its activities check them. */
export function treeLimitsOf(config: TreeConfig): TreeLimits {
  return {
    maxDepth: config.MAX_TREE_DEPTH,
    maxFanout: config.MAX_TREE_FANOUT,
    maxIterations: config.MAX_ITERATIONS,
    spin: { warnAt: config.SPIN_WARN_AT, stopAt: Math.max(config.SPIN_STOP_AT, config.SPIN_WARN_AT + 1) },
    reflection: { mode: config.REFLECTION, every: config.REFLECTION_EVERY },
    // Seed 003: a loop stopped at its limit is summarised.
    summarizeAtLimit: true,
  };
}
/** A configuration that may lack the reflection settings (built by hand, in tests) gets their defaults. */
export function withTreeDefaults<C extends Omit<TreeConfig, 'REFLECTION' | 'REFLECTION_EVERY'> & Partial<Pick<TreeConfig, 'REFLECTION' | 'REFLECTION_EVERY'>>>(config: C): C & TreeConfig {
  const shape = ConfigSchema.shape;
  return { ...config, REFLECTION: config.REFLECTION ?? shape.REFLECTION.parse(undefined), REFLECTION_EVERY: config.REFLECTION_EVERY ?? shape.REFLECTION_EVERY.parse(undefined) };
}
export type TreeConfig = Pick<Config, 'MAX_TREE_DEPTH' | 'MAX_TREE_FANOUT' | 'MAX_ITERATIONS' | 'SPIN_WARN_AT' | 'SPIN_STOP_AT' | 'REFLECTION' | 'REFLECTION_EVERY'>;

/** The memory workflow's timing (react_mem with MEMORY_EXTRACTION=on), or null when the passes are off. */
export function memoryPassSettingsOf(config: Pick<Config, 'MEMORY_MANAGER' | 'MEMORY_EXTRACTION' | 'MEMORY_EXTRACTION_DEBOUNCE_MS' | 'MEMORY_EXTRACTION_MAX_DELAY_MS'>) {
  if (config.MEMORY_MANAGER !== 'react_mem' || config.MEMORY_EXTRACTION !== 'on') return null;
  // Idle for 10 minutes, the workflow ends; the next job starts it again. A user's runs ending one by one
  // cost it ~10 events each, and a workflow task that finds it out of the cache replays all of them:
  // 2,790 events took 1.4–3 s to replay here, so it hands over at 1,000 (~0.5 s), every ~100 runs.
  return {
    debounceMs: config.MEMORY_EXTRACTION_DEBOUNCE_MS,
    maxDelayMs: Math.max(config.MEMORY_EXTRACTION_MAX_DELAY_MS, config.MEMORY_EXTRACTION_DEBOUNCE_MS),
    idleMs: 600_000,
    handOverAfterEvents: 1_000,
  };
}
