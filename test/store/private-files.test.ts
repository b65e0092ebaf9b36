/**
 * Threadline's files under DATA_DIR are its user's alone: every embedded store (memory threads,
 * long-term memory, notes, usage, blobs — MCP media among them — API keys) make files 0600 and directories
 * 0700 — under a umask of 0, so the modes are the code's, not the environment's.
 */
import assert from 'node:assert/strict';
import { readdirSync, statSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { FileApiKeyStore } from '../../src/store/keys/key-store';
import { generateKey } from '../../src/auth/keys';
import { loadConfig } from '../../src/config';
import { createBlobStore } from '../../src/store/blobs/blob-store';
import { FileKeyValueStore } from '../../src/store/kv';
import { openLongTerm } from '../../src/store/longterm/open-longterm';
import { openMemory } from '../../src/store/open-memory';
import { createUsageStore } from '../../src/store/usage/usage-store';

/** Every file and directory under `root` (itself excluded) with its permission bits. */
function modesUnder(root: string): { file: string; dir: boolean; mode: number }[] {
  return readdirSync(root, { recursive: true, encoding: 'utf8' }).map((name) => {
    const stat = statSync(path.join(root, name));
    return { file: name, dir: stat.isDirectory(), mode: stat.mode & 0o777 };
  });
}

test('every store under DATA_DIR makes its files 0600 and its directories 0700, whatever the umask', async () => {
  const parent = await mkdtemp(path.join(os.tmpdir(), 'threadline-modes-'));
  const dataDir = path.join(parent, 'data');
  const config = loadConfig({ DATA_DIR: dataDir, MEMORY_STORE: 'file', MEMORY_EXTRACTION: 'off' });
  const umask = process.umask(0);
  try {
    const memory = await openMemory(config);
    await memory.memory.createThread({ userId: 'ivy', chunks: [{ type: 'user', content: { kind: 'text', text: 'my address' } }], meta: { origin: 'user', reason: 'test', trigger: 'test' } });
    await memory.close();
    const longterm = await openLongTerm(config);
    await longterm.longterm.importConversations('ivy', [{ messages: [{ role: 'user', text: 'an imported message' }] }], { origin: 'person', reason: 'test' }, () => 'sess-ivy');
    await longterm.close();
    await new FileKeyValueStore(path.join(dataDir, 'notes')).put('notes:ivy', 'pin', 'a note');
    const usage = createUsageStore(config);
    await usage.setup();
    await usage.record({ userId: 'ivy', runId: null, sessionId: null, source: 'test', model: 'm', at: new Date().toISOString(), promptTokens: 1, completionTokens: 1, cachedTokens: 0, calls: 1 });
    await usage.end();
    const blobs = createBlobStore(config);
    await blobs.put('a'.repeat(64), new TextEncoder().encode('a blob'));
    await blobs.end();
    const keys = new FileApiKeyStore(path.join(dataDir, 'auth', 'keys'));
    await keys.setup();
    await keys.create(generateKey({ userId: 'ivy' }, new Date()).record);
  } finally {
    process.umask(umask);
  }
  const found = modesUnder(dataDir);
  for (const part of ['memory', 'longterm', 'notes', 'usage', 'blobs', 'auth']) {
    assert.ok(
      found.some((f) => !f.dir && f.file.split(path.sep).includes(part)),
      `no file of ${part} among ${found.map((f) => f.file).join(', ')}`,
    );
  }
  const loose = found.filter((f) => f.mode !== (f.dir ? 0o700 : 0o600)).map((f) => `${f.file} ${f.mode.toString(8)}`);
  assert.deepEqual(loose, []);
  assert.equal(statSync(dataDir).mode & 0o777, 0o700, 'DATA_DIR itself, made by the first store');
});
