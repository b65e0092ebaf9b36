/**
 * Memory observers (seed 001): in-process components that see every operation
 * before it is applied and may allow, veto or transform it.
 */
import { OperationSchema, type ChunkContent, type ChunkInput, type Operation, type OperationMeta } from './model';

export type ObserverVerdict = { action: 'allow' } | { action: 'veto'; reason: string } | { action: 'transform'; operation: Operation; note: string };

export interface MemoryObserver {
  name: string;
  observe(operation: Operation, meta: OperationMeta, ctx: { threadId: string }): ObserverVerdict;
}

export type ObserversOutcome =
  | { ok: true; operation: Operation; notes: string[] }
  /** `vetoedBy` is the observer's name. */
  | { ok: false; vetoedBy: string; reason: string };

/**
 * Runs observers in order. A veto stops the chain; a transform replaces the
 * operation for the observers after it, and its note is kept as
 * "<observer>: <note>" for the audit trail. An observer that throws or returns
 * an invalid operation vetoes: failing closed keeps, say, a broken redactor
 * from letting secrets through.
 */
export function runObservers(observers: readonly MemoryObserver[], operation: Operation, meta: OperationMeta, ctx: { threadId: string }): ObserversOutcome {
  let current = operation;
  const notes: string[] = [];
  for (const observer of observers) {
    let verdict: ObserverVerdict;
    try {
      verdict = observer.observe(current, meta, ctx);
    } catch (err) {
      return { ok: false, vetoedBy: observer.name, reason: `observer failed: ${err instanceof Error ? err.message : String(err)}` };
    }
    if (verdict.action === 'veto') return { ok: false, vetoedBy: observer.name, reason: verdict.reason };
    if (verdict.action === 'transform') {
      const parsed = OperationSchema.safeParse(verdict.operation);
      if (!parsed.success) return { ok: false, vetoedBy: observer.name, reason: 'observer returned an invalid operation' };
      current = parsed.data;
      notes.push(`${observer.name}: ${verdict.note}`);
    }
  }
  return { ok: true, operation: current, notes };
}

// ---------------------------------------------------------------------------
// Secret redaction

type Redact = (text: string) => string;

/** Key names whose values are secrets; the kind is what the value is redacted as. */
const SECRET_KEY = /(password|passwd|secret(?:[_-]?access)?(?:[_-]?key)?|api[_-]?key|access[_-]?key|token)$/i;

function keyKind(key: string): string {
  const k = key.toLowerCase();
  if (k.includes('pass')) return 'password';
  if (/api[_-]?key$/.test(k)) return 'api_key';
  if (k.endsWith('token')) return 'token';
  return 'secret';
}

const redacted = (kind: string) => `[REDACTED:${kind}]`;
const isRedacted = (value: string) => value.startsWith('[REDACTED:');

/**
 * Text patterns, most specific first. Each returns the replacement for a match,
 * or the match itself when a closer look says it is not a secret.
 */
const PATTERNS: { re: RegExp; replace: (match: string, ...groups: (string | undefined)[]) => string }[] = [
  {
    re: /-----BEGIN ((?:[A-Z0-9]+ )*)PRIVATE KEY-----[\s\S]*?-----END \1PRIVATE KEY-----/g,
    replace: () => redacted('private_key'),
  },
  // A block cut off before its END line (a truncated paste) still goes.
  { re: /-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----(?:\r?\n[A-Za-z0-9+/=]+(?=\r?\n|$))*/g, replace: () => redacted('private_key') },
  {
    // sk-… and sk-proj-…; real keys are long random strings, so a digit and a
    // long alphanumeric run tell them from words like "sk-learn".
    re: /(?<![\w-])sk-[A-Za-z0-9_-]{20,}/g,
    replace: (m) => (/\d/.test(m) && /[A-Za-z0-9]{16,}/.test(m.slice(3)) ? redacted('openai_key') : m),
  },
  { re: /\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/g, replace: () => redacted('aws_access_key') },
  { re: /\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b/g, replace: () => redacted('github_token') },
  { re: /\bxox[baprs]-[A-Za-z0-9-]{10,}/g, replace: () => redacted('slack_token') },
  {
    // A bearer token is long and has a digit or a token punctuation mark; "Bearer bonds" is not one.
    re: /\b(Bearer)(\s+)([A-Za-z0-9\-._~+/]{16,}=*)/gi,
    replace: (m, word = '', space = '', token = '') => (/[\d\-._~+/]/.test(token) ? `${word}${space}${redacted('bearer_token')}` : m),
  },
  {
    // key = value and key: value (also "key": "value"); the key stays, the value goes.
    // `==`, `=>` and `::` are code, not assignments.
    // Only the key word is matched (DB_PASSWORD matches at PASSWORD): a prefix group would make long words quadratic.
    re: /(password|passwd|secret(?:[_-]?access)?(?:[_-]?key)?|api[_-]?key|access[_-]?key|token)(["']?)(\s*)(:(?!:)|=(?![=>]))(\s*)(?:"([^"\n]+)"|'([^'\n]+)'|([^\s"'`,;:=<>[\]{}()]+))/gi,
    replace: (m, key = '', keyQuote = '', before = '', sep = '', after = '', dq, sq, bare) => {
      const quoted = dq ?? sq;
      const value = quoted ?? (bare ?? '').replace(/[.)]+$/, ''); // sentence punctuation, not part of the secret
      if (value === '' || isRedacted(value)) return m;
      if (!quoted && sep === ':' && !/[\d!@#$%^&*+/=~_-]/.test(value) && !/[a-z][A-Z]/.test(value)) return m; // prose: "the secret: patience"
      if (/token$/i.test(key) && /^\d+$/.test(value)) return m; // "token: 512" is a count
      const trailing = quoted ? '' : (bare ?? '').slice(value.length);
      const q = dq !== undefined ? '"' : sq !== undefined ? "'" : '';
      return `${key}${keyQuote}${before}${sep}${after}${q}${redacted(keyKind(key))}${q}${trailing}`;
    },
  },
];

function redactText(text: string, count: { n: number }): string {
  let out = text;
  for (const { re, replace } of PATTERNS) {
    out = out.replace(re, (...args: unknown[]) => {
      const match = args[0] as string;
      // Trailing replace() arguments are the offset and the whole string; only the groups are ours.
      const groups = args.slice(1, -2).map((g) => (typeof g === 'string' ? g : undefined));
      const replacement = replace(match, ...groups);
      if (replacement !== match) count.n++;
      return replacement;
    });
  }
  return out;
}

function redactJson(value: unknown, count: { n: number }, redact: Redact): unknown {
  if (typeof value === 'string') return redact(value);
  if (Array.isArray(value)) return value.map((v: unknown) => redactJson(v, count, redact));
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value)) {
    const kind = SECRET_KEY.test(key) ? keyKind(key) : null;
    // {"password": "hunter2"}: the key says the value is a secret, whatever it looks like.
    if (kind && typeof v === 'string' && v !== '' && !isRedacted(v)) {
      out[key] = redacted(kind);
      count.n++;
    } else if (kind === 'password' && typeof v === 'number') {
      out[key] = redacted(kind);
      count.n++;
    } else {
      out[key] = redactJson(v, count, redact);
    }
  }
  return out;
}

function redactContent(content: ChunkContent, count: { n: number }): ChunkContent {
  const redact: Redact = (text) => redactText(text, count);
  switch (content.kind) {
    case 'text':
      return { kind: 'text', text: redact(content.text) };
    case 'json':
      return { kind: 'json', data: redactJson(content.data, count, redact) };
    case 'image':
      // A URL can carry a key in its query string (?api_key=…).
      return content.alt === undefined ? { kind: 'image', url: redact(content.url) } : { kind: 'image', url: redact(content.url), alt: redact(content.alt) };
    case 'chunks':
      return content;
  }
}

const redactInput = (input: ChunkInput, count: { n: number }): ChunkInput => ({ ...input, content: redactContent(input.content, count) });

/** The operation with every secret in the content it brings replaced, and how many were replaced. */
export function redactOperation(operation: Operation): { operation: Operation; redactions: number } {
  const count = { n: 0 };
  let next: Operation;
  switch (operation.op) {
    case 'add':
      next = { ...operation, chunks: operation.chunks.map((c) => redactInput(c, count)) };
      break;
    case 'update':
      next = operation.patch.content ? { ...operation, patch: { ...operation.patch, content: redactContent(operation.patch.content, count) } } : operation;
      break;
    case 'replace':
    case 'batch_replace':
      next = { ...operation, chunk: redactInput(operation.chunk, count) };
      break;
    default:
      next = operation;
  }
  return { operation: count.n > 0 ? next : operation, redactions: count.n };
}

/**
 * Replaces secrets with "[REDACTED:<kind>]" before they enter memory: OpenAI
 * keys, AWS access key ids, GitHub and Slack tokens, bearer tokens, private key
 * blocks, and the values of password / secret / api key / token assignments
 * (the key name stays). Walks text, JSON (deeply; a secret-named key redacts its
 * string value) and image URLs of add, update, replace and batch_replace.
 */
export const redactSecrets: MemoryObserver = {
  name: 'redact-secrets',
  observe(operation) {
    const { operation: next, redactions } = redactOperation(operation);
    return redactions === 0 ? { action: 'allow' } : { action: 'transform', operation: next, note: `redacted ${redactions} secret(s)` };
  },
};
