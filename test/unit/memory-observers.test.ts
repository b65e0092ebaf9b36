/** Memory observers: vetoes and transforms in order, and the secret redactor that keeps keys and passwords out of memory. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ChunkContent, Operation, OperationMeta } from '../../src/memory/model';
import { redactSecrets, runObservers, type MemoryObserver, type ObserverVerdict } from '../../src/memory/observers';

const meta: OperationMeta = { origin: 'agent', reason: 'step finished', trigger: 'step s1 completed' };
const ctx = { threadId: 'thread_1' };
const addText = (text: string): Operation => ({ op: 'add', chunks: [{ type: 'action_response', content: { kind: 'text', text } }] });

function observer(name: string, verdict: (op: Operation) => ObserverVerdict, seen: string[] = []): MemoryObserver {
  return {
    name,
    observe(op) {
      seen.push(name);
      return verdict(op);
    },
  };
}

test('observers run in order; all allowing leaves the operation as it was', () => {
  const seen: string[] = [];
  const op = addText('hello');
  const out = runObservers([observer('a', () => ({ action: 'allow' }), seen), observer('b', () => ({ action: 'allow' }), seen)], op, meta, ctx);
  assert.deepEqual(out, { ok: true, operation: op, notes: [] });
  assert.deepEqual(seen, ['a', 'b']);
});

test('a veto stops the chain and says who vetoed and why', () => {
  const seen: string[] = [];
  const out = runObservers(
    [observer('a', () => ({ action: 'allow' }), seen), observer('guard', () => ({ action: 'veto', reason: 'read-only thread' }), seen), observer('c', () => ({ action: 'allow' }), seen)],
    addText('x'),
    meta,
    ctx,
  );
  assert.deepEqual(out, { ok: false, vetoedBy: 'guard', reason: 'read-only thread' });
  assert.deepEqual(seen, ['a', 'guard'], 'observers after a veto do not run');
});

test('a transform replaces the operation for later observers, and its note is collected with the observer name', () => {
  const received: Operation[] = [];
  const upper = observer('upper', (op) => ({
    action: 'transform',
    operation: addText(op.op === 'add' && op.chunks[0]?.content.kind === 'text' ? op.chunks[0].content.text.toUpperCase() : ''),
    note: 'shouted',
  }));
  const spy = observer('spy', (op) => {
    received.push(op);
    return { action: 'transform', operation: { ...op, position: 0 } as Operation, note: 'moved to the top' };
  });
  const out = runObservers([upper, spy], addText('hello'), meta, ctx);
  assert.deepEqual(received, [addText('HELLO')]);
  assert.ok(out.ok);
  assert.deepEqual(out.operation, { ...addText('HELLO'), position: 0 });
  assert.deepEqual(out.notes, ['upper: shouted', 'spy: moved to the top']);
});

test('an observer that throws or returns an invalid operation vetoes (fail closed)', () => {
  const boom = observer('boom', () => {
    throw new Error('regex exploded');
  });
  assert.deepEqual(runObservers([boom], addText('x'), meta, ctx), { ok: false, vetoedBy: 'boom', reason: 'observer failed: regex exploded' });
  const bad = observer('bad', () => ({ action: 'transform', operation: { op: 'add', chunks: [] } as Operation, note: 'oops' }));
  const out = runObservers([bad], addText('x'), meta, ctx);
  assert.equal(out.ok, false);
  assert.equal(out.ok ? '' : out.vetoedBy, 'bad');
});

// ---------------------------------------------------------------------------
// redactSecrets

function redactText(text: string): { text: string; note: string | null } {
  const verdict = redactSecrets.observe(addText(text), meta, ctx);
  if (verdict.action === 'allow') return { text, note: null };
  assert.equal(verdict.action, 'transform');
  if (verdict.action !== 'transform' || verdict.operation.op !== 'add') throw new Error('expected a transformed add');
  const content = verdict.operation.chunks[0]?.content;
  return { text: content?.kind === 'text' ? content.text : '', note: verdict.note };
}

const OPENAI = 'sk-' + 'A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8S9t0U1v2W3x4';
const OPENAI_PROJ = 'sk-proj-' + 'Xy7_aBcDeFgHiJkLmNoPqRsTuV-1234567890abcdefGHIJ';
const AWS = 'AKIA' + 'IOSFODNN7EXAMPLE';
const GH = 'ghp_' + 'abcdefghijklmnopqrstuvwxyzABCDEF0123';
const GHO = 'gho_' + '0123456789abcdefghijklmnopqrstuvwxyzAB';
const GH_PAT = 'github_pat_' + '11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz';
const SLACK = 'xoxb-' + '1234567890-0987654321-AbCdEfGhIjKlMnOp';
const JWT = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U';
const PEM = ['-----BEGIN RSA PRIVATE KEY-----', 'MIIEowIBAAKCAQEA7bq98Fh3kLs0ZtW', 'Q2bX9u4oZ1x==', '-----END RSA PRIVATE KEY-----'].join('\n');

test('each kind of secret is replaced by [REDACTED:<kind>], and the note counts them', () => {
  const cases: [string, string][] = [
    [`my key is ${OPENAI} ok`, 'my key is [REDACTED:openai_key] ok'],
    [`OPENAI_API_KEY=${OPENAI_PROJ}`, 'OPENAI_API_KEY=[REDACTED:openai_key]'],
    [`aws id ${AWS}.`, 'aws id [REDACTED:aws_access_key].'],
    [`token ${GH} and ${GHO}`, 'token [REDACTED:github_token] and [REDACTED:github_token]'],
    [`pat: ${GH_PAT}`, 'pat: [REDACTED:github_token]'],
    [`slack ${SLACK}`, 'slack [REDACTED:slack_token]'],
    [`Authorization: Bearer ${JWT}`, 'Authorization: Bearer [REDACTED:bearer_token]'],
    [`curl -H "authorization: bearer abcdef0123456789abcdef"`, 'curl -H "authorization: bearer [REDACTED:bearer_token]"'],
    [`key:\n${PEM}\nthanks`, 'key:\n[REDACTED:private_key]\nthanks'],
    ['-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\nMIIEvQIBAD', '[REDACTED:private_key]'],
    ['password=hunter2', 'password=[REDACTED:password]'],
    ['DB_PASSWORD = "correct horse battery staple"', 'DB_PASSWORD = "[REDACTED:password]"'],
    ['the passwd: s3cr3t!', 'the passwd: [REDACTED:password]'],
    ['client_secret: abc_def_123', 'client_secret: [REDACTED:secret]'],
    ['api_key=abcdef', 'api_key=[REDACTED:api_key]'],
    ['{"apiKey": "live-9f8e7d"}', '{"apiKey": "[REDACTED:api_key]"}'],
    ["access_token: 'ya29.a0AfH6SMB'", "access_token: '[REDACTED:token]'"],
    ['Password: hunter2.', 'Password: [REDACTED:password].'],
  ];
  for (const [input, expected] of cases) {
    const out = redactText(input);
    assert.equal(out.text, expected, input);
    assert.equal(out.note, `redacted ${expected.split('[REDACTED:').length - 1} secret(s)`, input);
  }
  assert.equal(redactText(`${OPENAI} ${AWS} password=x1`).note, 'redacted 3 secret(s)');
});

test('ordinary words, numbers and code are left alone', () => {
  const negatives = [
    'The quick brown fox jumps over the lazy dog.',
    'We used sk-learn and scikit-learn for the model; task-management is next.',
    'sk-learn-is-a-python-library-for-ml-2024 is not a key',
    'Ask about AKIA today; AKIAPOLICY is a word-ish thing.',
    'The bearer of bad news arrived. Bearer bonds are old.',
    'Bearer internationalization',
    'max_tokens=512 and tokens: 800, total tokens 1200',
    'token: 4096',
    'The secret: patience.',
    'Password: required (at least 8 characters)',
    'Each token: a piece of text.',
    'if (token == expected) return token => token;',
    'apiKey: string; password: string;',
    'The secretary said the passwords policy changed on 2024-05-01.',
    '12*7 = 84, sqrt(16) / 4 = 1, phone 555-1234',
    'github_pattern and ghp_short are fine',
    'xoxo hugs',
    '-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8A\n-----END PUBLIC KEY-----',
  ];
  for (const text of negatives) assert.deepEqual(redactText(text), { text, note: null }, text);
});

test('JSON content is walked deeply: secret-named keys lose their values, strings are scanned, other values stay', () => {
  const data = {
    user: 'ada',
    password: 'hunter2',
    config: { api_key: 'abc', maxTokens: 4096, tokens: 12, nested: [{ token: 'tok-123' }, `Bearer ${JWT}`, 42, null, true] },
    pin: { password: 1234 },
    note: `use ${OPENAI}`,
    isSecret: false,
    emptyPassword: '',
  };
  const verdict = redactSecrets.observe({ op: 'add', chunks: [{ type: 'environment', content: { kind: 'json', data } }] }, meta, ctx);
  assert.equal(verdict.action, 'transform');
  if (verdict.action !== 'transform' || verdict.operation.op !== 'add') return;
  assert.deepEqual(verdict.operation.chunks[0]?.content, {
    kind: 'json',
    data: {
      user: 'ada',
      password: '[REDACTED:password]',
      config: { api_key: '[REDACTED:api_key]', maxTokens: 4096, tokens: 12, nested: [{ token: '[REDACTED:token]' }, 'Bearer [REDACTED:bearer_token]', 42, null, true] },
      pin: { password: '[REDACTED:password]' },
      note: 'use [REDACTED:openai_key]',
      isSecret: false,
      emptyPassword: '',
    },
  });
  assert.equal(verdict.note, 'redacted 6 secret(s)');
  assert.equal(data.password, 'hunter2', 'the original operation is not mutated');
});

test('update, replace and batch_replace are redacted too; other operations and clean content are allowed as they are', () => {
  const secret: ChunkContent = { kind: 'text', text: `key ${AWS}` };
  const clean: ChunkContent = { kind: 'text', text: 'nothing to see' };
  const ops: Operation[] = [
    { op: 'update', chunkId: 'chunk_1', patch: { content: secret, priority: 5 } },
    { op: 'replace', chunkId: 'chunk_1', chunk: { type: 'thinking', content: secret } },
    { op: 'batch_replace', chunkIds: ['chunk_1', 'chunk_2'], chunk: { type: 'compacted', content: secret } },
    {
      op: 'add',
      chunks: [
        { type: 'user', content: clean },
        { type: 'environment', content: { kind: 'image', url: 'https://x.test/a.png?api_key=abc123def' } },
      ],
    },
  ];
  for (const op of ops) {
    const verdict = redactSecrets.observe(op, meta, ctx);
    assert.equal(verdict.action, 'transform', op.op);
    assert.match(JSON.stringify(verdict.action === 'transform' ? verdict.operation : null), /\[REDACTED:(aws_access_key|api_key)\]/);
    assert.doesNotMatch(JSON.stringify(verdict.action === 'transform' ? verdict.operation : null), /AKIAIOSFODNN7EXAMPLE|abc123def/);
  }
  const update = redactSecrets.observe(ops[0] as Operation, meta, ctx);
  assert.deepEqual(update.action === 'transform' ? update.operation : null, {
    op: 'update',
    chunkId: 'chunk_1',
    patch: { content: { kind: 'text', text: 'key [REDACTED:aws_access_key]' }, priority: 5 },
  });

  for (const op of [
    addText('hello'),
    { op: 'update', chunkId: 'chunk_1', patch: { priority: 1 } },
    { op: 'delete', chunkIds: ['chunk_1'] },
    { op: 'reorder', chunkIds: ['chunk_2', 'chunk_1'] },
    { op: 'rollback', toStateId: 'state_1' },
    { op: 'add', chunks: [{ type: 'compacted', content: { kind: 'chunks', chunkIds: ['chunk_1'] } }] },
  ] satisfies Operation[]) {
    assert.deepEqual(redactSecrets.observe(op, meta, ctx), { action: 'allow' }, op.op);
  }
});

test('through runObservers, redaction reaches the operation that is applied and notes how many secrets it removed', () => {
  const out = runObservers([redactSecrets], addText(`OPENAI_API_KEY=${OPENAI} and password: hunter2`), meta, ctx);
  assert.ok(out.ok);
  assert.deepEqual(out.operation, addText('OPENAI_API_KEY=[REDACTED:openai_key] and password: [REDACTED:password]'));
  assert.deepEqual(out.notes, ['redact-secrets: redacted 2 secret(s)']);
});
